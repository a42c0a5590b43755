package cache

import (
	"math"
	"strings"
	"testing"
)

// traffic is a synthetic interval: lookups packets over ws distinct destinations.
type traffic struct {
	lookups uint64
	ws      float64
}

// hitRate models a cache of n entries on that traffic: every destination misses once,
// and only the share of the working set that fits can hit again.
func (t traffic) hitRate(n int) float64 {
	if n == 0 {
		return 0
	}
	return max(0, 1-t.ws/float64(t.lookups)) * min(1, float64(n)/max(t.ws, 1))
}

// stats is what the dataplane would report for the traffic with the cache at n.
func (t traffic) stats(n int) Stats {
	s := Stats{Lookups: t.lookups, WorkingSet: t.ws}
	if n > 0 {
		h, h2 := t.hitRate(n), t.hitRate(2*n)
		s.Hits = uint64(h * float64(t.lookups))
		s.GhostHits = uint64((h2 - h) * float64(t.lookups))
	}
	return s
}

var (
	kernelFIB = Costs{Hit: 25, Miss: 15, FIB: 700} // bpf_fib_lookup: a hit saves almost all of it
	fastFIB   = Costs{Hit: 62, Miss: 10, FIB: 60}  // DIR-24-8: a hit costs as much as the lookup
	locality  = traffic{lookups: 100_000, ws: 500}
	flood     = traffic{lookups: 100_000, ws: 100_000} // every packet a new destination
)

