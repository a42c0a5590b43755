package fib

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
)

// errGroupsFull says a route needs a second-level group and none is free.
var errGroupsFull = errors.New("fib: no free IPv4 second-level group (raise fib.groups_v4); the /24's packets pass to the kernel")

// v4Table compiles IPv4 routes into the dataplane's DIR-24-8 tables, as DPDK's rte_lpm
// does: each entry remembers the length of the route that wrote it (depth), so adding
// a route overwrites only entries of shorter routes, and removing one restores the
// covering route only where the removed one was in force.
//
// Every write to the shared tables is one atomic 32-bit store, and ordered so that a
// concurrent lookup sees either the old or the new route of its address: a group is
// filled before the /24 entry points at it, and a group that no /24 points at any more
// is reused only after a grace period, long after any lookup that could still hold it.
type v4Table struct {
	t dataplane.V4Tables
	// depth24 holds, per /24, length+1 of the longest route of length <= 24 covering
	// it (0: none); that route's nexthop (nh24) is tbl24's own entry, unless the /24
	// has a group or is in kernel mode: then it is in under. Not a []uint32 of 2^24
	// beside tbl24: 64 MiB of the node's heap for what tbl24 already holds but for
	// the few /24s with longer routes.
	depth24 []uint8
	under   map[uint32]uint32
	// depth8 holds length+1 of the route behind each tbl8 entry.
	depth8 []uint8
	free   []uint32
	retire []retired
	next   uint32
	// kernel holds the /24s whose longer routes got no group: their tbl24 entry is
	// FIB4Kernel until a group frees up.
	kernel map[uint32]bool
	now    func() time.Time
	grace  time.Duration
	// dir is the compressed copy of Tbl24 that lookups read; commit brings it up to date.
	dir *v4Dir
}

type retired struct {
	group uint32
	at    time.Time
}

// groupGrace is how long a group stays unused after the last pointer to it is gone.
// XDP programs run for microseconds under RCU; a second is far beyond any lookup.
const groupGrace = time.Second

func newV4Table(t dataplane.V4Tables) *v4Table {
	return &v4Table{
		t:       t,
		depth24: make([]uint8, len(t.Tbl24)),
		under:   map[uint32]uint32{},
		depth8:  make([]uint8, len(t.Tbl8)),
		kernel:  map[uint32]bool{},
		now:     time.Now,
		grace:   groupGrace,
		dir:     newV4Dir(t),
	}
}

// set24 writes tbl24 slot i; lookups see it once commit rebuilds the slot's block.
func (v *v4Table) set24(i, e uint32) {
	store(&v.t.Tbl24[i], e)
	v.dir.touch(i)
}

// commit publishes every Tbl24 change since the last commit to the compressed level
// lookups read, then starts the grace period of the groups those changes let go: a
// group is unreachable only once the Dir no longer leads to a tbl24 value naming it.
func (v *v4Table) commit() {
	now := v.now()
	v.dir.commit(now, v.grace)
	// Unstamped groups are the newest, at the end.
	for i := len(v.retire) - 1; i >= 0 && v.retire[i].at.IsZero(); i-- {
		v.retire[i].at = now
	}
}

