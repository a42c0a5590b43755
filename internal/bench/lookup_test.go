package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// smallSetup loads the first 50,000 routes of the 2026 table three ways, for traces
// of up to 64k addresses: the benchmarks' small size (fibbench runs them full).
func smallSetup(b *testing.B) *LookupSetup {
	b.Helper()
	testutil.Need(b, os.Geteuid() == 0, "needs root for BPF and namespaces")
	routes, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewLookupSetup(routes[:50_000], 1<<16)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkLookup runs the lookup comparison small: the full run is
// `go run ./internal/bench/fibbench`.
func BenchmarkLookup(b *testing.B) {
	s := smallSetup(b)
	routes := s.Routes
	traces := Traces(routes, 1<<16, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Run(traces, 1)
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			for _, r := range res {
				b.ReportMetric(r.Median, "ns/lookup-"+r.Trace+"-"+shortName(r.Mechanism))
			}
		}
	}
}

// BenchmarkCache runs the cache modes comparison small (off, fixed 512, auto; each
// IPv4 FIB, two destination counts, 64k packets, first 50,000 routes): the full run
// is `fibbench -cache`.
func BenchmarkCache(b *testing.B) {
	s := smallSetup(b)
	cfg := ModeConfig{Dests: []int{100, 100_000}, Zipfs: []float64{0}, Packets: 1 << 16, Runs: 1, Intervals: 8, Fixed: 512, Min: 1 << 10, Max: 1 << 16}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range s.CacheTargets() {
			costs, err := cache.Calibrate(t.Runner, Destinations(t.Routes, cache.CalibrationDestinations, 1), 1)
			if err != nil {
				b.Fatal(err)
			}
			rows, err := RunModes(t, costs, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if i == b.N-1 {
				for _, r := range rows {
					name := strings.ReplaceAll(t.Name, " ", "-")
					b.ReportMetric(r.AutoRatio, fmt.Sprintf("auto/off-%s-D%d", name, r.Dests))
					b.ReportMetric(r.FixedRatio, fmt.Sprintf("fixed512/off-%s-D%d", name, r.Dests))
				}
			}
		}
	}
}

// BenchmarkCacheFlood runs the flood comparison small (`fibbench -cache` runs it full):
// a 90% flood in front of bpf_fib_lookup.
func BenchmarkCacheFlood(b *testing.B) {
	s := smallSetup(b)
	t := s.CacheTargets()[1]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		costs, err := cache.Calibrate(t.Runner, Destinations(t.Routes, cache.CalibrationDestinations, 1), 1)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := RunFlood(t, costs, 1<<12, 1000, 1<<16, 1, 8, 1.2, []float64{0.9})
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			b.ReportMetric(rows[0].LegitHit/rows[0].NoFlood, "legit-hit-kept-flood90")
			b.ReportMetric(rows[0].LegitHitNoAdmit/rows[0].NoFlood, "legit-hit-kept-flood90-no-admission")
			b.ReportMetric(rows[0].Fixed/rows[0].Off, "fixed/off-flood90")
			b.ReportMetric(rows[0].Auto/rows[0].Off, "auto/off-flood90")
		}
	}
}
