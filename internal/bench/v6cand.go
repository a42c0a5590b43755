package bench

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/fibfleet/fibfleet/internal/table"
)

// IPv6 FIB candidates (issue 4: choose the structure by measurement). Both are built
// from the same leaf-pushed multibit trie over the top 64 bits of the address, whose
// levels have the strides of a layout: the first level is a direct array (for
// example 2^16 entries), each further level a node of 2^stride positions. Prefixes
// longer than /64 are left out here (the production FIB sends them to a fallback).
//
//   - Stride: a node is 2^stride u32 entries: an entry is a leaf value or V6Node | the
//     node's offset in 256-entry rows. One read per level.
//   - Compressed (Poptrie-style): a node is one 32-byte group per 64 positions: the
//     child bitmap word, the leaf bitmap word, the offset of the word's first child
//     and the index of its first leaf. A node's children (all of the next level, so
//     all the same size) are consecutive, and so are its leaves: one group read and a
//     popcount per level, and one leaf read at the end. V6Node | a node's offset in
//     groups.

// V6Layouts are the stride layouts measured: a 2^16 first level then bytes, a 2^24
// first level then bytes (DESIGN.md's stride trie), and a 2^16 first level, a 16-bit
// level to /32, then bytes (one level fewer for /33-/48, the bulk of the table).
var V6Layouts = [][]int{{16, 8, 8, 8, 8, 8, 8}, {24, 8, 8, 8, 8, 8}, {16, 16, 8, 8, 8, 8}}

func imageBytes(im V6Image) int { return 4 * (len(im.Dir) + len(im.Nodes) + len(im.Leaves)) }

// v6Value is a route's nexthop value in the benchmarks: one of 200, by origin AS (as
// the IPv4 benchmark's gwFor).
func v6Value(r table.Route) uint32 { return r.OriginAS%200 + 1 }

type v6node struct {
	e     []uint32
	child []*v6node
}

// v6trie is the leaf-pushed trie both candidates are serialized from.
type v6trie struct {
	strides []int // strides[0] is the first level's bits; the sum is 64
	dir     []uint32
	child   []*v6node
	nodes   int
}

func hi64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8])
}

// buildV6Trie inserts routes (value: value(route)) shortest first, so a longer prefix
// always overwrites a shorter one and a new node starts as its parent's entry.
func buildV6Trie(routes []table.Route, value func(table.Route) uint32, strides []int) *v6trie {
	rs := slices.Clone(routes)
	slices.SortStableFunc(rs, func(a, b table.Route) int { return a.Prefix.Bits() - b.Prefix.Bits() })
	d := strides[0]
	t := &v6trie{strides: strides, dir: make([]uint32, 1<<d), child: make([]*v6node, 1<<d)}
	for _, r := range rs {
		l := r.Prefix.Bits()
		if l > 64 || !r.Prefix.Addr().Is6() {
			continue
		}
		v, a := value(r), hi64(r.Prefix.Addr())
		if l <= d {
			first := a >> (64 - d)
			for i := first; i < first+1<<(d-l); i++ {
				t.setDir(i, v)
			}
			continue
		}
		i := a >> (64 - d)
		if t.child[i] == nil {
			t.child[i] = t.newNode(1, t.dir[i])
		}
		n, level, end := t.child[i], 1, d+strides[1]
		for l > end {
			j := (a >> (64 - end)) & (1<<strides[level] - 1)
			if n.child[j] == nil {
				n.child[j] = t.newNode(level+1, n.e[j])
			}
			n, level, end = n.child[j], level+1, end+strides[level+1]
		}
		first := (a >> (64 - end)) & (1<<strides[level] - 1)
		for j := first; j < first+1<<(end-l); j++ {
			n.set(j, v)
		}
	}
	return t
}

func (t *v6trie) newNode(level int, v uint32) *v6node {
	t.nodes++
	n := &v6node{e: make([]uint32, 1<<t.strides[level]), child: make([]*v6node, 1<<t.strides[level])}
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
	h, end := hi64(a), t.strides[0]
	i := h >> (64 - end)
	n, v := t.child[i], t.dir[i]
	for level := 1; n != nil; level++ {
		end += t.strides[level]
		j := (h >> (64 - end)) & (1<<t.strides[level] - 1)
		v, n = n.e[j], n.child[j]
	}
	return v
}