func newTestController(t *testing.T) *Controller {
	t.Helper()
	c, err := NewController(Config{MinEntries: 512, MaxEntries: 1 << 16, Margin: 0.01, Confirm: 3, Hold: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run feeds n intervals of traffic and returns the decisions.
func run(c *Controller, tr traffic, costs Costs, n int) []Decision {
	var out []Decision
	for i := 0; i < n; i++ {
		out = append(out, c.Step(tr.stats(c.Entries()), costs))
	}
	return out
}

func changes(ds []Decision) int {
	n := 0
	for _, d := range ds {
		if d.Changed {
			n++
		}
	}
	return n
}

func TestTurnsOnWhereItPays(t *testing.T) {
	c := newTestController(t)
	ds := run(c, locality, kernelFIB, 10)
	if c.Entries() != 1024 {
		t.Fatalf("locality in front of the kernel FIB: %d entries, want 1024 (twice the working set of 500)", c.Entries())
	}
	if changes(ds) != 1 || !ds[2].Changed {
		t.Fatalf("want one change, at the third interval (confirm 3): %+v", ds)
	}
	if !strings.Contains(ds[2].Reason, "on at 1024") || ds[2].Regime != Pays {
		t.Errorf("decision %+v: want regime pays and a reason naming the size", ds[2])
	}
}

// TestWorkingSetAtAPowerOfTwo: a working set that straddles a power of two points at
// two sizes in turn; the intervals still agree (on), and the cache goes on.
func TestWorkingSetAtAPowerOfTwo(t *testing.T) {
	c := newTestController(t)
	var ds []Decision
	for i := 0; i < 3; i++ {
		ws := []float64{1900, 2200}[i%2] // 4096, 8192, 4096 entries
		ds = append(ds, c.Step(traffic{lookups: 100_000, ws: ws}.stats(c.Entries()), kernelFIB))
	}
	if !ds[2].Changed || c.Entries() != 4096 {
		t.Fatalf("working set alternating 1900/2200: %d entries after 3 intervals (%+v), want on at the latest size, 4096", c.Entries(), ds)
	}
}

func TestStaysOffInFrontOfAFastFIB(t *testing.T) {
	c := newTestController(t)
	ds := run(c, locality, fastFIB, 20)
	if c.Entries() != 0 || changes(ds) != 0 {
		t.Fatalf("a hit as dear as the FIB: %d entries after %d changes, want off", c.Entries(), changes(ds))
	}
	if ds[0].Regime != NoLocality || ds[0].Saving > 0 {
		t.Errorf("decision %+v: want no_locality with a negative saving", ds[0])
	}
}

func TestFloodTurnsItOffAndLocalityBack(t *testing.T) {
	c := newTestController(t)
	run(c, locality, kernelFIB, 10)
	if c.Entries() == 0 {
		t.Fatal("did not turn on under locality")
	}
	ds := run(c, flood, kernelFIB, 10)
	if c.Entries() != 0 {
		t.Fatalf("under a flood: %d entries, want off", c.Entries())
	}
	if !ds[2].Changed || ds[2].Regime != NoLocality {
		t.Errorf("want off at the third flood interval, regime no_locality: %+v", ds[:3])
	}
	run(c, locality, kernelFIB, 10)
	if c.Entries() != 1024 {
		t.Fatalf("locality back: %d entries, want 1024", c.Entries())
	}
}

// TestMarginalFloodKeepsTheCacheWhereItStillPays: 95% one-packet destinations in front
// of the kernel FIB: the largest cache still hits 3.4% of packets and saves more than
// the margin, so the controller keeps one, at the maximum size.
func TestMarginalFloodKeepsTheCacheWhereItStillPays(t *testing.T) {
	c := newTestController(t)
	ds := run(c, traffic{lookups: 100_000, ws: 95_000}, kernelFIB, 10)
	if c.Entries() != 1<<16 || ds[len(ds)-1].Saving <= 7 {
		t.Fatalf("95%% flood: %d entries, last decision %+v; want the maximum, saving more than the 7 ns margin", c.Entries(), ds[len(ds)-1])
	}
}

func TestGrowsWhenUndersized(t *testing.T) {
	c := newTestController(t)
	run(c, locality, kernelFIB, 10)
	bigger := traffic{lookups: 400_000, ws: 12_000}
	ds := run(c, bigger, kernelFIB, 60)
	if c.Entries() != 16384 {
		t.Fatalf("working set 12,000: %d entries, want 16384 (the first size that holds it)", c.Entries())
	}
	for _, d := range ds {
		if d.Changed && d.Regime != Undersized {
			t.Errorf("a change with regime %s, want undersized: %+v", d.Regime, d)
		}
	}
	if n := changes(ds); n != 4 {
		t.Errorf("%d changes, want 4 doublings (1024 -> 16384)", n)
	}
}

// A target hit rate is enough: the cache stops growing once it reaches it, though
// ghost hits say a bigger one would hit more.
func TestTargetHitRateStopsGrowth(t *testing.T) {
	c, err := NewController(Config{MinEntries: 512, MaxEntries: 1 << 16, TargetHitRate: 0.5, Margin: 0.01, Confirm: 3, Hold: 2})
	if err != nil {
		t.Fatal(err)
	}
	run(c, locality, kernelFIB, 10)
	bigger := traffic{lookups: 400_000, ws: 12_000}
	ds := run(c, bigger, kernelFIB, 60)
	// 4096 entries hit 32%, 8192 hit 65%: the first size at or above 50%.
	if c.Entries() != 8192 {
		t.Fatalf("target 50%%, working set 12,000: %d entries, want 8192", c.Entries())
	}
	if last := ds[len(ds)-1]; last.Regime != Pays || last.HitRate < 0.5 {
		t.Errorf("last decision %+v: want pays at a hit rate of at least 50%%", last)
	}
}

func TestShrinksWhenOversized(t *testing.T) {
	c := newTestController(t)
	run(c, traffic{lookups: 400_000, ws: 12_000}, kernelFIB, 10)
	if c.Entries() != 32768 {
		t.Fatalf("setup: %d entries, want 32768", c.Entries())
	}
	run(c, traffic{lookups: 100_000, ws: 300}, kernelFIB, 80)
	if c.Entries() != 1024 {
		t.Fatalf("working set 300: %d entries, want 1024 (halved while it fits in a quarter)", c.Entries())
	}
}

func TestNoFlapping(t *testing.T) {
	c := newTestController(t)
	run(c, locality, kernelFIB, 10)
	var ds []Decision
	for i := 0; i < 40; i++ {
		tr := locality
		if i%2 == 1 {
			tr = flood
		}
		ds = append(ds, c.Step(tr.stats(c.Entries()), kernelFIB))
	}
	if n := changes(ds); n != 0 {
		t.Fatalf("alternating flood and locality: %d changes, want none", n)
	}
}

func TestIdleKeepsTheSize(t *testing.T) {
	c := newTestController(t)
	run(c, locality, kernelFIB, 10)
	ds := run(c, traffic{lookups: 10, ws: 10}, kernelFIB, 20)
	if c.Entries() != 1024 || changes(ds) != 0 || ds[0].Regime != Idle {
		t.Fatalf("10 packets an interval: %d entries, %d changes, regime %s; want 1024, 0, idle", c.Entries(), changes(ds), ds[0].Regime)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{MinEntries: 500, MaxEntries: 1024, Confirm: 1},
		{MinEntries: 1024, MaxEntries: 512, Confirm: 1},
		{MinEntries: 512, MaxEntries: 1024, Confirm: 0},
		{MinEntries: 512, MaxEntries: 1024, Confirm: 1, Margin: -1},
	} {
		if _, err := NewController(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// TestCostsAt interpolates the cost curve on the log of the working set.
func TestCostsAt(t *testing.T) {
	c := Costs{Hit: 40, Miss: 30, FIB: 100, Curve: []CostPoint{{64, 40, 30, 100}, {1024, 50, 50, 200}, {16384, 80, 150, 400}}}
	for _, tc := range []struct {
		ws, hit, miss, fib float64
	}{{1, 40, 30, 100}, {64, 40, 30, 100}, {256, 45, 40, 150}, {1024, 50, 50, 200}, {4096, 65, 100, 300}, {1e6, 80, 150, 400}} {
		got := c.At(tc.ws)
		if math.Abs(got.Hit-tc.hit) > 1e-9 || math.Abs(got.FIB-tc.fib) > 1e-9 || math.Abs(got.Miss-tc.miss) > 1e-9 {
			t.Errorf("At(%v) = %+v, want hit %v, miss %v, FIB %v", tc.ws, got, tc.hit, tc.miss, tc.fib)
		}
	}
	if flat := (Costs{Hit: 1, Miss: 2, FIB: 3}); flat.At(1e6).FIB != 3 {
		t.Error("costs without a curve changed with the working set")
	}
}

// TestMixedFloodStaysOff: traffic whose working set predicts that half the packets
// would hit, while on, the cache measures a fifth (one-packet destinations the
// working set cannot tell from flows): it goes off, and off, it remembers, staying off
// while the traffic looks the same, until the working set changes.
func TestMixedFloodStaysOff(t *testing.T) {
	c := newTestController(t)
	costs := Costs{Hit: 40, Miss: 30, FIB: 150, Curve: []CostPoint{{64, 40, 30, 150}, {16384, 100, 60, 800}}}
	mixed := func() Stats {
		s := Stats{Lookups: 100_000, WorkingSet: 50_000}
		if c.Entries() > 0 {
			s.Hits, s.HitWorkingSet = 20_000, 64
		}
		return s
	}
	var ds []Decision
	for i := 0; i < 3; i++ {
		ds = append(ds, c.Step(mixed(), costs))
	}
	if c.Entries() == 0 {
		t.Fatalf("the working set alone predicts hits, but the cache stayed off: %+v", ds)
	}
	for i := 0; i < 6; i++ {
		ds = append(ds, c.Step(mixed(), costs))
	}
	if c.Entries() != 0 {
		t.Fatalf("on, with hits saving less than the misses cost: still %d entries: %+v", c.Entries(), ds[3:])
	}
	for i := 0; i < 20; i++ {
		d := c.Step(mixed(), costs)
		if d.Changed || c.Entries() != 0 || !strings.Contains(d.Reason, "until the traffic changes") {
			t.Fatalf("off after measuring no locality, same traffic, interval %d: %+v: want off, remembered", i, d)
		}
	}
	run(c, locality, costs, 4)
	if c.Entries() == 0 {
		t.Fatal("the traffic changed to flows over 500 destinations, but the cache stayed off")
	}
}
