package e2e

import (
	"log/slog"
	"net/netip"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestCacheClosedLoop runs the sizing controller on the real dataplane's measurements
// (the production cache code in a probe, in front of the BPF LPM trie holding 100,000
// real routes, where a cache pays) with costs calibrated on this machine, while
// traffic changes regime: flows with locality, then a flood of one-packet random
// destinations, then locality again. Each interval is a trace pushed through
// BPF_PROG_TEST_RUN, then one Tick. The controller must turn the cache on for
// locality, off under the flood, and on again, each for the reason it gives.
func TestCacheClosedLoop(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces and BPF (CI runs as root)")
	all, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes := all[:100_000]
	const interval = 40_000
	s, err := bench.NewLookupSetup(routes, max(interval, cache.CalibrationTrace))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer dataplane.OnOneCPU()()
	costs, err := cache.Calibrate(s.Runner(dataplane.MechLPMCached), bench.Destinations(routes, cache.CalibrationDestinations, 1), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("calibrated costs in front of the LPM trie: %+v", costs)
	if costs.FIB <= costs.Hit {
		t.Fatalf("calibration: a hit (%.1f ns) is not cheaper than the LPM trie (%.1f ns)", costs.Hit, costs.FIB)
	}
	sizer := cache.NewSizer(s.Cache(), slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err := sizer.Apply(cache.Policy{Mode: cache.Auto, MinEntries: 1 << 10, MaxEntries: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	sizer.SetCosts(dcache.IPv4, costs)

	out := make([]uint32, interval)
	seed := uint64(100)
	phase := func(name string, intervals int, trace func(seed uint64) []netip.Addr) []cache.Report {
		t.Helper()
		var reps []cache.Report
		for i := 0; i < intervals; i++ {
			seed++
			if _, err := s.Lookup(dataplane.MechLPMCached, trace(seed), out); err != nil {
				t.Fatal(err)
			}
			r, err := sizer.Tick()
			if err != nil {
				t.Fatal(err)
			}
			v4 := r[dcache.IPv4]
			t.Logf("%s %2d: %6d entries, hits %5.1f%%, ghost %5.1f%%, working set %6.0f: %s (%s)", name, i, v4.Entries,
				100*float64(v4.Interval.Hits)/float64(v4.Interval.Lookups), 100*float64(v4.Interval.GhostHits)/float64(v4.Interval.Lookups),
				v4.WorkingSet, v4.Decision.Regime, v4.Decision.Reason)
			if v4.Interval.Lookups != interval {
				t.Fatalf("%s %d: %d lookups counted, want %d", name, i, v4.Interval.Lookups, interval)
			}
			reps = append(reps, v4)
		}
		return reps
	}
	// The same 2,000 destinations in every locality interval; fresh ones each flood.
	locality := func(seed uint64) []netip.Addr { return bench.FlowTrace(routes, 2000, interval, 1.2, 1) }
	flood := func(seed uint64) []netip.Addr { return bench.Destinations(routes, interval, seed) }

	// Each phase is long enough for Confirm intervals of agreement after the Hold of
	// the last change.
	reps := phase("locality", cache.DefaultConfirm+2, locality)
	last := reps[len(reps)-1]
	if last.Entries == 0 {
		t.Fatalf("locality: the cache is still off after %d intervals: %s", len(reps), last.Decision.Reason)
	}
	reps = phase("flood", cache.DefaultHold+cache.DefaultConfirm+2, flood)
	last = reps[len(reps)-1]
	if last.Entries != 0 || last.Decision.Regime != cache.NoLocality {
		t.Fatalf("flood: %d entries, regime %s: want off for no locality", last.Entries, last.Decision.Regime)
	}
	reps = phase("locality again", cache.DefaultHold+cache.DefaultConfirm+2, locality)
	last = reps[len(reps)-1]
	if last.Entries == 0 || last.Decision.Regime == cache.NoLocality {
		t.Fatalf("locality again: %d entries, regime %s: want the cache back on", last.Entries, last.Decision.Regime)
	}
	if h := float64(last.Interval.Hits) / float64(last.Interval.Lookups); h < 0.8 {
		t.Errorf("locality again: hit rate %.2f, want at least 0.8", h)
	}
}
