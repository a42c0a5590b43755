package bench

import (
	"fmt"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
)

// The hash candidate (issue 4): a trie pays one dependent memory read per level, and
// below /32 each costs a DRAM miss (~80 ns here), so a /48 at the bottom of five
// levels costs five. Instead every route is expanded to the next of a few lengths
// (controlled prefix expansion: a /44 becomes 16 /48 keys, a /33 128 /40 keys) and
// each length is an exact match in one hash table: the lookup computes every
// length's bucket first and compares afterwards, so the reads of all lengths are in
// flight together and a /48 costs about one miss. Routes up to /16 are a direct
// first level, which also says which lengths have keys under each /16.

// V6HashLevels are the length sets measured (after the /16 first level).
var V6HashLevels = [][]int{{24, 32, 36, 40, 44, 48}, {32, 36, 40, 44, 48}, {24, 32, 40, 48}}

// V6Hash is a built hash candidate.
type V6Hash = dataplane.V6Hash

const (
	h6Mul1 = 0x9e3779b97f4a7c15
	h6Mul2 = 0xc2b2ae3d27d4eb4f
	h6Mul3 = 0xff51afd7ed558ccd
	// h6Load is the highest share of the slots that a table is built with.
	h6Load = 0.4
)

func h6Index(key, mul uint64, log int) uint32 { return uint32((key * mul) >> (64 - log)) }

// h6SpillBit is a key's bit in its first bucket's filter of keys living in their second.
func h6SpillBit(key uint64) uint32 { return 1 << ((key * h6Mul3) >> 59) }

func h6Key(h uint64, l int) uint64 { return uint64(l)<<56 | h>>(64-l) }

// buildV6Hash expands routes (value: value(route)) to levels. Routes longer than the
// last level set V6Deeper on their key at the last level (whose value is then the
// whole answer up to that length): the lookup asks the LPM trie.
func buildV6Hash(routes []table.Route, value func(table.Route) uint32, levels []int) (V6Hash, error) {
	rs := slices.Clone(routes)
	slices.SortStableFunc(rs, func(a, b table.Route) int { return a.Prefix.Bits() - b.Prefix.Bits() })
	im := V6Hash{Levels: levels, Dir: make([]uint32, 2<<16)}
	keys := make([]map[uint64]uint32, len(levels))
	for i := range keys {
		keys[i] = map[uint64]uint32{}
	}
	last := levels[len(levels)-1]
	var deeper []uint64
	for _, r := range rs {
		l := r.Prefix.Bits()
		if !r.Prefix.Addr().Is6() || l > 64 {
			continue
		}
		v, h := value(r), hi64(r.Prefix.Addr())
		if l <= 16 {
			for i := h >> 48; i < h>>48+1<<(16-l); i++ {
				im.Dir[2*i] = v
			}
			continue
		}
		if l > last {
			deeper = append(deeper, h)
			continue
		}
		i, _ := slices.BinarySearch(levels, l)
		t := levels[i]
		first := h >> (64 - t)
		for k := first; k < first+1<<(t-l); k++ {
			keys[i][k] = v
		}
	}
	for _, h := range deeper {
		k := h >> (64 - last)
		v := h6Lookup(im.Dir, keys, levels, h)
		keys[len(levels)-1][k] = v | dataplane.V6Deeper
	}
	total := 0
	for i, m := range keys {
		total += len(m)
		for k := range m {
			im.Dir[2*(k>>(levels[i]-16))+1] |= 1 << i
		}
	}
	im.LogBuckets = max(1, bits.Len(uint(float64(total)/5/h6Load)))
	im.Buckets = make([]uint32, 16<<im.LogBuckets)
	for i, m := range keys {
		// In key order, so that a build is reproducible.
		for _, k := range slices.Sorted(func(yield func(uint64) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			key := uint64(levels[i])<<56 | k
			if !h6Insert(im, key, m[k]) {
				return V6Hash{}, fmt.Errorf("hash candidate: both buckets of key %#x full at %d keys in 2^%d buckets", key, total, im.LogBuckets)
			}
		}
	}
	// The filters, from where the keys ended up.
	for b := 0; b < len(im.Buckets); b += 16 {
		im.Buckets[b+15] = 0
	}
	for b := 0; b < len(im.Buckets); b += 16 {
		for s := range 5 {
			key := uint64(im.Buckets[b+2*s+1])<<32 | uint64(im.Buckets[b+2*s])
			if b1 := h6Index(key, h6Mul1, im.LogBuckets); key != 0 && int(b1) != b/16 {
				im.Buckets[16*b1+15] |= h6SpillBit(key)
			}
		}
	}
	return im, nil
}

// h6Insert puts key in its first bucket, or its second, or (both full) moves keys
// cuckoo-style to their other bucket to make room. (The filters of keys living in
// their second bucket are made once all are placed.)
func h6Insert(im V6Hash, key uint64, v uint32) bool {
	for walk := 0; walk < 500; walk++ {
		b1, b2 := h6Index(key, h6Mul1, im.LogBuckets), h6Index(key, h6Mul2, im.LogBuckets)
		for _, b := range []uint32{b1, b2} {
			w := im.Buckets[16*b : 16*b+16]
			for s := range 5 {
				if w[2*s] == 0 && w[2*s+1] == 0 {
					w[2*s], w[2*s+1], w[10+s] = uint32(key), uint32(key>>32), v
					return true
				}
			}
		}
		// Both full: evict a slot of one of them (chosen by the walk) and carry the
		// evicted key on to its other bucket.
		b, s := b1, int(key>>7+uint64(walk))%5
		if (key>>3+uint64(walk))%2 == 1 {
			b = b2
		}
		w := im.Buckets[16*b : 16*b+16]
		old := uint64(w[2*s+1])<<32 | uint64(w[2*s])
		oldV := w[10+s]
		w[2*s], w[2*s+1], w[10+s] = uint32(key), uint32(key>>32), v
		key, v = old, oldV
	}
	return false
}

// h6Lookup is the longest match over the first level and the expanded keys.
func h6Lookup(dir []uint32, keys []map[uint64]uint32, levels []int, h uint64) uint32 {
	for i := len(levels) - 1; i >= 0; i-- {
		if v, ok := keys[i][h>>(64-levels[i])]; ok {
			return v
		}
	}
	return dir[2*(h>>48)]
}

// hashLookup is what the BPF lookup does, in Go (V6Deeper left in the answer).
func hashLookup(im V6Hash, a netip.Addr) uint32 {
	h := hi64(a)
	v, mask := im.Dir[2*(h>>48)], im.Dir[2*(h>>48)+1]
	for i := len(im.Levels) - 1; i >= 0; i-- {
		if mask&(1<<i) == 0 {
			continue
		}
		key := h6Key(h, im.Levels[i])
		b1 := h6Index(key, h6Mul1, im.LogBuckets)
		for n, b := range []uint32{b1, h6Index(key, h6Mul2, im.LogBuckets)} {
			if n == 1 && im.Buckets[16*b1+15]&h6SpillBit(key) == 0 {
				break
			}
			w := im.Buckets[16*b : 16*b+16]
			for s := range 5 {
				if uint64(w[2*s+1])<<32|uint64(w[2*s]) == key {
					return w[10+s]
				}
			}
		}
	}
	return v
}

func hashBytes(im V6Hash) int { return 4 * (len(im.Dir) + len(im.Buckets)) }
