package bench

import (
	"errors"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// BenchmarkPPS forwards 64-byte frames through veth with the router in each mode, on
// the first 50,000 routes of the 2026 table: the full run is
// `go run ./internal/bench/fibbench -pps`.
func BenchmarkPPS(b *testing.B) {
	benchPPS(b, table.Real2026, 50_000, false)
}

// BenchmarkPPS6 is BenchmarkPPS over IPv6, on the first 50,000 routes of the 2026
// IPv6 table: the full run is `go run ./internal/bench/fibbench -pps -table 2026v6`.
func BenchmarkPPS6(b *testing.B) {
	benchPPS(b, table.Real2026v6, 50_000, true)
}

func benchPPS(b *testing.B, load func() ([]table.Route, error), n int, v6 bool) {
	testutil.Need(b, os.Geteuid() == 0, "needs root for BPF and namespaces")
	routes, err := load()
	if err != nil {
		b.Fatal(err)
	}
	routes = routes[:min(n, len(routes))]
	var traces []Trace
	if v6 {
		traces = Traces6(routes, 1<<16, 2)
	} else {
		traces = Traces(routes, 1<<16, 2)
	}
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
			for _, m := range PPSModesFor(v6) {
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

// BenchmarkXmitMonitorCost forwards with fibfleet's FIB without and with the node's
// transmit-drop counter attached (two tracing programs; one runs per devmap flush of
// up to 16 frames), interleaved b.N times: the ratio is what counting the frames the
// egress drivers drop costs the forwarding rate.
func BenchmarkXmitMonitorCost(b *testing.B) {
	testutil.Need(b, os.Geteuid() == 0, "needs root for BPF and namespaces")
	routes, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	routes = routes[:50_000]
	traces := Traces(routes, 1<<16, 1)
	s, err := NewPPSSetup(routes, traces[0].Addrs)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var off, on float64
	measureOn := func() (float64, error) {
		var mon *dataplane.XmitMonitor
		if err := s.rtr.Do(func() (err error) { mon, err = dataplane.OpenXmitMonitor(); return err }); err != nil {
			return 0, err
		}
		defer mon.Close()
		p, err := s.Measure(ModeXDPCompiled, 200_000)
		if err != nil {
			return 0, err
		}
		st, err := mon.Stats()
		if err != nil {
			return 0, err
		}
		var sent uint64
		for _, x := range st {
			sent += x.Sent
		}
		if sent == 0 {
			return 0, errors.New("the counter saw no frame sent while the router forwarded")
		}
		return p, nil
	}
	for i := 0; i < b.N; i++ {
		// Alternate which goes first, so neither gains from the other's warm-up.
		var pOff, pOn float64
		var errOff, errOn error
		if i%2 == 0 {
			pOff, errOff = s.Measure(ModeXDPCompiled, 200_000)
			pOn, errOn = measureOn()
		} else {
			pOn, errOn = measureOn()
			pOff, errOff = s.Measure(ModeXDPCompiled, 200_000)
		}
		if err := errors.Join(errOff, errOn); err != nil {
			b.Fatal(err)
		}
		off, on = off+pOff, on+pOn
	}
	b.ReportMetric(off/float64(b.N)/1e6, "Mpps-off")
	b.ReportMetric(on/float64(b.N)/1e6, "Mpps-on")
	b.ReportMetric(on/off, "ratio")
}
