package dataplane

import (
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/dcache"
)

// TestCacheAdmission fills a one-set cache (4 ways: the window and three main ways)
// with four destinations seen often, floods it with 200 destinations seen once each,
// and checks that the three in the main ways still hit afterwards: each flood packet
// takes the window and is dropped when the next one comes (counted as a refusal),
// never moved over them. Then a destination that keeps coming moves into the main ways.
func TestCacheAdmission(t *testing.T) {
	d := testDataplane(t)
	p, err := NewProbe(d, 1<<12)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SetCache(4); err != nil {
		t.Fatal(err)
	}
	// All inside 198.51.100.0/24 (nexthop 1): one set holds whatever hashes there.
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}) }
	run := func(trace []netip.Addr) dcache.Stats {
		t.Helper()
		before, err := p.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uint32, len(trace))
		if _, err := p.Lookup(MechFIB4Cached, trace, out); err != nil {
			t.Fatal(err)
		}
		for i, id := range out {
			if id&^ProbeHit != 1 {
				t.Fatalf("%s: answer %d, want nexthop 1", trace[i], id)
			}
		}
		after, err := p.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		return dcache.Stats{Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses, Inserts: after.Inserts - before.Inserts,
			Evictions: after.Evictions - before.Evictions, Refused: after.Refused - before.Refused}
	}
	var live []netip.Addr
	for r := 0; r < 50; r++ {
		for i := 1; i <= 4; i++ {
			live = append(live, addr(i))
		}
	}
	if s := run(live); s.Inserts != 4 || s.Hits != 196 {
		t.Fatalf("four destinations 50 times each in an empty 4-way set: %+v, want 4 inserts, 196 hits", s)
	}
	var flood []netip.Addr
	for i := 0; i < 200; i++ {
		flood = append(flood, addr(10+i))
	}
	s := run(flood)
	if s.Inserts != 200 || s.Refused < 195 || s.Evictions > 2 {
		t.Fatalf("a flood of 200 one-packet destinations: %+v, want each through the window and dropped", s)
	}
	// The one in the window when the flood came may have gone: one miss at most.
	if s := run(live[:40]); s.Misses > 1 || s.Hits < 39 {
		t.Fatalf("the four live destinations after the flood: %+v, want at most one miss", s)
	}
	// A newcomer hits from its second packet on (it sits in the window).
	var regular []netip.Addr
	for r := 0; r < 200; r++ {
		regular = append(regular, addr(250))
	}
	if s := run(regular); s.Inserts != 1 || s.Hits != 199 {
		t.Fatalf("a destination seen 200 times: %+v, want one insert, then hits", s)
	}
}
