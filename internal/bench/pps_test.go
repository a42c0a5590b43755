package bench

import (
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/internal/table"
)

// BenchmarkPPS forwards 64-byte frames through veth with the router in each mode, on
// the first 50,000 routes of the 2026 table: the full run is
// `go run ./internal/bench/fibbench -pps`.
func BenchmarkPPS(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for BPF and namespaces")
	}
	routes, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	routes = routes[:50_000]
	traces := Traces(routes, 1<<16, 2)
	s, err := NewPPSSetup(routes, traces[0].Addrs)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tr := range traces {
			if err := s.SetTrace(tr.Addrs); err != nil {
				b.Fatal(err)
			}
			for _, m := range PPSModes {
				pps, err := s.Measure(m, 200_000)
				if err != nil {
					b.Fatal(err)
				}
				if i == b.N-1 {
					b.ReportMetric(pps/1e6, "Mpps-"+tr.Name+"-"+ppsShort(m))
				}
			}
		}
	}
}
