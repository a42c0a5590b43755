package bgp

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/fibfleet/fibfleet/internal/table"
)

func TestAdjInCounts(t *testing.T) {
	a := newAdjIn(0)
	p4, p6 := netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")
	for _, c := range []struct {
		p        netip.Prefix
		withdraw bool
		added    bool
		v4, v6   int
	}{
		{p4, false, true, 1, 0},
		{p4, false, false, 1, 0}, // a re-announcement (implicit replacement)
		{p6, false, true, 1, 1},
		{netip.MustParsePrefix("192.0.2.0/25"), true, false, 1, 1}, // withdrawn, never held
		{p4, true, false, 0, 1},
		{p4, true, false, 0, 1},
		{netip.MustParsePrefix("::ffff:192.0.2.0/120"), false, true, 0, 2}, // IPv6, not p4
	} {
		if got := a.apply(c.p, c.withdraw); got != c.added || len(a.seen)-a.v6 != c.v4 || a.v6 != c.v6 {
			t.Fatalf("%s withdraw=%v: added %v, %d IPv4 and %d IPv6; want %v, %d and %d", c.p, c.withdraw, got, len(a.seen)-a.v6, a.v6, c.added, c.v4, c.v6)
		}
	}
}

// BenchmarkAdjIn is what counting an upstream's prefixes costs during a full-table
// load: one set insert per announcement, and the set's memory.
func BenchmarkAdjIn(b *testing.B) {
	for _, tbl := range []struct {
		name string
		load func() ([]table.Route, error)
	}{{"ipv4-2026", table.Real2026}, {"ipv6-2026", table.Real2026v6}} {
		routes, err := tbl.load()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tbl.name, func(b *testing.B) {
			var before, after runtime.MemStats
			var a *adjIn
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				a = nil
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				a = newAdjIn(0)
				for _, r := range routes {
					a.apply(r.Prefix, false)
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			if len(a.seen) != len(routes) {
				b.Fatalf("%d prefixes counted of %d", len(a.seen), len(routes))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(routes)), "ns/prefix")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
			b.ReportMetric(float64(len(routes)), "prefixes")
			runtime.KeepAlive(a)
		})
	}
}
