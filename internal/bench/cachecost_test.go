package bench

import (
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/internal/table"
)

// BenchmarkCacheCost calibrates the destination cache's cost model (cache.Calibrate:
// what a lookup, a hit and a miss cost at 64 destinations, BPF test runs of the
// production path) in front of every FIB of both families, on the first 50,000 IPv4
// and 30,000 IPv6 routes of the 2026 tables; -benchtime Nx reports the medians of N
// rounds (docs/BENCHMARKS.md, "What the restructuring costs": 5x).
func BenchmarkCacheCost(b *testing.B) {
	s := smallSetup(b)
	routes6, err := table.Real2026v6()
	if err != nil {
		b.Fatal(err)
	}
	s6, err := NewLookupSetup6(routes6[:30_000], cache.CalibrationTrace, V6Layouts[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s6.Close)
	targets := append(s.CacheTargets(), s6.CacheTargets()...)
	b.ResetTimer()
	// Calibrate interleaves its rounds itself: b.N of them, once.
	for _, t := range targets {
		c, err := cache.Calibrate(t.Runner, Destinations(t.Routes, cache.CalibrationDestinations, 1), b.N)
		if err != nil {
			b.Fatalf("%s: %v", t.Name, err)
		}
		name := strings.ReplaceAll(t.Name, " ", "-")
		b.ReportMetric(c.FIB, "ns/lookup-"+name)
		b.ReportMetric(c.Hit, "ns/hit-"+name)
		b.ReportMetric(c.Miss, "ns/miss-extra-"+name)
	}
}
