package table

import (
	"log/slog"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestGlobalTableBytesPerPrefix: the global table holds a full table's prefixes
// in a destination each (64 bytes with its bitmap) and a map slot of a key and a
// pointer, beside the paths themselves: about 110 bytes a prefix with the bitmap's
// word and the path list. A slice per map slot and the bitmap behind a pointer cost
// 150 or more.
func TestGlobalTableBytesPerPrefix(t *testing.T) {
	const n = 100000
	pi := &PeerInfo{}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}
	paths := make([]*Path, n)
	for i := range paths {
		a := netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0})
		nlri, _ := bgp.NewIPAddrPrefix(netip.PrefixFrom(a, 24))
		paths[i] = NewPath(bgp.RF_IPv4_UC, pi, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tbl := NewTable(slog.Default(), bgp.RF_IPv4_UC)
	for _, p := range paths {
		tbl.update(p)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPrefix := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(tbl)
	runtime.KeepAlive(paths)
	t.Logf("global table: %.1f bytes per IPv4 prefix beside its path", perPrefix)
	if perPrefix > 125 {
		t.Errorf("the global table holds %.1f bytes per IPv4 prefix beside its path, want at most 125", perPrefix)
	}
	if got := tbl.Info().NumDestination; got != n {
		t.Fatalf("%d destinations, want %d", got, n)
	}
}

// TestGlobalTableObjectsPerPrefix: a prefix with one path is one heap object in
// the global table (its destination, holding its path list and add-path id map
// while they fit) beside the path and the map's slot; the list (an 8-byte object
// the collector scans) and the map's word (two to a 16-byte tiny block) were 1.5
// objects more a prefix, 2.56 in all. A second and a third path move the list
// out, and back to one it stays right.
func TestGlobalTableObjectsPerPrefix(t *testing.T) {
	const n = 100000
	pi := &PeerInfo{}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}
	nlris := make([]bgp.NLRI, n)
	paths := make([]*Path, n)
	for i := range paths {
		a := netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0})
		nlris[i], _ = bgp.NewIPAddrPrefix(netip.PrefixFrom(a, 24))
		paths[i] = NewPath(bgp.RF_IPv4_UC, pi, bgp.PathNLRI{NLRI: nlris[i]}, false, attrs, time.Now(), false)
	}
	objects := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapObjects
	}
	tbl := NewTable(slog.Default(), bgp.RF_IPv4_UC)
	before := objects()
	for _, p := range paths {
		tbl.update(p)
	}
	perPrefix := float64(objects()-before) / n
	runtime.KeepAlive(tbl)
	runtime.KeepAlive(paths)
	t.Logf("global table: %.2f heap objects per IPv4 prefix beside its path", perPrefix)
	if perPrefix > 1.5 {
		t.Errorf("the global table holds %.2f heap objects per IPv4 prefix beside its path, want at most 1.5 (2.56 with the list and the id map apart)", perPrefix)
	}

	// One destination through two and three paths and back to one.
	others := []*PeerInfo{
		{AS: 65002, ID: netip.MustParseAddr("2.2.2.2"), Address: netip.MustParseAddr("10.0.0.2")},
		{AS: 65003, ID: netip.MustParseAddr("3.3.3.3"), Address: netip.MustParseAddr("10.0.0.3")},
	}
	var more []*Path
	for _, o := range others {
		p := NewPath(bgp.RF_IPv4_UC, o, bgp.PathNLRI{NLRI: nlris[7]}, false, attrs, time.Now(), false)
		more = append(more, p)
		tbl.update(p)
	}
	got := tbl.GetDestination(nlris[7]).GetAllKnownPathList()
	if len(got) != 3 {
		t.Fatalf("%d paths for %s after two more, want 3", len(got), nlris[7])
	}
	for _, p := range more {
		tbl.update(p.Clone(true))
	}
	got = tbl.GetDestination(nlris[7]).GetAllKnownPathList()
	if len(got) != 1 || got[0] != paths[7] {
		t.Fatalf("%s lists %v after the two were withdrawn, want its first path alone", nlris[7], got)
	}
}

// TestDestinationsCollidedKeys: destinations whose NLRI share a key are each found,
// replaced, listed and removed on their own, and counted as collisions.
func TestDestinationsCollidedKeys(t *testing.T) {
	s := &destinationShard{mp: map[addrPrefixKey]*destination{}}
	var dests []*destination
	for i := range 3 {
		nlri, _ := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16))
		dests = append(dests, newDestination(nlri, 0))
	}
	const key = addrPrefixKey(42) // all three under one key, as a hash collision puts them
	for i, d := range dests {
		if c := s.put(key, d); c != (i > 0) {
			t.Fatalf("put %s: collision %v, want %v", d.nlri, c, i > 0)
		}
	}
	if c := s.collisions(); c != 2 {
		t.Fatalf("%d collisions, want 2", c)
	}
	for _, d := range dests {
		if got := s.lookup(key, d.nlri); got != d {
			t.Fatalf("lookup %s: %v", d.nlri, got)
		}
	}
	again := newDestination(dests[1].nlri, 0)
	if s.put(key, again) {
		t.Fatalf("a destination put again is a replacement, not a collision")
	}
	if got := s.lookup(key, dests[1].nlri); got != again {
		t.Fatalf("a destination put again was not replaced")
	}
	n := 0
	for range s.all {
		n++
	}
	if n != 3 {
		t.Fatalf("all yields %d destinations, want 3", n)
	}
	// The first removed: a collided one takes its place in mp.
	s.remove(key, dests[0].nlri)
	if s.lookup(key, dests[0].nlri) != nil || s.lookup(key, dests[1].nlri) != again || s.lookup(key, dests[2].nlri) != dests[2] {
		t.Fatalf("after removing the first, lookups wrong")
	}
	s.remove(key, dests[2].nlri)
	s.remove(key, dests[1].nlri)
	if len(s.mp) != 0 || len(s.collided) != 0 {
		t.Fatalf("all removed: %d in mp, %d keys collided, want none", len(s.mp), len(s.collided))
	}
}
