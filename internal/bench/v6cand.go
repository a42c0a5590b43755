package bench

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
)

// IPv6 FIB candidates (issue 4: choose the structure by measurement). Both are built
// from the same leaf-pushed multibit trie over the top 64 bits of the address: a
// first level of 2^16 or 2^24 entries, then 8-bit levels (to /64). Prefixes longer than
// /64 are left out here (the production FIB sends them to a fallback).
//
//   - Stride: every node is 256 u32 entries (1 KiB): an entry is a leaf value or
//     V6Node | node. One read per level.
//   - Compressed (Poptrie-style): a node is 2 lines (128 bytes): a 256-bit child vector,
//     a 256-bit leaf vector, per-word counts of both, the index of its first child (its
//     children are consecutive) and of its first leaf (its leaves are consecutive).
//     Two adjacent lines and a popcount per level, and one leaf read at the end.

// V6Node marks an entry that points at a node (V6_NODE in fib6_probe.c).
const V6Node = dataplane.V6Node

// V6Image is a built candidate, ready to copy into the probe's maps.
type V6Image = dataplane.V6Image

func imageBytes(im V6Image) int { return 4 * (len(im.Dir) + len(im.Nodes) + len(im.Leaves)) }

// v6Value is a route's nexthop value in the benchmarks: one of 200, by origin AS (as
// the IPv4 benchmark's gwFor).
func v6Value(r table.Route) uint32 { return r.OriginAS%200 + 1 }

type v6node struct {
	e     [256]uint32
	child [256]*v6node
}

// v6trie is the leaf-pushed trie both candidates are serialized from: a first level
// of 2^bits entries (the top bits of the address), then 8-bit levels.
type v6trie struct {
	bits  int
	dir   []uint32
	child []*v6node
	nodes int
}

func hi64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8])
}

// buildV6Trie inserts routes (value: value(route)) shortest first, so a longer prefix
// always overwrites a shorter one and a new node starts as its parent's entry.
func buildV6Trie(routes []table.Route, value func(table.Route) uint32, dirBits int) *v6trie {
	rs := slices.Clone(routes)
	slices.SortStableFunc(rs, func(a, b table.Route) int { return a.Prefix.Bits() - b.Prefix.Bits() })
	t := &v6trie{bits: dirBits, dir: make([]uint32, 1<<dirBits), child: make([]*v6node, 1<<dirBits)}
	for _, r := range rs {
		l := r.Prefix.Bits()
		if l > 64 || !r.Prefix.Addr().Is6() {
			continue
		}
		v, a := value(r), hi64(r.Prefix.Addr())
		if l <= dirBits {
			first := a >> (64 - dirBits)
			for i := first; i < first+1<<(dirBits-l); i++ {
				t.setDir(i, v)
			}
			continue
		}
		i := a >> (64 - dirBits)
		if t.child[i] == nil {
			t.child[i] = t.newNode(t.dir[i])
		}
		n, end := t.child[i], dirBits+8
		for l > end {
			j := (a >> (64 - end)) & 0xff
			if n.child[j] == nil {
				n.child[j] = t.newNode(n.e[j])
			}
			n, end = n.child[j], end+8
		}
		first := (a >> (64 - end)) & 0xff
		for j := first; j < first+1<<(end-l); j++ {
			n.set(j, v)
		}
	}
	return t
}

func (t *v6trie) newNode(v uint32) *v6node {
	t.nodes++
	n := &v6node{}
	for i := range n.e {
		n.e[i] = v
	}
	return n
}

// setDir and set write a leaf value, pushing it into the subtree below (whose entries
// are all shorter than the new prefix, since routes go in shortest first).
func (t *v6trie) setDir(i uint64, v uint32) {
	t.dir[i] = v
	if c := t.child[i]; c != nil {
		c.fill(v)
	}
}

func (n *v6node) set(j uint64, v uint32) {
	n.e[j] = v
	if c := n.child[j]; c != nil {
		c.fill(v)
	}
}

func (n *v6node) fill(v uint32) {
	for j := range n.e {
		n.set(uint64(j), v)
	}
}

// lookup is the reference walk of the trie itself.
func (t *v6trie) lookup(a netip.Addr) uint32 {
	h := hi64(a)
	i := h >> (64 - t.bits)
	n, v, shift := t.child[i], t.dir[i], 64-t.bits-8
	for n != nil {
		j := (h >> shift) & 0xff
		v, n, shift = n.e[j], n.child[j], shift-8
	}
	return v
}

