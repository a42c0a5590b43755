package fib

import (
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fibfleet/fibfleet/dataplane"
)

// longStore holds IPv6 routes longer than /48 (the dataplane's fib6_long trie).
type longStore interface {
	SetLong6(p netip.Prefix, id uint32) error
	DeleteLong6(p netip.Prefix) error
}

// v6Table compiles IPv6 routes into the dataplane's hash FIB (dataplane/bpf/fib6.h):
// routes up to /16 into the first level, routes from /17 to /48 expanded to the next
// of dataplane.FIB6Levels as hash keys, longer ones into a trie under a /48 key marked
// FIB6Deeper. A route change recomputes only its own expanded keys: each key's value
// is the longest route between the previous level (exclusive) and its own.
//
// Writes are ordered for lookups running concurrently: a level's mask bit is set
// before its first key and cleared after its last; a key is written after its value
// and, in its second bucket, after its filter bit; a removed key becomes FIB6Tomb and
// its slot is reused only after a grace period. A key that finds both buckets full is
// kept pending and its /16 passes to the kernel (FIB6Kernel) until it is placed; each
// commit makes room for pending keys by moving a neighbour to its other bucket.
type v6Table struct {
	t    dataplane.V6Tables
	long longStore
	// routes[l] holds the routes of length l <= 48 by their top l bits.
	routes [49]map[uint64]uint32
	// longRoutes holds routes longer than /48; longPer48 counts them per /48.
	longRoutes map[netip.Prefix]uint32
	longPer48  map[uint64]int
	// slots holds every live key's slot (bucket*5 + position).
	slots map[uint64]int32
	// levelKeys counts live or pending keys per /16 and level (index /16*levels+level);
	// the first level's mask says which of /24 and /32 have any.
	levelKeys []uint32
	// below counts, per /32 (its top 32 bits), the keys of each longer level under it:
	// the /32's key flags the levels that have some, so lookups read only those.
	below     map[uint64]*[nLevels6 - 2]uint32
	pending   map[uint64]uint32
	pending16 map[uint32]int
	// spill counts, per first bucket and filter bit, the keys living in their second.
	spill map[uint32]*[32]uint16
	tombs []tomb6
	now   func() time.Time
	grace time.Duration
}

type tomb6 struct {
	slot int32
	at   time.Time
}

const nLevels6 = len(dataplane.FIB6Levels)

func newV6Table(t dataplane.V6Tables, long longStore) *v6Table {
	v := &v6Table{t: t, long: long, longRoutes: map[netip.Prefix]uint32{}, longPer48: map[uint64]int{},
		slots: map[uint64]int32{}, levelKeys: make([]uint32, nLevels6<<16), below: map[uint64]*[nLevels6 - 2]uint32{}, pending: map[uint64]uint32{},
		pending16: map[uint32]int{}, spill: map[uint32]*[32]uint16{}, now: time.Now, grace: groupGrace}
	for l := range v.routes {
		v.routes[l] = map[uint64]uint32{}
	}
	return v
}

// levelOf returns the index of the level a length /17../48 expands to.
func levelOf(l int) int {
	i, _ := slices.BinarySearch(dataplane.FIB6Levels[:], l)
	return i
}

func top(h uint64, l int) uint64 {
	if l == 0 {
		return 0
	}
	return h >> (64 - l)
}

// set installs or replaces a route; del removes one.
func (v *v6Table) set(p netip.Prefix, id uint32) error { return v.change(p, id) }
func (v *v6Table) del(p netip.Prefix) error            { return v.change(p, 0) }

func (v *v6Table) change(p netip.Prefix, id uint32) error {
	l, h := p.Bits(), dataplane.Hi64(p.Addr())
	// After the FIB is written: a cached answer stamped with the new generation was
	// looked up after the change.
	defer v.bump(l, h)
	switch {
	case l <= 16:
		v.store(v.routes[l], top(h, l), id)
		first := top(h, l) << (16 - l)
		for i := first; i < first+1<<(16-l); i++ {
			v.writeDir(uint32(i))
		}
	case l <= 48:
		v.store(v.routes[l], top(h, l), id)
		li := levelOf(l)
		t := dataplane.FIB6Levels[li]
		first := top(h, l) << (t - l)
		for k := first; k < first+1<<(t-l); k++ {
			v.refresh(li, k)
		}
	default:
		k48 := top(h, 48)
		_, had := v.longRoutes[p]
		if id != 0 {
			// The trie has the route before the /48 key says to read it.
			if err := v.long.SetLong6(p, id); err != nil {
				return err
			}
			v.longRoutes[p] = id
			if !had {
				v.longPer48[k48]++
				v.refresh(nLevels6-1, k48)
			}
			return nil
		}
		if !had {
			return nil
		}
		delete(v.longRoutes, p)
		if v.longPer48[k48]--; v.longPer48[k48] == 0 {
			delete(v.longPer48, k48)
			v.refresh(nLevels6-1, k48)
		}
		return v.long.DeleteLong6(p)
	}
	return nil
}