// Stride serializes the trie with every node as 2^stride u32 entries.
func (t *v6trie) Stride() V6Image {
	im := V6Image{Strides: t.strides, Dir: make([]uint32, len(t.dir))}
	var put func(n *v6node) uint32
	put = func(n *v6node) uint32 {
		off := len(im.Nodes)
		im.Nodes = append(im.Nodes, make([]uint32, len(n.e))...)
		for j := range n.e {
			e := n.e[j]
			if c := n.child[j]; c != nil {
				e = V6Node | put(c)
			}
			im.Nodes[off+j] = e
		}
		return uint32(off / 256)
	}
	for i := range t.dir {
		im.Dir[i] = t.dir[i]
		if c := t.child[i]; c != nil {
			im.Dir[i] = V6Node | put(c)
		}
	}
	return im
}

// Compressed serializes the trie Poptrie-style, breadth-first, so that each node's
// children are consecutive (and of one size: all of the next level).
func (t *v6trie) Compressed() V6Image {
	im := V6Image{Strides: t.strides, Dir: make([]uint32, len(t.dir))}
	type item struct {
		n   *v6node
		off uint32 // in groups
	}
	var queue []item
	next := uint32(0) // groups allocated so far
	alloc := func(n *v6node) uint32 {
		off := next
		next += uint32(len(n.e) / 64)
		queue = append(queue, item{n, off})
		return off
	}
	for i := range t.dir {
		im.Dir[i] = t.dir[i]
		if c := t.child[i]; c != nil {
			im.Dir[i] = V6Node | alloc(c)
		}
	}
	for k := 0; k < len(queue); k++ {
		n := queue[k].n
		groups := make([]uint32, 8*len(n.e)/64)
		last, haveLeaf := uint32(0), false
		for w := 0; w < len(n.e)/64; w++ {
			var cvec, lvec uint64
			firstChild, firstLeaf := uint32(0), uint32(len(im.Leaves))
			for b := 0; b < 64; b++ {
				j := 64*w + b
				if c := n.child[j]; c != nil {
					off := alloc(c)
					if cvec == 0 {
						firstChild = off
					}
					cvec |= 1 << b
					continue
				}
				if !haveLeaf || n.e[j] != last {
					lvec |= 1 << b
					im.Leaves = append(im.Leaves, n.e[j])
					last, haveLeaf = n.e[j], true
				}
			}
			g := groups[8*w:]
			g[0], g[1], g[2], g[3] = uint32(cvec), uint32(cvec>>32), uint32(lvec), uint32(lvec>>32)
			g[4], g[5] = firstChild, firstLeaf
		}
		im.Nodes = append(im.Nodes, groups...)
	}
	return im
}

// strideLookup and compressedLookup are what the BPF lookups do, in Go.
func strideLookup(im V6Image, a netip.Addr) uint32 {
	h, end := hi64(a), im.Strides[0]
	e := im.Dir[h>>(64-end)]
	for level := 1; e&V6Node != 0; level++ {
		end += im.Strides[level]
		j := uint32((h >> (64 - end)) & (1<<im.Strides[level] - 1))
		e = im.Nodes[(e&^V6Node)*256+j]
	}
	return e
}

func compressedLookup(im V6Image, a netip.Addr) uint32 {
	h, end := hi64(a), im.Strides[0]
	e := im.Dir[h>>(64-end)]
	for level := 1; e&V6Node != 0; level++ {
		end += im.Strides[level]
		j := uint32((h >> (64 - end)) & (1<<im.Strides[level] - 1))
		g := im.Nodes[((e&^V6Node)+j/64)*8:]
		b := j % 64
		mask := uint64(2)<<b - 1
		cvec, lvec := uint64(g[1])<<32|uint64(g[0]), uint64(g[3])<<32|uint64(g[2])
		if cvec&(1<<b) != 0 {
			size := uint32(1) << im.Strides[level+1] / 64 // the child's groups
			e = V6Node | (g[4] + (uint32(bits.OnesCount64(cvec&mask))-1)*size)
			continue
		}
		// g[5] is the first leaf whose run starts in this word; a position before that
		// start continues the run before it, leaf g[5]-1.
		e = im.Leaves[g[5]+uint32(bits.OnesCount64(lvec&mask))-1]
	}
	return e
}
