// Copyright (C) 2015 Nippon Telegraph and Telephone Corporation.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or
// implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package table

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// AdjRib is a peer's Adj-RIB-In: every path the peer sent, before import policy,
// rejected ones included. It is an index of the paths, not a table of its own: the
// paths import accepts unchanged are the very objects the global table holds, so a
// path costs one map slot here (about 20 bytes for an IPv4 prefix without add-path)
// rather than a second destination, bitmap, slices and shard slot (about 140 bytes).
// Counts are kept as paths come and go, so Count and Accepted do not walk anything.
type AdjRib struct {
	mu       sync.RWMutex
	rib      map[bgp.Family]*adjFamily
	accepted map[bgp.Family]int
	// out holds the paths UpdateAdjRibOut gives (an Adj-RIB-Out counted for display).
	out    map[bgp.Family][]*Path
	logger *slog.Logger
}

// adjFamily is one family's paths: IPv4 prefixes without a path identifier (the
// bulk of a full table) under a packed integer, every other path under adjKey.
type adjFamily struct {
	v4    map[uint64]*Path
	keyed map[adjKey]*Path
}

// adjKey identifies a path that is not an IPv4 prefix without a path identifier: its
// prefix (address and length) and the peer's path identifier (add-path), or for NLRI
// that are not IP prefixes, what the global table tells destinations apart by.
type adjKey struct {
	addr [16]byte
	bits int16
	id   uint32
	nlri string
}

func newAdjFamily() *adjFamily {
	return &adjFamily{v4: map[uint64]*Path{}, keyed: map[adjKey]*Path{}}
}

func (f *adjFamily) len() int { return len(f.v4) + len(f.keyed) }

// key returns where a path belongs: v4 is true for the packed IPv4 map.
func adjKeyOf(path *Path) (v4 bool, packed uint64, k adjKey) {
	id := path.remoteID
	if n, ok := path.GetNlri().(*bgp.IPAddrPrefix); ok {
		p := n.Prefix
		if p.Addr().Is4() && id == 0 {
			a := p.Addr().As4()
			return true, uint64(binary.BigEndian.Uint32(a[:]))<<8 | uint64(p.Bits()), k
		}
		return false, 0, adjKey{addr: p.Addr().As16(), bits: int16(p.Bits()), id: id}
	}
	return false, 0, adjKey{bits: -1, id: id, nlri: string(addrPrefixOnlySerialize(path.GetNlri()))}
}

func (f *adjFamily) get(path *Path) *Path {
	if v4, packed, k := adjKeyOf(path); v4 {
		return f.v4[packed]
	} else {
		return f.keyed[k]
	}
}

func (f *adjFamily) set(path *Path) {
	if v4, packed, k := adjKeyOf(path); v4 {
		f.v4[packed] = path
	} else {
		f.keyed[k] = path
	}
}

func (f *adjFamily) del(path *Path) {
	if v4, packed, k := adjKeyOf(path); v4 {
		delete(f.v4, packed)
	} else {
		delete(f.keyed, k)
	}
}

// each calls fn for every path until it returns true; fn may replace the path it is
// given (set), nothing else.
func (f *adjFamily) each(fn func(*Path) bool) {
	for _, p := range f.v4 {
		if fn(p) {
			return
		}
	}
	for _, p := range f.keyed {
		if fn(p) {
			return
		}
	}
}

func NewAdjRib(logger *slog.Logger, rfList []bgp.Family) *AdjRib {
	m := make(map[bgp.Family]*adjFamily)
	for _, f := range rfList {
		m[f] = newAdjFamily()
	}
	return &AdjRib{
		rib:      m,
		accepted: make(map[bgp.Family]int),
		out:      make(map[bgp.Family][]*Path),
		logger:   logger,
	}
}

func (adj *AdjRib) Update(pathList []*Path) {
	adj.mu.Lock()
	defer adj.mu.Unlock()
	adj.update(pathList)
}

func (adj *AdjRib) update(pathList []*Path) {
	for _, path := range pathList {
		if path == nil || path.IsEOR() {
			continue
		}
		rf := path.GetFamily()
		f := adj.rib[rf]
		if f == nil {
			continue
		}
		old := f.get(path)
		if path.IsWithdraw {
			if old != nil {
				f.del(path)
				if !old.IsRejected() {
					adj.accepted[rf]--
				}
			}
			path.SetDropped(true)
			continue
		}
		if old != nil {
			if old.IsRejected() && !path.IsRejected() {
				adj.accepted[rf]++
			} else if !old.IsRejected() && path.IsRejected() {
				adj.accepted[rf]--
			}
			if old.Equal(path) {
				path.setTimestamp(old.GetTimestamp())
			}
		} else if !path.IsRejected() {
			adj.accepted[rf]++
		}
		f.set(path)
	}
}