func (v *v6Table) store(m map[uint64]uint32, k uint64, id uint32) {
	if id == 0 {
		delete(m, k)
	} else {
		m[k] = id
	}
}

// refresh recomputes the key k (top bits) of level li from the routes and writes it.
func (v *v6Table) refresh(li int, k uint64) {
	t := dataplane.FIB6Levels[li]
	prev := 16
	if li > 0 {
		prev = dataplane.FIB6Levels[li-1]
	}
	var val uint32
	for l := t; l > prev && val == 0; l-- {
		val = v.routes[l][k>>(t-l)]
	}
	if li == nLevels6-1 && v.longPer48[k] > 0 {
		val |= dataplane.FIB6Deeper
	}
	if li == 1 {
		if c := v.below[k]; c != nil {
			for i, n := range c {
				if n > 0 {
					val |= 1 << (dataplane.FIB6BelowShift + i)
				}
			}
		}
	}
	key := uint64(t)<<56 | k
	if val != 0 {
		v.put(li, key, val)
	} else {
		v.drop(li, key)
	}
}

func (v *v6Table) keyAt(slot int32) *uint64 {
	return (*uint64)(unsafe.Pointer(&v.t.Buckets[16*(slot/5)+2*(slot%5)]))
}

func (v *v6Table) valAt(slot int32) *uint32 { return &v.t.Buckets[16*(slot/5)+10+slot%5] }

// key16 returns the /16 a key lies under.
func key16(key uint64) uint32 {
	t := int(key >> 56)
	return uint32((key & (1<<56 - 1)) >> (t - 16))
}

// put makes key (of level li) answer val.
func (v *v6Table) put(li int, key uint64, val uint32) {
	if slot, ok := v.slots[key]; ok {
		if atomic.LoadUint32(v.valAt(slot)) != val {
			atomic.StoreUint32(v.valAt(slot), val)
		}
		return
	}
	if _, ok := v.pending[key]; ok {
		v.pending[key] = val
		return
	}
	b16 := key16(key)
	if v.levelKeys[int(b16)*nLevels6+li]++; v.levelKeys[int(b16)*nLevels6+li] == 1 {
		v.writeMask(b16)
	}
	v.addBelow(li, key, 1) // the /32's flag before the key
	if !v.insert(key, val) {
		v.pending[key] = val
		if v.pending16[b16]++; v.pending16[b16] == 1 {
			v.writeDir(b16)
		}
	}
}

// drop removes key (of level li).
func (v *v6Table) drop(li int, key uint64) {
	b16 := key16(key)
	if _, ok := v.pending[key]; ok {
		delete(v.pending, key)
		if v.pending16[b16]--; v.pending16[b16] == 0 {
			delete(v.pending16, b16)
			v.writeDir(b16)
		}
	} else if slot, ok := v.slots[key]; ok {
		v.vacate(key, slot)
	} else {
		return
	}
	if v.levelKeys[int(b16)*nLevels6+li]--; v.levelKeys[int(b16)*nLevels6+li] == 0 {
		v.writeMask(b16)
	}
	v.addBelow(li, key, -1) // the /32's flag after the key
}

// addBelow counts a key of a level longer than /32 under its /32, and rewrites the
// /32's key when the level's count turns from or to zero.
func (v *v6Table) addBelow(li int, key uint64, d int) {
	if li < 2 {
		return
	}
	t := dataplane.FIB6Levels[li]
	k32 := (key & (1<<56 - 1)) >> (t - 32)
	c := v.below[k32]
	if c == nil {
		c = &[nLevels6 - 2]uint32{}
		v.below[k32] = c
	}
	c[li-2] = uint32(int(c[li-2]) + d)
	if c[li-2] == 0 || c[li-2] == 1 && d > 0 {
		if *c == ([nLevels6 - 2]uint32{}) {
			delete(v.below, k32)
		}
		v.refresh(1, k32)
	}
}

