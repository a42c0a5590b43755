package cache

import (
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/dcache"
)

// fakeCache is a dataplane cache whose counters the test sets.
type fakeCache struct {
	stats   [2]dcache.Stats
	ws      [2]float64
	entries [2]int
	resizes int
}

func (f *fakeCache) Stats(fam dcache.Family) (dcache.Stats, error) {
	return f.stats[fam], nil
}
func (f *fakeCache) WorkingSet(fam dcache.Family, reset bool) (float64, error) {
	return f.ws[fam], nil
}
func (f *fakeCache) HitWorkingSet(fam dcache.Family, reset bool) (float64, error) {
	return 0, nil
}
func (f *fakeCache) Resize(fam dcache.Family, n int) error {
	f.entries[fam] = n
	f.resizes++
	return nil
}
func (f *fakeCache) Entries(fam dcache.Family) int { return f.entries[fam] }

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string // "" for valid
	}{
		{Policy{Mode: Off}, ""},
		{Policy{Mode: Fixed, Entries: [2]int{512, 0}}, ""},
		{Policy{Mode: Auto, MinEntries: 1024, MaxEntries: 1 << 16}, ""},
		{Policy{Mode: "sometimes"}, "use off, fixed or auto"},
		{Policy{Mode: Fixed, Entries: [2]int{500, 0}}, "cache.entries_v4 500"},
		{Policy{Mode: Fixed, Entries: [2]int{0, 1 << 30}}, "cache.entries_v6"},
		{Policy{Mode: Auto, MinEntries: 0, MaxEntries: 1024}, "cache.min_entries 0"},
		{Policy{Mode: Auto, MinEntries: 4096, MaxEntries: 1024}, "above cache.max_entries"},
		{Policy{Mode: Auto, MinEntries: 1024, MaxEntries: 4096, TargetHitRate: 0.9}, ""},
		{Policy{Mode: Auto, MinEntries: 1024, MaxEntries: 4096, TargetHitRate: 1.5}, "cache.target_hit_rate 1.5"},
		{Policy{Mode: Auto, MinEntries: 1024, MaxEntries: 4096, TargetHitRate: -0.1}, "cache.target_hit_rate -0.1"},
	} {
		err := tc.p.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}

// TestSizerModes applies each mode and ticks through intervals of fake counters.
func TestSizerModes(t *testing.T) {
	dp := &fakeCache{}
	s := NewSizer(dp, nil)
	if err := s.Apply(Policy{Mode: Fixed, Entries: [2]int{512, 2048}}); err != nil {
		t.Fatal(err)
	}
	if dp.entries != [2]int{512, 2048} {
		t.Fatalf("fixed: entries %v, want [512 2048]", dp.entries)
	}
	if err := s.Apply(Policy{Mode: Fixed, Entries: [2]int{3, 0}}); err == nil || dp.entries != [2]int{512, 2048} {
		t.Fatalf("a bad policy: %v, entries %v: want an error and nothing changed", err, dp.entries)
	}
	if err := s.Apply(Policy{Mode: Auto, MinEntries: 1024, MaxEntries: 1 << 14}); err != nil {
		t.Fatal(err)
	}
	if dp.entries != [2]int{} {
		t.Fatalf("auto starts off, entries %v", dp.entries)
	}
	// Locality on IPv4: 100,000 packets over 500 destinations per interval.
	tick := func() [2]Report {
		t.Helper()
		dp.stats[0].Lookups += 100_000
		dp.ws[0] = 500
		r, err := s.Tick()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := tick()
	if r[0].Decision.Regime != Idle || !strings.Contains(r[0].Decision.Reason, "not calibrated") {
		t.Fatalf("uncalibrated: %+v, want idle until there is a cost model", r[0].Decision)
	}
	s.SetCosts(dcache.IPv4, kernelFIB)
	for i := 0; i < DefaultConfirm; i++ {
		r = tick()
	}
	if r[0].Entries == 0 || !r[0].Decision.Changed || r[0].Interval.Lookups != 100_000 {
		t.Fatalf("after %d intervals of locality: %+v, want the cache on", DefaultConfirm, r[0])
	}
	if r[1].Entries != 0 || r[1].Decision.Regime != Idle {
		t.Fatalf("IPv6 without traffic: %+v, want off and idle", r[1])
	}
	if err := s.Apply(Policy{Mode: Off}); err != nil || dp.entries != [2]int{} {
		t.Fatalf("off: %v, entries %v", err, dp.entries)
	}
}
