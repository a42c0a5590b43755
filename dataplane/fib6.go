package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/cilium/ebpf"
)

// The IPv6 FIB's layout, as in bpf/fib6.h: a first level of two u32 per /16 (the value
// of the routes up to /16; bits 0-2: /24, /32 and /48 keys exist under the /16), and one
// hash of every route from /17 to /48 expanded to the next of FIB6Levels, in buckets
// of five keys, five values and a filter of keys living in their second bucket; a /32
// key flags the longer lengths with keys under it.
const (
	// FIB6Deeper marks a /48 key under which fib6_long holds longer routes.
	FIB6Deeper = 0x80000000
	// FIB6BelowShift places a /32 key's flags of the longer lengths with keys under
	// it: bit FIB6BelowShift+i for FIB6Levels[2+i] (36, 40, 44, 48).
	FIB6BelowShift = 24
	// FIB6IDMask is the group id part of a value.
	FIB6IDMask = 0x00ffffff
	// FIB6Kernel is a first-level value: the /16's packets pass to the kernel.
	FIB6Kernel = 0x00ffffff
	// FIB6Tomb is the key of a removed slot, reusable after a grace period.
	FIB6Tomb = 0xff << 56
	// DefaultBucketsV6 is the hash's default size: 2^19 buckets, 32 MiB, room for
	// about 1M keys at 40% (the 2026 table has 498,192).
	DefaultBucketsV6 = 1 << 19

	fib6Mul1 = 0x9e3779b97f4a7c15
	fib6Mul2 = 0xc2b2ae3d27d4eb4f
	fib6Mul3 = 0xff51afd7ed558ccd
)

// FIB6Levels are the lengths of the hash's keys (FIB6_LEVELS).
var FIB6Levels = [...]int{24, 32, 36, 40, 44, 48}

// FIB6Key is the hash key of the top 64 bits h at one of FIB6Levels.
func FIB6Key(h uint64, level int) uint64 { return uint64(level)<<56 | h>>(64-level) }

// FIB6Buckets returns a key's first and second bucket in a table of 2^log buckets.
func FIB6Buckets(key uint64, log int) (uint32, uint32) {
	return uint32((key * fib6Mul1) >> (64 - log)), uint32((key * fib6Mul2) >> (64 - log))
}

// FIB6SpillBit is a key's bit in its first bucket's filter of keys in their second.
func FIB6SpillBit(key uint64) uint32 { return 1 << ((key * fib6Mul3) >> 59) }

// Hi64 returns the top 64 bits of an IPv6 address.
func Hi64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8])
}

// V6Tables are the IPv6 FIB's arrays, mapped into this process. Write a value with
// one atomic 32-bit store and a key with one atomic 64-bit store (after its value).
type V6Tables struct {
	// Dir has two entries per /16: Dir[2i] the value, Dir[2i+1] the mask of /24, /32
	// and /48 keys under it.
	Dir []uint32
	// Buckets has 16 u32 per bucket: keys (u64) in 0-9, values in 10-14, filter 15.
	Buckets    []uint32
	LogBuckets int
	// Gen has one generation per region (Gen6Region), bumped after a route
	// overlapping the region changes: the destination cache's entries from before
	// are stale.
	Gen []uint32
}

// fib6MapNames are the maps of the IPv6 FIB a probe shares with the program.
var fib6MapNames = []string{"fib6_dir", "fib6_table", "fib6_long", "fib6_gen"}

// Gen6Region is the generation region of an IPv6 address's top 32 bits (fib6.h
// fib6_gen_of): the /32s hashed into 65,536 regions.
func Gen6Region(top32 uint32) uint32 { return (top32 * 0x9e3779b1) >> 16 }

// V6Tables maps the IPv6 FIB arrays into the process (once; later calls return the same).
func (d *Dataplane) V6Tables() (V6Tables, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tables6 != nil {
		return *d.tables6, nil
	}
	var t V6Tables
	for _, m := range []struct {
		m   *ebpf.Map
		dst *[]uint32
	}{{d.objs.Fib6Dir, &t.Dir}, {d.objs.Fib6Table, &t.Buckets}, {d.objs.Fib6Gen, &t.Gen}} {
		u, b, err := mmapU32(m.m)
		if err != nil {
			d.unmapLocked()
			return V6Tables{}, err
		}
		d.mmaps = append(d.mmaps, b)
		*m.dst = u
	}
	t.LogBuckets = bits.Len(uint(len(t.Buckets)/16)) - 1
	d.tables6 = &t
	return t, nil
}

func lpmKey6(p netip.Prefix) xdpfwdFib6LpmKey {
	k := xdpfwdFib6LpmKey{Prefixlen: uint32(p.Bits())}
	b := p.Masked().Addr().As16()
	for w := range 4 {
		k.Addr[w] = binary.NativeEndian.Uint32(b[4*w:])
	}
	return k
}

// SetLong6 puts an IPv6 route longer than /48 in fib6_long (the /48's key must carry
// FIB6Deeper for lookups to read it).
func (d *Dataplane) SetLong6(p netip.Prefix, id uint32) error {
	if !p.Addr().Is6() || p.Bits() <= 48 {
		return fmt.Errorf("dataplane: %s: only IPv6 routes longer than /48 go to the long-route trie", p)
	}
	k := lpmKey6(p)
	if err := d.objs.Fib6Long.Put(&k, &id); err != nil {
		return fmt.Errorf("dataplane: add long IPv6 route %s (the trie holds 65,536): %w", p, err)
	}
	return nil
}

// DeleteLong6 removes an IPv6 route longer than /48 from fib6_long.
func (d *Dataplane) DeleteLong6(p netip.Prefix) error {
	k := lpmKey6(p)
	if err := d.objs.Fib6Long.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("dataplane: delete long IPv6 route %s: %w", p, err)
	}
	return nil
}