// vacate turns a live key's slot into a tombstone.
func (v *v6Table) vacate(key uint64, slot int32) {
	atomic.StoreUint64(v.keyAt(slot), dataplane.FIB6Tomb)
	delete(v.slots, key)
	v.tombs = append(v.tombs, tomb6{slot, v.now()})
	if b1, _ := dataplane.FIB6Buckets(key, v.t.LogBuckets); uint32(slot/5) != b1 {
		v.spillAdd(b1, key, -1)
	}
}

// insert places key in a free slot of its first bucket, else of its second.
func (v *v6Table) insert(key uint64, val uint32) bool {
	b1, b2 := dataplane.FIB6Buckets(key, v.t.LogBuckets)
	for n, b := range [2]uint32{b1, b2} {
		slot := v.free(b)
		if slot < 0 {
			continue
		}
		if n == 1 {
			v.spillAdd(b1, key, 1) // the filter first: a lookup then finds the key or misses
		}
		atomic.StoreUint32(v.valAt(slot), val)
		atomic.StoreUint64(v.keyAt(slot), key)
		v.slots[key] = slot
		return true
	}
	return false
}

func (v *v6Table) free(b uint32) int32 {
	for s := int32(0); s < 5; s++ {
		if slot := int32(b)*5 + s; atomic.LoadUint64(v.keyAt(slot)) == 0 {
			return slot
		}
	}
	return -1
}

func (v *v6Table) spillAdd(b1 uint32, key uint64, d int) {
	c := v.spill[b1]
	if c == nil {
		c = &[32]uint16{}
		v.spill[b1] = c
	}
	bit := dataplane.FIB6SpillBit(key)
	i := bits.TrailingZeros32(bit)
	c[i] = uint16(int(c[i]) + d)
	var word uint32
	for j, n := range c {
		if n > 0 {
			word |= 1 << j
		}
	}
	if word == 0 {
		delete(v.spill, b1)
	}
	atomic.StoreUint32(&v.t.Buckets[16*b1+15], word)
}

// writeDir writes a /16's first-level value: the longest route up to /16 covering
// it, or FIB6Kernel while keys under it are pending.
func (v *v6Table) writeDir(b16 uint32) {
	val := uint32(dataplane.FIB6Kernel)
	if v.pending16[b16] == 0 {
		val = 0
		for l := 16; l >= 0 && val == 0; l-- {
			val = v.routes[l][uint64(b16)>>(16-l)]
		}
	}
	atomic.StoreUint32(&v.t.Dir[2*b16], val)
}

func (v *v6Table) writeMask(b16 uint32) {
	var mask uint32
	// /24, /32 and /48 (bits 0-2); /36 to /44 are flagged by their /32's key.
	for bit, li := range [3]int{0, 1, nLevels6 - 1} {
		if v.levelKeys[int(b16)*nLevels6+li] > 0 {
			mask |= 1 << bit
		}
	}
	atomic.StoreUint32(&v.t.Dir[2*b16+1], mask)
}

// commit frees the tombstones older than the grace period and places pending keys,
// making room for them by moving a neighbour when both their buckets are full.
func (v *v6Table) commit() {
	now := v.now()
	i := 0
	for ; i < len(v.tombs) && now.Sub(v.tombs[i].at) >= v.grace; i++ {
		atomic.StoreUint64(v.keyAt(v.tombs[i].slot), 0)
	}
	v.tombs = v.tombs[i:]
	for key, val := range v.pending {
		if v.insert(key, val) {
			delete(v.pending, key)
			b16 := key16(key)
			if v.pending16[b16]--; v.pending16[b16] == 0 {
				delete(v.pending16, b16)
				v.writeDir(b16)
			}
			continue
		}
		v.makeRoom(key)
	}
}