// Stride serializes the trie as 1 KiB nodes.
func (t *v6trie) Stride() V6Image {
	im := V6Image{Dir: make([]uint32, len(t.dir))}
	var put func(n *v6node) uint32
	put = func(n *v6node) uint32 {
		idx := uint32(len(im.Nodes) / 256)
		im.Nodes = append(im.Nodes, make([]uint32, 256)...)
		for j := range n.e {
			e := n.e[j]
			if c := n.child[j]; c != nil {
				e = V6Node | put(c)
			}
			im.Nodes[int(idx)*256+j] = e
		}
		return idx
	}
	for i := range t.dir {
		im.Dir[i] = t.dir[i]
		if c := t.child[i]; c != nil {
			im.Dir[i] = V6Node | put(c)
		}
	}
	return im
}

// Compressed serializes the trie Poptrie-style: nodes breadth-first, so that each
// node's children are consecutive, and each node's leaves consecutive. A node is 32
// u32 (two 64-byte lines); for each 64-bit word w of its 256 positions, u32 8w.. hold
// the child vector word (2 u32), the leaf vector word (2 u32), the index of the first
// child and of the first leaf of that word: a lookup reads one 32-byte group, never
// across a line.
func (t *v6trie) Compressed() V6Image {
	im := V6Image{Dir: make([]uint32, len(t.dir))}
	var queue []*v6node
	for i := range t.dir {
		im.Dir[i] = t.dir[i]
		if c := t.child[i]; c != nil {
			im.Dir[i] = V6Node | uint32(len(queue))
			queue = append(queue, c)
		}
	}
	for k := 0; k < len(queue); k++ {
		n := queue[k]
		var cvec, lvec [4]uint64
		rec := make([]uint32, 32)
		child, leaf := uint32(len(queue)), uint32(len(im.Leaves))
		last, haveLeaf := uint32(0), false
		for j := range n.e {
			if c := n.child[j]; c != nil {
				cvec[j/64] |= 1 << (j % 64)
				queue = append(queue, c)
				continue
			}
			if !haveLeaf || n.e[j] != last {
				lvec[j/64] |= 1 << (j % 64)
				im.Leaves = append(im.Leaves, n.e[j])
				last, haveLeaf = n.e[j], true
			}
		}
		for w := range 4 {
			g := rec[8*w:]
			g[0], g[1], g[2], g[3] = uint32(cvec[w]), uint32(cvec[w]>>32), uint32(lvec[w]), uint32(lvec[w]>>32)
			g[4], g[5] = child, leaf
			child += uint32(bits.OnesCount64(cvec[w]))
			leaf += uint32(bits.OnesCount64(lvec[w]))
		}
		im.Nodes = append(im.Nodes, rec...)
	}
	return im
}

func dirBits(im V6Image) int { return bits.Len(uint(len(im.Dir))) - 1 }

// strideLookup and compressedLookup are what the BPF lookups do, in Go.
func strideLookup(im V6Image, a netip.Addr) uint32 {
	h, b := hi64(a), dirBits(im)
	e := im.Dir[h>>(64-b)]
	for shift := 64 - b - 8; e&V6Node != 0 && shift >= 0; shift -= 8 {
		e = im.Nodes[(e&^V6Node)*256+uint32((h>>shift)&0xff)]
	}
	return e
}

func compressedLookup(im V6Image, a netip.Addr) uint32 {
	h, b := hi64(a), dirBits(im)
	e := im.Dir[h>>(64-b)]
	for shift := 64 - b - 8; e&V6Node != 0 && shift >= 0; shift -= 8 {
		j := uint32((h >> shift) & 0xff)
		g := im.Nodes[(e&^V6Node)*32+8*(j/64):]
		mask := uint64(2)<<(j%64) - 1
		cvec, lvec := uint64(g[1])<<32|uint64(g[0]), uint64(g[3])<<32|uint64(g[2])
		if cvec&(1<<(j%64)) != 0 {
			e = V6Node | (g[4] + uint32(bits.OnesCount64(cvec&mask)) - 1)
			continue
		}
		e = im.Leaves[g[5]+uint32(bits.OnesCount64(lvec&mask))-1]
	}
	return e
}