/*
The provided pathList is expected to be the real candidate routes after policy evaluation.

	For routes that are filtered by policy, there could be a mismatch between display
	and actual rib sent to the peer (if softreset out was not run).
	Only used to display adj-out because we do not maintain a separate adj-out table
*/
func (adj *AdjRib) UpdateAdjRibOut(pathList []*Path) {
	adj.mu.Lock()
	defer adj.mu.Unlock()
	for _, path := range pathList {
		if path == nil || path.IsEOR() {
			continue
		}
		rf := path.GetFamily()
		if adj.rib[rf] == nil {
			continue
		}
		adj.out[rf] = append(adj.out[rf], path)
	}
}

// walk calls fn for the paths of the families, under the lock for reading.
func (adj *AdjRib) walk(families []bgp.Family, fn func(*Path) bool) {
	adj.mu.RLock()
	defer adj.mu.RUnlock()
	for _, rf := range families {
		if f, ok := adj.rib[rf]; ok {
			stop := false
			f.each(func(p *Path) bool {
				stop = fn(p)
				return stop
			})
			if stop {
				return
			}
		}
	}
}

func (adj *AdjRib) PathList(rfList []bgp.Family, accepted bool) []*Path {
	pathList := make([]*Path, 0, adj.Count(rfList))
	adj.walk(rfList, func(p *Path) bool {
		if !accepted || !p.IsRejected() {
			pathList = append(pathList, p)
		}
		return false
	})
	return pathList
}

// PathListWithin is PathList limited to the paths whose NLRI take says to keep,
// walking the paths once.
func (adj *AdjRib) PathListWithin(rfList []bgp.Family, accepted bool, take func(bgp.NLRI) bool) []*Path {
	var pathList []*Path
	adj.walk(rfList, func(p *Path) bool {
		if (!accepted || !p.IsRejected()) && take(p.GetNlri()) {
			pathList = append(pathList, p)
		}
		return false
	})
	return pathList
}

func (adj *AdjRib) Count(rfList []bgp.Family) int {
	adj.mu.RLock()
	defer adj.mu.RUnlock()
	count := 0
	for _, rf := range rfList {
		if f, ok := adj.rib[rf]; ok {
			count += f.len() + len(adj.out[rf])
		}
	}
	return count
}

func (adj *AdjRib) Accepted(rfList []bgp.Family) int {
	adj.mu.RLock()
	defer adj.mu.RUnlock()
	count := 0
	for _, rf := range rfList {
		if n, ok := adj.accepted[rf]; ok {
			count += n
		}
	}
	return count
}

func (adj *AdjRib) Drop(rfList []bgp.Family) []*Path {
	adj.mu.Lock()
	defer adj.mu.Unlock()
	n := 0
	for _, rf := range rfList {
		if f, ok := adj.rib[rf]; ok {
			n += f.len()
		}
	}
	l := make([]*Path, 0, n)
	for _, rf := range rfList {
		f, ok := adj.rib[rf]
		if !ok {
			continue
		}
		f.each(func(p *Path) bool {
			w := p.Clone(true)
			w.SetDropped(true)
			l = append(l, w)
			return false
		})
		adj.rib[rf] = newAdjFamily()
		adj.accepted[rf] = 0
		delete(adj.out, rf)
	}
	return l
}

func (adj *AdjRib) DropStale(rfList []bgp.Family) []*Path {
	var pathList []*Path
	adj.walk(rfList, func(p *Path) bool {
		if p.IsStale() {
			w := p.Clone(true)
			w.SetDropped(true)
			pathList = append(pathList, w)
		}
		return false
	})
	adj.Update(pathList)
	return pathList
}

// replaceEach calls fn for every path of the families under the lock for writing;
// fn returns the path to keep in its place.
func (adj *AdjRib) replaceEach(families []bgp.Family, fn func(*Path) *Path) {
	for _, rf := range families {
		f, ok := adj.rib[rf]
		if !ok {
			continue
		}
		// Replacing a value under its key while ranging over a map is allowed.
		for k, p := range f.v4 {
			f.v4[k] = fn(p)
		}
		for k, p := range f.keyed {
			f.keyed[k] = fn(p)
		}
	}
}