// makeRoom moves one key out of key's buckets into its other bucket, if that has a
// free slot: the key is copied first, then its old slot becomes a tombstone, free
// after the grace period.
func (v *v6Table) makeRoom(key uint64) bool {
	b1, b2 := dataplane.FIB6Buckets(key, v.t.LogBuckets)
	for _, b := range [2]uint32{b1, b2} {
		for s := int32(0); s < 5; s++ {
			slot := int32(b)*5 + s
			z := atomic.LoadUint64(v.keyAt(slot))
			if z == 0 || z == dataplane.FIB6Tomb {
				continue
			}
			z1, z2 := dataplane.FIB6Buckets(z, v.t.LogBuckets)
			other := z1
			if z1 == b {
				other = z2
			}
			dst := v.free(other)
			if dst < 0 || other == b {
				continue
			}
			if other != z1 {
				v.spillAdd(z1, z, 1)
			}
			atomic.StoreUint32(v.valAt(dst), atomic.LoadUint32(v.valAt(slot)))
			atomic.StoreUint64(v.keyAt(dst), z)
			// Then the old copy goes (a lookup finds one of the two meanwhile).
			atomic.StoreUint64(v.keyAt(slot), dataplane.FIB6Tomb)
			v.tombs = append(v.tombs, tomb6{slot, v.now()})
			if b != z1 {
				v.spillAdd(z1, z, -1)
			}
			v.slots[z] = dst
			return true
		}
	}
	return false
}

// bump advances the generation of every region (dataplane.Gen6Region) a route of
// length l at top bits h overlaps: its /32's, or every /32's under a shorter route
// (all of them from /16 up).
func (v *v6Table) bump(l int, h uint64) {
	if l <= 16 {
		for r := range v.t.Gen {
			atomic.AddUint32(&v.t.Gen[r], 1)
		}
		return
	}
	first, n := uint32(h>>32), uint32(1)
	if l < 32 {
		first &^= 1<<(32-l) - 1
		n = 1 << (32 - l)
	}
	for i := uint32(0); i < n; i++ {
		atomic.AddUint32(&v.t.Gen[dataplane.Gen6Region(first+i)], 1)
	}
}

// lookup is the dataplane's lookup in Go, for tests (the long-route trie is a scan).
func (v *v6Table) lookup(a netip.Addr) uint32 {
	h := dataplane.Hi64(a)
	b16 := uint32(h >> 48)
	v0, mask := v.t.Dir[2*b16], v.t.Dir[2*b16+1]
	if v0 == dataplane.FIB6Kernel {
		return v0
	}
	var v24, v32 uint32
	if mask&2 != 0 {
		v32, _ = v.find(h, 1)
	}
	if mask&1 != 0 {
		v24, _ = v.find(h, 0)
	}
	below := v32 >> dataplane.FIB6BelowShift & 0xf
	if mask&4 != 0 {
		below |= 1 << (nLevels6 - 3) // /48 is read in the first round, whatever the /32 says
	}
	if below != 0 {
		for li := nLevels6 - 1; li >= 2; li-- {
			if below&(1<<(li-2)) == 0 {
				continue
			}
			val, ok := v.find(h, li)
			if !ok {
				continue
			}
			if val&dataplane.FIB6Deeper != 0 {
				if id, ok := v.longMatch(a); ok {
					return id
				}
			}
			if val&dataplane.FIB6IDMask != 0 {
				return val & dataplane.FIB6IDMask
			}
		}
	}
	switch {
	case v32&dataplane.FIB6IDMask != 0:
		return v32 & dataplane.FIB6IDMask
	case v24 != 0:
		return v24
	}
	return v0
}

// find reads the key of level li for the top 64 bits h, as the BPF lookup does.
func (v *v6Table) find(h uint64, li int) (uint32, bool) {
	key := dataplane.FIB6Key(h, dataplane.FIB6Levels[li])
	b1, b2 := dataplane.FIB6Buckets(key, v.t.LogBuckets)
	for n, b := range [2]uint32{b1, b2} {
		if n == 1 && v.t.Buckets[16*b1+15]&dataplane.FIB6SpillBit(key) == 0 {
			break
		}
		for s := int32(0); s < 5; s++ {
			if slot := int32(b)*5 + s; *v.keyAt(slot) == key {
				return *v.valAt(slot), true
			}
		}
	}
	return 0, false
}

func (v *v6Table) longMatch(a netip.Addr) (uint32, bool) {
	best, id := -1, uint32(0)
	for p, x := range v.longRoutes {
		if p.Contains(a) && p.Bits() > best {
			best, id = p.Bits(), x
		}
	}
	return id, best >= 0
}

// stats returns the live keys, pending keys, long routes and buckets.
func (v *v6Table) stats() (keys, pending, long, buckets int) {
	return len(v.slots), len(v.pending), len(v.longRoutes), len(v.t.Buckets) / 16
}
