package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/dcache"
	"golang.org/x/sys/unix"
)

// dcConfig mirrors struct dc_config.
type dcConfig struct {
	Fam                         [2]struct{ Mask, Shift, GhostShift, Pad uint32 }
	Epoch, AgeEvery, Flags, Pad uint32
}

const (
	dcNoAdmission = 1
	dcNStats      = 8
	dcHLLSample   = 4 // one destination in 2^4 feeds the working-set sketch
	dcGhostSets   = 1024
)

// Cache is the destination cache of one loaded program (the forwarding program or a
// probe): its geometry per family, its epoch, and its measurements. Methods are safe
// for concurrent use.
type Cache struct {
	ctl, stats, hllMap *ebpf.Map
	outer              [2]*ebpf.Map

	mu      sync.Mutex
	inner   [2]*ebpf.Map
	entries [2]int
}

func newCache(ctl, v4, v6, stats, hll *ebpf.Map) *Cache {
	return &Cache{ctl: ctl, outer: [2]*ebpf.Map{v4, v6}, stats: stats, hllMap: hll}
}

// Entries is a family's cache size (0: off).
func (c *Cache) Entries(f dcache.Family) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[f&1]
}

// Resize gives a family's cache a new, empty table of entries (0 turns it off),
// without reloading the program: the new table is swapped into the array-of-maps
// while packets keep flowing (a packet that meets the swap half done misses).
func (c *Cache) Resize(f dcache.Family, entries int) error {
	if err := dcache.CheckEntries(entries); err != nil {
		return fmt.Errorf("dataplane: %s %w", f, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f &= 1
	var inner *ebpf.Map
	if entries > 0 {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return fmt.Errorf("dataplane: count the CPUs for the cache: %w", err)
		}
		// Every CPU's sets in one plain array (the kernel resizes only those in an
		// array-of-maps), CPU c's from c*sets: per CPU by layout.
		inner, err = ebpf.NewMap(&ebpf.MapSpec{
			Name: "dc" + [2]string{"4", "6"}[f] + "_sets", Type: ebpf.Array, KeySize: 4,
			ValueSize: uint32(dcache.SetBytes[f]), MaxEntries: uint32(entries / 4 * cpus), Flags: unix.BPF_F_INNER_MAP,
		})
		if err != nil {
			return fmt.Errorf("dataplane: create a %s cache of %d entries (%d KiB per CPU, %d CPUs; lower the size): %w",
				f, entries, entries/4*dcache.SetBytes[f]>>10, cpus, err)
		}
	}
	setCtl := func() error {
		return c.updateCtl(func(k *dcConfig) {
			sets := uint32(max(entries/4, 1))
			k.Fam[f].Mask = sets - 1
			k.Fam[f].Shift = uint32(bits.Len32(sets) - 1)
			k.Fam[f].GhostShift = ghostShift(int(sets))
			c.entries[f] = entries
			// The frequency sketch (both families) halves about every ten cache
			// sizes of accesses (5,120 aging steps).
			k.AgeEvery = uint32(max(1, 10*(c.entries[0]+c.entries[1])/5120))
		})
	}
	zero := uint32(0)
	var err error
	switch {
	case inner == nil:
		if err = c.outer[f].Delete(&zero); errors.Is(err, ebpf.ErrKeyNotExist) {
			err = nil
		}
		if err == nil {
			err = setCtl()
		}
	case entries >= c.entries[f]:
		// Growing: the old mask fits the new table.
		if err = c.outer[f].Put(&zero, inner); err == nil {
			err = setCtl()
		}
	default:
		if err = setCtl(); err == nil {
			err = c.outer[f].Put(&zero, inner)
		}
	}
	if err != nil {
		if inner != nil {
			inner.Close()
		}
		return fmt.Errorf("dataplane: resize the %s cache to %d entries: %w", f, entries, err)
	}
	if c.inner[f] != nil {
		c.inner[f].Close() // the kernel frees it once no program uses it
	}
	c.inner[f] = inner
	return nil
}

func (c *Cache) updateCtl(change func(*dcConfig)) error {
	var k dcConfig
	zero := uint32(0)
	if err := c.ctl.Lookup(&zero, &k); err != nil {
		return err
	}
	change(&k)
	return c.ctl.Put(&zero, &k)
}

// SetAdmission turns the TinyLFU admission filter on (the default) or off (every
// miss admitted, for comparison).
func (c *Cache) SetAdmission(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateCtl(func(k *dcConfig) {
		k.Flags &^= dcNoAdmission
		if !on {
			k.Flags |= dcNoAdmission
		}
	})
}

// Flush makes every entry of both families stale at once (nothing is walked) and
// returns the new epoch.
func (c *Cache) Flush() (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e uint32
	err := c.updateCtl(func(k *dcConfig) { k.Epoch++; e = k.Epoch })
	return e, err
}

// SetEpoch sets the epoch (the fleet's flush epoch): entries of any other are stale.
func (c *Cache) SetEpoch(e uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateCtl(func(k *dcConfig) { k.Epoch = e })
}

// Epoch is the epoch entries must carry to be used.
func (c *Cache) Epoch() (uint32, error) {
	var k dcConfig
	zero := uint32(0)
	err := c.ctl.Lookup(&zero, &k)
	return k.Epoch, err
}

// ghostShift says which sets keep ghosts: every 2^shift-th, a quarter of them (a
// miss's ghost work in the others is saved) but at most dcGhostSets, and the only
// one of a one-set cache.
func ghostShift(sets int) uint32 {
	log := bits.Len(uint(max(sets, 1))) - 1
	return uint32(max(min(2, log), log-bits.Len(uint(dcGhostSets-1))))
}

// Stats reads a family's counters.
func (c *Cache) Stats(f dcache.Family) (dcache.Stats, error) {
	var out [dcNStats]uint64
	for i := range out {
		var per []uint64
		k := uint32(int(f&1)*dcNStats + i)
		if err := c.stats.Lookup(&k, &per); err != nil {
			return dcache.Stats{}, fmt.Errorf("dataplane: read %s cache counter %d: %w", f, i, err)
		}
		for _, v := range per {
			out[i] += v
		}
	}
	c.mu.Lock()
	shift := ghostShift(c.entries[f&1] / 4)
	c.mu.Unlock()
	// Bypasses (the cache off) are counted; the others consulted it.
	return dcache.Stats{Lookups: out[0] + out[1] + out[2] + out[3], Hits: out[1], Misses: out[2], Stale: out[3], Inserts: out[4],
		Evictions: out[5], Refused: out[6], GhostHits: out[7] << shift}, nil
}

// WorkingSet estimates the distinct destinations of a family seen since the last
// reset (the cache on or off), from the HyperLogLog registers XDP keeps per CPU (the
// union of CPUs is the maximum of each register); reset starts a new interval.
func (c *Cache) WorkingSet(f dcache.Family, reset bool) (float64, error) {
	return c.hll(uint32(f&1), reset)
}

// HitWorkingSet estimates the distinct destinations among the cache's hits since the
// last reset, the same way.
func (c *Cache) HitWorkingSet(f dcache.Family, reset bool) (float64, error) {
	return c.hll(uint32(f&1)+2, reset)
}

func (c *Cache) hll(k uint32, reset bool) (float64, error) {
	var per [][]byte
	if err := c.hllMap.Lookup(&k, &per); err != nil {
		return 0, fmt.Errorf("dataplane: read the working-set registers %d: %w", k, err)
	}
	var regs []byte
	for _, r := range per {
		if regs == nil {
			regs = make([]byte, len(r))
		}
		for i, v := range r {
			regs[i] = max(regs[i], v)
		}
	}
	if reset {
		zeros := make([][]byte, len(per))
		for i := range zeros {
			zeros[i] = make([]byte, len(regs))
		}
		if err := c.hllMap.Put(&k, zeros); err != nil {
			return 0, fmt.Errorf("dataplane: reset the working-set registers %d: %w", k, err)
		}
	}
	return HyperLogLog(regs) * (1 << dcHLLSample), nil
}

// HyperLogLog is the cardinality estimate of registers holding, each, the largest
// rank (trailing zeros + 1) seen among the hashes sent to it (Flajolet et al. 2007,
// with linear counting for small sets).
func HyperLogLog(regs []byte) float64 {
	m := float64(len(regs))
	if m == 0 {
		return 0
	}
	sum, zeros := 0.0, 0
	for _, r := range regs {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return e
}

// close frees the inner maps this process created.
func (c *Cache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.inner {
		if m != nil {
			m.Close()
			c.inner[i] = nil
		}
	}
}

// dc4Set and dc6Set mirror struct dc4_set and struct dc6_set.
type dc4Set [4]struct{ Key, Answer, Gen, Epoch uint32 }
type dc6Set [4]struct {
	Key                      [4]uint32
	Answer, Gen, Epoch, Hash uint32
}

// dcHash32 is dc_hash32: MurmurHash3's finalizer.
func dcHash32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	x ^= x >> 16
	return x
}

// cached counts the CPUs whose set holds destination a: fresh (its epoch and its
// region's generation gen are current) or stale. It reads each CPU's set and writes
// nothing (no counters, no admission).
func (c *Cache) cached(a netip.Addr, gen uint32) (fresh, stale int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := dcache.IPv4
	if a.Is6() {
		f = dcache.IPv6
	}
	inner := c.inner[f]
	if inner == nil {
		return 0, 0, nil // off
	}
	var k dcConfig
	zero := uint32(0)
	if err := c.ctl.Lookup(&zero, &k); err != nil {
		return 0, 0, fmt.Errorf("dataplane: read the cache's geometry: %w", err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return 0, 0, err
	}
	// The set index, as the program computes it (dc_hash32 of the host-order IPv4
	// address; dc_hash6 of the IPv6 address's four words as they lie in memory).
	var h uint32
	var key6 [4]uint32
	if f == dcache.IPv4 {
		b := a.As4()
		h = dcHash32(binary.BigEndian.Uint32(b[:]))
	} else {
		b := a.As16()
		for i := range key6 {
			key6[i] = binary.NativeEndian.Uint32(b[4*i:])
		}
		h = dcHash32(key6[0] ^ dcHash32(key6[1]^dcHash32(key6[2]^dcHash32(key6[3]))))
	}
	fam := k.Fam[f]
	for cpu := 0; cpu < cpus; cpu++ {
		idx := uint32(cpu)<<fam.Shift | h&fam.Mask
		var hit, old bool
		if f == dcache.IPv4 {
			var s dc4Set
			if err := inner.Lookup(&idx, &s); err != nil {
				return 0, 0, fmt.Errorf("dataplane: read cache set %d: %w", idx, err)
			}
			b := a.As4()
			for _, w := range s {
				if w.Key == binary.BigEndian.Uint32(b[:]) && w.Answer != 0 {
					hit, old = hit || w.Epoch == k.Epoch && w.Gen == gen, old || w.Epoch != k.Epoch || w.Gen != gen
				}
			}
		} else {
			var s dc6Set
			if err := inner.Lookup(&idx, &s); err != nil {
				return 0, 0, fmt.Errorf("dataplane: read cache set %d: %w", idx, err)
			}
			for _, w := range s {
				if w.Key == key6 && w.Answer != 0 {
					hit, old = hit || w.Epoch == k.Epoch && w.Gen == gen, old || w.Epoch != k.Epoch || w.Gen != gen
				}
			}
		}
		switch {
		case hit:
			fresh++
		case old:
			stale++
		}
	}
	return fresh, stale, nil
}
