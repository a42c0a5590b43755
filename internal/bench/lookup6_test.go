package bench

import (
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// BenchmarkLookup6 runs the IPv6 lookup comparison on the first 30,000 routes of the
// 2026 IPv6 table with 64k-address traces: the full run is
// `go run ./internal/bench/fibbench -v6`.
func BenchmarkLookup6(b *testing.B) {
	testutil.Need(b, os.Geteuid() == 0, "needs root for BPF and namespaces")
	routes, err := table.Real2026v6()
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewLookupSetup6(routes[:30_000], 1<<16, V6Layouts[0])
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	traces := Traces6(s.Routes, 1<<16, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Run(traces, 1)
		if err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			for _, r := range res {
				b.ReportMetric(r.Median, "ns/lookup-"+r.Trace+"-"+shortName6(r.Mechanism))
			}
		}
	}
}

func shortName6(m Mechanism6) string {
	return map[Mechanism6]string{Kernel6: "kernel", Stride6: "stride", Compressed6: "compressed", LPMTrie6: "lpm", Loop6: "loop", FIB6: "fibfleet"}[m]
}