func addr32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func store(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// nh24 is the nexthop of the longest route of length <= 24 covering slot i (0: none).
func (v *v4Table) nh24(i uint32) uint32 {
	if nh, ok := v.under[i]; ok {
		return nh
	}
	if v.depth24[i] == 0 {
		return 0 // whatever tbl24 holds: a slot without a route has no nexthop
	}
	return atomic.LoadUint32(&v.t.Tbl24[i])
}

// setNH24 makes nh slot i's nexthop of length <= 24: in tbl24 itself unless the
// slot has a group or is in kernel mode (the caller fills the group).
func (v *v4Table) setNH24(i, nh uint32) {
	if _, ok := v.under[i]; ok {
		v.under[i] = nh
		return
	}
	v.set24(i, nh)
}

// hide keeps slot i's nexthop aside before tbl24 points at a group or kernel mode.
func (v *v4Table) hide(i uint32) {
	if _, ok := v.under[i]; !ok {
		v.under[i] = v.nh24(i)
	}
}

// publish24 writes slot i's own nexthop back into tbl24 once it has no group and
// is out of kernel mode.
func (v *v4Table) publish24(i uint32) {
	nh := v.nh24(i)
	delete(v.under, i)
	v.set24(i, nh)
}

func (v *v4Table) group(i uint32) (uint32, bool) {
	e := atomic.LoadUint32(&v.t.Tbl24[i])
	if e&dataplane.FIB4Group == 0 {
		return 0, false
	}
	return e &^ dataplane.FIB4Group, true
}

// add installs p -> nh. It fails only when p is longer than /24 and needs a group the
// pool does not have: the /24 then passes to the kernel until one frees up.
func (v *v4Table) add(p netip.Prefix, nh uint32) error {
	l, a := p.Bits(), addr32(p.Addr())
	d := uint8(l + 1)
	defer v.bump(p)
	if l <= 24 {
		first, n := a>>8, uint32(1)<<(24-l)
		for i := first; i < first+n; i++ {
			if v.depth24[i] > d {
				continue // a longer route owns this /24 (and its group's entries)
			}
			v.depth24[i] = d
			v.setNH24(i, nh)
			if g, ok := v.group(i); ok {
				v.fill(g, 0, 256, nh, d, func(old uint8) bool { return old <= d })
			}
		}
		return nil
	}
	i := a >> 8
	if v.kernel[i] {
		return errGroupsFull
	}
	lo, n := a&0xff, uint32(1)<<(32-l)
	if g, ok := v.group(i); ok {
		v.fill(g, lo, lo+n, nh, d, func(old uint8) bool { return old <= d })
		return nil
	}
	g, ok := v.alloc()
	if !ok {
		v.hide(i)
		v.kernel[i] = true
		v.set24(i, dataplane.FIB4Kernel)
		return errGroupsFull
	}
	// Fill the new group with the /24's route, then the new one, then point at it.
	v.fill(g, 0, 256, v.nh24(i), v.depth24[i], func(uint8) bool { return true })
	v.fill(g, lo, lo+n, nh, d, func(uint8) bool { return true })
	v.hide(i)
	v.set24(i, dataplane.FIB4Group|g)
	return nil
}

// fill sets group entries [lo, hi) to (nh, depth) where keep says the old depth yields.
func (v *v4Table) fill(g, lo, hi, nh uint32, depth uint8, yields func(old uint8) bool) {
	base := g * 256
	for j := base + lo; j < base+hi; j++ {
		if yields(v.depth8[j]) {
			v.depth8[j] = depth
			store(&v.t.Tbl8[j], nh)
		}
	}
}

// del removes p, whose covering route (the longest strictly shorter one) is repl with
// nexthop replNH, or none when !replOK.
func (v *v4Table) del(p netip.Prefix, repl netip.Prefix, replNH uint32, replOK bool) {
	l, a := p.Bits(), addr32(p.Addr())
	d := uint8(l + 1)
	var rd uint8
	if replOK {
		rd = uint8(repl.Bits() + 1)
	} else {
		replNH = 0
	}
	defer v.bump(p)
	owned := func(old uint8) bool { return old == d }
	if l <= 24 {
		first, n := a>>8, uint32(1)<<(24-l)
		for i := first; i < first+n; i++ {
			if v.depth24[i] == d {
				v.depth24[i] = rd
				v.setNH24(i, replNH)
			}
			if g, ok := v.group(i); ok {
				v.fill(g, 0, 256, replNH, rd, owned)
			}
		}
		return
	}
	i := a >> 8
	g, ok := v.group(i)
	if !ok {
		return // in kernel mode (or never installed): the caller settles the /24
	}
	lo, n := a&0xff, uint32(1)<<(32-l)
	v.fill(g, lo, lo+n, replNH, rd, owned)
	// Collapse the group once no route longer than /24 is left in it.
	for j := g * 256; j < g*256+256; j++ {
		if v.depth8[j] > 25 {
			return
		}
	}
	v.publish24(i)
	v.retire = append(v.retire, retired{group: g}) // the grace period starts at commit
}

// leaveKernel takes a /24 out of kernel mode once no route longer than /24 is left in it.
func (v *v4Table) leaveKernel(i uint32) {
	delete(v.kernel, i)
	v.publish24(i)
}

// longRoute is a route longer than /24, for rebuilding a /24's group.
type longRoute struct {
	p  netip.Prefix
	nh uint32
}

// rebuild gives a /24 in kernel mode a group holding its longer routes (shortest
// first), built completely before the /24 points at it. It reports false, changing
// nothing, when no group is free.
func (v *v4Table) rebuild(i uint32, routes []longRoute) bool {
	g, ok := v.alloc()
	if !ok {
		return false
	}
	v.fill(g, 0, 256, v.nh24(i), v.depth24[i], func(uint8) bool { return true })
	for _, r := range routes {
		d, lo := uint8(r.p.Bits()+1), addr32(r.p.Addr())&0xff
		v.fill(g, lo, lo+uint32(1)<<(32-r.p.Bits()), r.nh, d, func(old uint8) bool { return old <= d })
	}
	delete(v.kernel, i)
	v.set24(i, dataplane.FIB4Group|g)
	v.bump(netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0}), 24))
	return true
}

func (v *v4Table) alloc() (uint32, bool) {
	v.reclaim()
	if n := len(v.free); n > 0 {
		g := v.free[n-1]
		v.free = v.free[:n-1]
		return g, true
	}
	if int(v.next) < v.t.Groups() {
		v.next++
		return v.next - 1, true
	}
	return 0, false
}

// reclaim frees retired groups whose grace period is over. Groups retire in time
// order (those not yet stamped by commit last), so it stops at the first not due.
func (v *v4Table) reclaim() {
	now, k := v.now(), 0
	for ; k < len(v.retire) && !v.retire[k].at.IsZero() && now.Sub(v.retire[k].at) >= v.grace; k++ {
		v.free = append(v.free, v.retire[k].group)
	}
	v.retire = v.retire[k:]
}

// freeGroups reports how many groups could be allocated after reclaiming.
func (v *v4Table) freeGroups() int {
	v.reclaim()
	return len(v.free) + v.t.Groups() - int(v.next)
}

// bump advances the generation of every /16 region p overlaps.
func (v *v4Table) bump(p netip.Prefix) {
	a := addr32(p.Addr())
	first, n := a>>16, uint32(1)
	if l := p.Bits(); l < 16 {
		n = 1 << (16 - l)
	}
	for r := first; r < first+n; r++ {
		atomic.AddUint32(&v.t.Gen16[r], 1)
	}
}

// lookup is what the XDP program does (fib4_lookup in fib4.h), for tests and tools.
func (v *v4Table) lookup(a netip.Addr) uint32 {
	x := addr32(a)
	e := v.dir.entry(x >> 8)
	if e&dataplane.FIB4Group != 0 {
		e = atomic.LoadUint32(&v.t.Tbl8[(e&^dataplane.FIB4Group)*256+x&0xff])
	}
	return e
}

// groupsInUse counts groups that are allocated and not retired.
func (v *v4Table) groupsInUse() int {
	return int(v.next) - len(v.free) - len(v.retire)
}
