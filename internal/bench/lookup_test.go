package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
)

// smallSetup loads the first 50,000 routes of the 2026 table three ways, for traces
// of up to 64k addresses: the benchmarks' small size (fibbench runs them full).
func smallSetup(b *testing.B) *LookupSetup {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root for BPF and namespaces")
	}
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

// BenchmarkCache runs the destination cache comparison small: the first 50,000 routes,
// two destination counts, 64k packets: the full run is `fibbench -cache`.
func BenchmarkCache(b *testing.B) {
	s := smallSetup(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := s.RunCache([]int{100, 100_000}, []int{512, 1 << 14}, 1<<16, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			for _, r := range rows {
				b.ReportMetric(r.Cached[1]/r.Off, fmt.Sprintf("cached16k/off-%s-D%d", shortName(r.Backend), r.Dests))
			}
		}
	}
}

// BenchmarkCacheFlood runs the flood comparison small (`fibbench -cache` runs it full).
func BenchmarkCacheFlood(b *testing.B) {
	s := smallSetup(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := s.RunFlood(dataplane.MechKernel, 1<<12, 1000, 1<<16, 1, 1.2, []float64{0.9})
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			b.ReportMetric(rows[0].LegitHit/rows[0].NoFlood, "legit-hit-kept-flood90")
			b.ReportMetric(rows[0].LegitHitNoAdmit/rows[0].NoFlood, "legit-hit-kept-flood90-no-admission")
		}
	}
}
