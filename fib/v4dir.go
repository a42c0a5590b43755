package fib

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
)

// v4Dir keeps the dataplane's compressed first level (Dir and Nodes: Poptrie's direct
// pointing and leaf bitmaps, see dataplane/bpf/fib4.h) equal to Tbl24.
//
// Why: Tbl24 is 64 MiB, so with the full table a lookup to a random destination
// misses every cache and the TLB. Compressed, the 2026 table takes a 256 KiB Dir (one
// entry per /16) and about 3.5 MiB of nodes, which stay in the caches.
//
// v4Table writes Tbl24 and marks the /16 blocks it touched; commit rebuilds each
// marked block into a new node (or a single value, when its 256 /24s agree), then
// switches the Dir entry with one atomic store, so a lookup sees the whole block old or
// new. An old node's lines are reused only after the grace period. When the pool has
// no room the block's Dir entry sends lookups to Tbl24 (FIB4Tbl24): slower, never wrong.
type v4Dir struct {
	t dataplane.V4Tables
	// dirty lists the blocks touched since the last commit, once each (marked in
	// dirtyBits): a set that a commit walks at its size, not at the largest it
	// ever was as a map's would be.
	dirty     []uint32
	dirtyBits [blocks / 64]uint64

	// free holds freed nodes by size in lines; next is the first never-used line.
	free [maxNodeLines + 1][]uint32
	next uint32
	// retired are the nodes waiting out their grace period, oldest first, from
	// retiredHead on. reclaim moves the head, and moves what is left to the front
	// once the head passes the middle: cut from the front, the slice had no room
	// left to append to and was reallocated again and again (245 MB of a load of
	// four tables' garbage). What is moved is never more than what was reclaimed
	// since the last move: O(1) a node.
	retired     []retiredNode
	retiredHead int
	// nodes, lines and fallback describe what is in use, for Stats.
	nodes, lines, fallback int
}

type retiredNode struct {
	line, size uint32
	at         time.Time
}

const (
	blockLen     = 256 // /24s per block: a /16
	blocks       = 1 << 16
	lineLen      = 16 // u32 per 64-byte line
	nodeHeader   = 9  // leafvec (8 u32) and the per-word counts (1)
	maxNodeLines = (nodeHeader + blockLen + lineLen - 1) / lineLen
)

func newV4Dir(t dataplane.V4Tables) *v4Dir {
	return &v4Dir{t: t}
}

// touch marks the block holding tbl24 slot i for the next commit.
func (d *v4Dir) touch(i uint32) {
	b := i / blockLen
	if d.dirtyBits[b/64]&(1<<(b%64)) == 0 {
		d.dirtyBits[b/64] |= 1 << (b % 64)
		d.dirty = append(d.dirty, b)
	}
}

// commit rebuilds every touched block and reclaims what the grace period released.
func (d *v4Dir) commit(now time.Time, grace time.Duration) {
	d.reclaim(now, grace)
	for _, b := range d.dirty {
		d.rebuild(b, now)
		d.dirtyBits[b/64] &^= 1 << (b % 64)
	}
	d.dirty = d.dirty[:0]
}

func (d *v4Dir) rebuild(b uint32, now time.Time) {
	vals := d.t.Tbl24[b*blockLen : (b+1)*blockLen]
	var vec [4]uint64
	var leaves [blockLen]uint32
	runs := 0
	for i := range vals {
		v := atomic.LoadUint32(&vals[i])
		if i == 0 || v != leaves[runs-1] {
			vec[i/64] |= 1 << (i % 64)
			leaves[runs] = v
			runs++
		}
	}
	e := leaves[0]
	if runs > 1 {
		e = dataplane.FIB4Tbl24
		size := uint32((nodeHeader + runs + lineLen - 1) / lineLen)
		if line, ok := d.alloc(size); ok {
			// The node is unreachable until the Dir store below: plain writes.
			n := d.t.Nodes[line*lineLen : (line+size)*lineLen]
			var counts uint32
			c := 0
			for w, x := range vec {
				n[2*w], n[2*w+1] = uint32(x), uint32(x>>32)
				counts |= uint32(c) << (8 * w)
				c += bits.OnesCount64(x)
			}
			n[8] = counts
			copy(n[nodeHeader:], leaves[:runs])
			e = dataplane.FIB4Node | line
			d.nodes++
			d.lines += int(size)
		}
	}
	old := atomic.LoadUint32(&d.t.Dir[b])
	atomic.StoreUint32(&d.t.Dir[b], e)
	switch {
	case old == dataplane.FIB4Tbl24:
		d.fallback--
	case old&dataplane.FIB4Node != 0:
		line := old &^ dataplane.FIB4Node
		size := d.size(line)
		d.retired = append(d.retired, retiredNode{line: line, size: size, at: now})
		d.nodes--
		d.lines -= int(size)
	}
	if e == dataplane.FIB4Tbl24 {
		d.fallback++
	}
}

// size is the number of lines of the node at line.
func (d *v4Dir) size(line uint32) uint32 {
	runs := 0
	for w := range 4 {
		runs += bits.OnesCount32(d.t.Nodes[line*lineLen+uint32(2*w)]) + bits.OnesCount32(d.t.Nodes[line*lineLen+uint32(2*w+1)])
	}
	return uint32((nodeHeader + runs + lineLen - 1) / lineLen)
}

func (d *v4Dir) alloc(size uint32) (uint32, bool) {
	if free := d.free[size]; len(free) > 0 {
		d.free[size] = free[:len(free)-1]
		return free[len(free)-1], true
	}
	if int(d.next+size)*lineLen > len(d.t.Nodes) {
		return 0, false
	}
	d.next += size
	return d.next - size, true
}

// reclaim frees the retired nodes whose grace period is over. They retire in time
// order, so it stops at the first that is not due: a commit costs O(freed), not
// O(retired) (a full-table load retires tens of thousands a second).
func (d *v4Dir) reclaim(now time.Time, grace time.Duration) {
	k := d.retiredHead
	for ; k < len(d.retired) && now.Sub(d.retired[k].at) >= grace; k++ {
		r := d.retired[k]
		d.free[r.size] = append(d.free[r.size], r.line)
	}
	d.retiredHead = k
	if k > len(d.retired)/2 {
		d.retired = d.retired[:copy(d.retired, d.retired[k:])]
		d.retiredHead = 0
	}
}

// entry is what a lookup finds for tbl24 slot i through the Dir (fib4_tbl24_entry).
func (d *v4Dir) entry(i uint32) uint32 {
	e := atomic.LoadUint32(&d.t.Dir[i/blockLen])
	switch {
	case e == dataplane.FIB4Tbl24:
		return atomic.LoadUint32(&d.t.Tbl24[i])
	case e&dataplane.FIB4Node != 0:
		n := d.t.Nodes[(e&^dataplane.FIB4Node)*lineLen:]
		j := i % blockLen
		w := j / 64
		vec := uint64(n[2*w+1])<<32 | uint64(n[2*w])
		c := 8 + (n[8]>>(8*w))&0xff + uint32(bits.OnesCount64(vec&(uint64(2)<<(j%64)-1)))
		return n[c]
	}
	return e
}

// stats reports the compressed level's size: nodes and 64-byte lines lookups can
// reach, and blocks that fell back to Tbl24.
func (d *v4Dir) stats() (nodes, lines, fallback int) {
	return d.nodes, d.lines, d.fallback
}