func (adj *AdjRib) StaleAll(rfList []bgp.Family) []*Path {
	adj.mu.Lock()
	defer adj.mu.Unlock()
	pathList := make([]*Path, 0)
	adj.replaceEach(rfList, func(p *Path) *Path {
		n := p.Clone(false)
		n.MarkStale(true)
		n.SetRejected(p.IsRejected())
		if !n.IsRejected() {
			pathList = append(pathList, n)
		}
		return n
	})
	return pathList
}

func (adj *AdjRib) MarkLLGRStaleOrDrop(rfList []bgp.Family) []*Path {
	adj.mu.Lock()
	defer adj.mu.Unlock()
	pathList := make([]*Path, 0)
	adj.replaceEach(rfList, func(p *Path) *Path {
		if p.HasNoLLGR() {
			n := p.Clone(true)
			n.SetDropped(true)
			pathList = append(pathList, n)
			return p
		}
		n := p.Clone(false)
		n.SetRejected(p.IsRejected())
		n.SetCommunities([]uint32{uint32(bgp.COMMUNITY_LLGR_STALE)}, false)
		if p.IsRejected() {
			return n
		}
		pathList = append(pathList, n)
		return p
	})
	adj.update(pathList)
	return pathList
}

// Select returns a table of the family's paths (those the lookups can select, when
// given) for listing, as the table of an Adj-RIB would hold them.
func (adj *AdjRib) Select(family bgp.Family, accepted bool, option ...TableSelectOption) (*Table, error) {
	var lookups []*apiutil.LookupPrefix
	for _, o := range option {
		lookups = append(lookups, o.LookupPrefixes...)
	}
	t := adj.table(family, candidates(lookups))
	option = append(option, TableSelectOption{adj: true})
	return t.Select(option...)
}

// table builds a table of the family's paths that keep says to, as listing needs it.
func (adj *AdjRib) table(family bgp.Family, keep func(bgp.NLRI) bool) *Table {
	t := NewTable(adj.logger, family)
	add := func(p *Path) bool {
		if keep != nil && !keep(p.GetNlri()) {
			return false
		}
		nlri := p.GetNlri()
		shard := t.destinations.getShard(nlri)
		shard.mu.Lock()
		d := t.getOrCreateDest(shard, nlri, 0)
		d.knownPathList = append(d.knownPathList, p)
		shard.mu.Unlock()
		return false
	}
	adj.walk([]bgp.Family{family}, add)
	adj.mu.RLock()
	out := adj.out[family]
	adj.mu.RUnlock()
	for _, p := range out {
		add(p)
	}
	return t
}

// candidates says which IP prefixes a table selection with the lookups can return,
// so that a lookup of a few prefixes does not build a table of all of them. It keeps
// everything where it cannot tell (no lookups, other NLRI, a lookup that does not
// parse: Table.Select reports that).
func candidates(lookups []*apiutil.LookupPrefix) func(bgp.NLRI) bool {
	if len(lookups) == 0 {
		return nil
	}
	type want struct {
		p      netip.Prefix
		addr   bool
		option apiutil.LookupOption
	}
	var ws []want
	for _, l := range lookups {
		if a, err := netip.ParseAddr(l.Prefix); err == nil {
			ws = append(ws, want{p: netip.PrefixFrom(a, a.BitLen()), addr: true, option: l.LookupOption})
			continue
		}
		p, err := netip.ParsePrefix(l.Prefix)
		if err != nil || l.RD != "" {
			return nil
		}
		ws = append(ws, want{p: p.Masked(), option: l.LookupOption})
	}
	return func(nlri bgp.NLRI) bool {
		n, ok := nlri.(*bgp.IPAddrPrefix)
		if !ok {
			return true
		}
		got := n.Prefix.Masked()
		for _, w := range ws {
			if got.Addr().Is4() != w.p.Addr().Is4() {
				continue
			}
			var match bool
			switch {
			case w.option == apiutil.LOOKUP_LONGER:
				match = got.Bits() >= w.p.Bits() && w.p.Contains(got.Addr())
			case w.option == apiutil.LOOKUP_SHORTER || w.addr:
				match = got.Bits() <= w.p.Bits() && got.Contains(w.p.Addr())
			default:
				match = got == w.p
			}
			if match {
				return true
			}
		}
		return false
	}
}

func (adj *AdjRib) TableInfo(family bgp.Family) (*TableInfo, error) {
	adj.mu.RLock()
	_, ok := adj.rib[family]
	adj.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%s unsupported", family)
	}
	c := adj.Count([]bgp.Family{family})
	a := adj.Accepted([]bgp.Family{family})
	return &TableInfo{
		NumDestination: c,
		NumPath:        c,
		NumAccepted:    a,
	}, nil
}
