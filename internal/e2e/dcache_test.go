package e2e

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/table"
)

// TestCacheNeverStale runs destinations with repeats through the destination cache in
// front of the FIB, changes routes (withdrawals, next-hop changes, new more-specifics
// and a new covering route) and runs them again: every cached answer must equal the
// FIB's own, before and after, and the changed /16s' entries must come back stale; a
// flush makes every entry stale at once.
func TestCacheNeverStale(t *testing.T) {
	all, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes := all[:100_000]
	f, probe := scaleFIB(t, 4096, 1<<18)
	if err := bench.LoadFIB(f, routes, func(r table.Route) netip.Addr { return gwFor(r.OriginAS) }); err != nil {
		t.Fatal(err)
	}
	if err := probe.SetCache(1 << 14); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	dsts := make([]netip.Addr, 4000)
	for i := range dsts {
		p := routes[rng.IntN(len(routes))].Prefix
		b := p.Addr().As4()
		x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		dsts[i] = addrOf(x | rng.Uint32()&uint32(uint64(1)<<(32-p.Bits())-1))
	}
	trace := make([]netip.Addr, 1<<17)
	for i := range trace {
		trace[i] = dsts[rng.IntN(len(dsts))]
	}
	same := func(stage string) dcache.Stats {
		t.Helper()
		before, err := probe.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		want, got := make([]uint32, len(trace)), make([]uint32, len(trace))
		if _, err := probe.Lookup(dataplane.MechFIB4, trace, want); err != nil {
			t.Fatal(err)
		}
		if _, err := probe.Lookup(dataplane.MechFIB4Cached, trace, got); err != nil {
			t.Fatal(err)
		}
		for i := range trace {
			if got[i]&^dataplane.ProbeHit != want[i] {
				t.Fatalf("%s: %s: cached answer %d, FIB %d", stage, trace[i], got[i], want[i])
			}
		}
		after, err := probe.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		d := dcache.Stats{Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses,
			Stale: after.Stale - before.Stale, Inserts: after.Inserts - before.Inserts, Evictions: after.Evictions - before.Evictions,
			Refused: after.Refused - before.Refused}
		t.Logf("%s: %+v", stage, d)
		if d.Hits+d.Misses+d.Stale != uint64(len(trace)) {
			t.Fatalf("%s: hits+misses+stale = %d, want one per lookup (%d)", stage, d.Hits+d.Misses+d.Stale, len(trace))
		}
		// Every miss is inserted (into its set's window), except to destinations
		// without a route (nothing to cache).
		unrouted := false
		for _, id := range want {
			unrouted = unrouted || id == 0
		}
		if d.Inserts > d.Misses+d.Stale || !unrouted && d.Inserts != d.Misses+d.Stale {
			t.Fatalf("%s: %d misses and stale, but %d inserted", stage, d.Misses+d.Stale, d.Inserts)
		}
		return d
	}
	cold := same("cold")
	if cold.Hits < uint64(len(trace))*9/10 {
		t.Errorf("4,000 destinations in a 16k-entry cache: %d hits of %d", cold.Hits, len(trace))
	}
	// Warm, only the few sets that more than four destinations hash to keep missing.
	if d := same("warm"); d.Stale != 0 || d.Misses > cold.Misses/4 {
		t.Errorf("warm cache: %d misses (cold: %d) and %d stale", d.Misses, cold.Misses, d.Stale)
	}

	// Route changes under the cached destinations.
	var batch []fib.Update
	for i, a := range dsts[:400] {
		switch i % 4 {
		case 0: // a new more-specific over the destination
			batch = append(batch, fib.Update{Prefix: netip.PrefixFrom(a, 28).Masked(), Nexthop: gwFor(uint32(i))})
		case 1: // the destination's route moves to another next hop
			p, _, ok := f.Lookup(a)
			if ok {
				batch = append(batch, fib.Update{Prefix: p, Nexthop: gwFor(uint32(i) + 1)})
			}
		case 2: // the destination's route goes
			if p, _, ok := f.Lookup(a); ok {
				batch = append(batch, fib.Update{Prefix: p, Withdraw: true})
			}
		case 3: // a new route covering it, shorter than its own (nothing changes for it)
			batch = append(batch, fib.Update{Prefix: netip.PrefixFrom(a, 12).Masked(), Nexthop: gwFor(uint32(i))})
		}
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	if d := same("after route changes"); d.Stale == 0 {
		t.Errorf("no stale entries after %d route changes under cached destinations", len(batch))
	}
	if err := probe.FlushCache(); err != nil {
		t.Fatal(err)
	}
	if d := same("after a flush"); d.Hits > uint64(len(trace))-uint64(len(dsts)) || d.Stale == 0 {
		t.Errorf("after a flush every destination's first lookup must miss: %+v", d)
	}
}
