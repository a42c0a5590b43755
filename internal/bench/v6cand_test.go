package bench

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/internal/table"
)

// refLPM6 is a brute-force longest-prefix match over the top 64 bits: one map per
// prefix length, longest first. It shares no code with the trie.
type refLPM6 [65]map[uint64]uint32

func newRefLPM6(routes []table.Route, value func(table.Route) uint32) *refLPM6 {
	var r refLPM6
	for l := range r {
		r[l] = map[uint64]uint32{}
	}
	for _, rt := range routes {
		if l := rt.Prefix.Bits(); l <= 64 {
			r[l][hi64(rt.Prefix.Addr())] = value(rt)
		}
	}
	return &r
}

func (r *refLPM6) lookup(a netip.Addr) uint32 {
	h := hi64(a)
	for l := 64; l >= 0; l-- {
		key := h
		if l < 64 {
			key = h &^ (1<<(64-l) - 1)
		}
		if v, ok := r[l][key]; ok {
			return v
		}
	}
	return 0
}

// TestV6Candidates checks both IPv6 FIB candidates against the reference on the real
// tables (random addresses inside random prefixes, and anywhere) and logs their sizes.
func TestV6Candidates(t *testing.T) {
	for _, c := range []struct {
		name string
		load func() ([]table.Route, error)
	}{{"2026", table.Real2026v6}, {"ris2024", table.RIS2024v6}} {
		routes, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefLPM6(routes, v6Value)
		for _, layout := range V6Layouts {
			trie := buildV6Trie(routes, v6Value, layout)
			stride, comp := trie.Stride(), trie.Compressed()
			rng := rand.New(rand.NewPCG(1, 6))
			for i := 0; i < 300_000; i++ {
				var a netip.Addr
				if i%3 == 0 {
					a = random2000(rng)
				} else {
					a = RandomIn6(rng, routes[rng.IntN(len(routes))].Prefix)
				}
				want := ref.lookup(a)
				if got := trie.lookup(a); got != want {
					t.Fatalf("%s: %s: trie %d, reference %d", c.name, a, got, want)
				}
				if got := strideLookup(stride, a); got != want {
					t.Fatalf("%s: %s: stride %d, reference %d", c.name, a, got, want)
				}
				if got := compressedLookup(comp, a); got != want {
					t.Fatalf("%s: %s: compressed %d, reference %d", c.name, a, got, want)
				}
			}
			t.Logf("%s, strides %v: %d routes, %d nodes; stride %.1f MiB, compressed %.1f MiB (%d leaves)", c.name, layout, len(routes), trie.nodes,
				float64(imageBytes(stride))/(1<<20), float64(imageBytes(comp))/(1<<20), len(comp.Leaves))
		}
	}
}

// random2000 is a random address, mostly inside 2000::/3.
func random2000(rng *rand.Rand) netip.Addr {
	var b [16]byte
	for k := range b {
		b[k] = byte(rng.Uint32())
	}
	b[0] = 0x20 | b[0]&0x1f
	return netip.AddrFrom16(b)
}
