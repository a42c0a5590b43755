package e2e

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// BenchmarkFailover fails the better of two upstreams (its link's carrier lost, or
// the upstream gone silent, found by BFD) under 64 flows at 6,400 datagrams/s, and
// reports the longest any flow went without a datagram, fibfleet (backup next hops,
// one write per group) against BIRD 2 and FRR 8.4 rewriting the kernel's routes; b.N failovers
// each. CI runs it once at a tiny size; the full run (10k, 100k and the whole 2026
// table) is `go run ./internal/bench/fibbench -failover`.
func BenchmarkFailover(b *testing.B) {
	prefixes := benchPrefixes(b, 2000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	testutil.Need(b, testutil.Have("nft"), "needs nft (make test installs nftables)")
	testutil.Need(b, testutil.Have("vtysh"), "needs FRR (make test installs frr, its services masked)")
	for _, c := range []struct{ router, cause string }{{"node", "link"}, {"bird", "link"}, {"frr", "link"}, {"node", "silent"}, {"bird", "silent"}, {"frr", "silent"}} {
		b.Run(c.router+"-"+c.cause, func(b *testing.B) {
			var outage []float64
			lost := 0
			for range b.N {
				r, err := bench.MeasureFailover(bench.FailoverOptions{NodeBinary: node, Dir: b.TempDir(), Prefixes: prefixes, Router: c.router,
					Cause: c.cause, Flows: 64, Rate: 6400, Log: b.Logf})
				if err != nil {
					b.Fatal(err)
				}
				outage = append(outage, float64(r.Outage)/float64(time.Millisecond))
				lost += r.Lost
			}
			b.ReportMetric(bench.Median(outage), "ms-outage")
			b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
		})
	}
}

// benchPrefixes is the first n prefixes of the 2026 table.
func benchPrefixes(b *testing.B, n int) []netip.Prefix {
	routes := benchTable(b, n)
	out := make([]netip.Prefix, len(routes))
	for i, r := range routes {
		out[i] = r.Prefix
	}
	return out
}

// BenchmarkBFDLoad loads two upstreams' tables at once with BFD at 100 ms and 50 ms
// x 3 on both sessions and counts the sessions' flaps (false failures: nothing
// failed) during the load and 2 s after it; b.N loads each. CI runs it once at a tiny
// size; the full run (the whole 2026 table, 300, 100 and 50 ms) is `go run
// ./internal/bench/fibbench -bfdload`.
func BenchmarkBFDLoad(b *testing.B) {
	prefixes := benchPrefixes(b, 2000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	for _, iv := range []time.Duration{100 * time.Millisecond, 50 * time.Millisecond} {
		b.Run(iv.String(), func(b *testing.B) {
			flaps := 0
			for range b.N {
				r, err := bench.MeasureBFDLoad(bench.BFDLoadOptions{NodeBinary: node, Dir: b.TempDir(), Prefixes: prefixes, Interval: iv, After: 2 * time.Second, Log: b.Logf})
				if err != nil {
					b.Fatal(err)
				}
				flaps += r.Flaps
			}
			b.ReportMetric(float64(flaps)/float64(b.N), "flaps/load")
		})
	}
}

// BenchmarkRestart restarts the router b.N times under 64 flows at 6,400
// datagrams/s, with two upstreams' tables in place: the node by SIGTERM, by SIGKILL
// and by an upgrade to a build whose XDP program differs, and BIRD 2 restarting
// gracefully with its kernel routes kept; it reports the datagrams lost per restart
// and the time from the new process's start to the full table again. CI runs it once
// at a tiny size; the full run (the whole 2026 table, 10 restarts each) is `go run
// ./internal/bench/fibbench -restart`.
func BenchmarkRestart(b *testing.B) {
	prefixes := benchPrefixes(b, 2000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	variant := buildTags(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node-variant", "fibfleet_variant")
	for _, c := range []struct{ router, kind string }{{"node", "sigterm"}, {"node", "sigkill"}, {"node", "upgrade"}, {"bird", "sigterm"}} {
		b.Run(c.router+"-"+c.kind, func(b *testing.B) {
			r, err := bench.MeasureRestart(bench.RestartOptions{NodeBinary: node, VariantBinary: variant, Dir: b.TempDir(), Prefixes: prefixes, Router: c.router,
				Kind: c.kind, Tries: b.N, Flows: 64, Rate: 6400, Log: b.Logf})
			if err != nil {
				b.Fatal(err)
			}
			lost := 0
			var full []float64
			for _, t := range r.Tries {
				lost += t.Lost
				full = append(full, t.Full.Seconds())
			}
			b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
			b.ReportMetric(bench.Median(full), "s-to-full")
		})
	}
}

// BenchmarkUpstreamsLoad loads a table with real attributes from one, two and four
// upstreams into the node, BIRD 2 and FRR 8.4 (the kernel forwarding), and reports the
// time from the sessions Established to the forwarding table complete, the peak RSS
// and the CPU-seconds of the router's processes; b.N loads each. CI runs it once at a
// tiny size; the full run (the whole 2026 table, medians of 3) is `go run
// ./internal/bench/fibbench -upstreams`.
func BenchmarkUpstreamsLoad(b *testing.B) {
	prefixes := benchPrefixes(b, 2000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	testutil.Need(b, testutil.Have("vtysh"), "needs FRR (make test installs frr, its services masked)")
	m, err := table.Attrs2014()
	if err != nil {
		b.Fatal(err)
	}
	for _, ups := range []int{1, 2, 4} {
		for _, router := range []string{"node", "bird", "frr"} {
			b.Run(fmt.Sprintf("%s-%d", router, ups), func(b *testing.B) {
				benchUpstreamsLoad(b, bench.UpstreamsLoadOptions{NodeBinary: node, Prefixes: prefixes, Attrs: &m, Router: router, Upstreams: ups})
			})
		}
	}
}

// BenchmarkMeshLoad loads a table with real attributes from one upstream into a
// router with two iBGP peers: fibfleet's fleet of three (n1's upstream, n2 and n3 its
// mesh peers) against BIRD 2 and FRR 8.4 sending it to two BIRDs; it reports the time
// until the router and both peers hold the table, the router's peak RSS and
// CPU-seconds (and each fleet node's); b.N loads each. CI runs it once at a tiny
// size; the full run (the whole 2026 table, medians of 3) is `go run
// ./internal/bench/fibbench -mesh`.
func BenchmarkMeshLoad(b *testing.B) {
	routes := benchTable(b, 2000)
	prefixes := benchPrefixes(b, 2000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	etcd := build(b, "go.etcd.io/etcd/server/v3", "etcd")
	testutil.Need(b, testutil.Have("vtysh"), "needs FRR (make test installs frr, its services masked)")
	m, err := table.Attrs2014()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fleet", func(b *testing.B) {
		var all, rss, cpu [3][]float64
		for range b.N {
			r, err := bench.MeasureFleetLoad(bench.FleetLoadOptions{NodeBinary: node, EtcdBinary: etcd, Dir: b.TempDir(), Routes: routes, Attrs: &m})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 3 {
				all[i] = append(all[i], r.Loaded[i].Seconds())
				rss[i] = append(rss[i], float64(r.PeakRSS[i]>>20))
				cpu[i] = append(cpu[i], r.CPU[i].Seconds())
			}
		}
		b.ReportMetric(max(bench.Median(all[0]), bench.Median(all[1]), bench.Median(all[2])), "s-load")
		for i := range 3 {
			b.ReportMetric(bench.Median(rss[i]), fmt.Sprintf("MB-peak-rss-n%d", i+1))
			b.ReportMetric(bench.Median(cpu[i]), fmt.Sprintf("cpu-s-n%d", i+1))
		}
	})
	for _, router := range []string{"bird", "frr"} {
		b.Run(router, func(b *testing.B) {
			benchUpstreamsLoad(b, bench.UpstreamsLoadOptions{NodeBinary: node, Prefixes: prefixes, Attrs: &m, Router: router, Upstreams: 1, IBGP: 2})
		})
	}
}

// benchUpstreamsLoad runs b.N loads of the dual lab (each in a directory of its own)
// and reports the medians of their time, the router's peak RSS and its CPU-seconds.
func benchUpstreamsLoad(b *testing.B, o bench.UpstreamsLoadOptions) {
	var load, rss, cpu []float64
	for range b.N {
		o.Dir = b.TempDir()
		r, err := bench.MeasureUpstreamsLoad(o)
		if err != nil {
			b.Fatal(err)
		}
		load = append(load, r.Load.Seconds())
		rss = append(rss, float64(r.PeakRSS>>20))
		cpu = append(cpu, r.CPU.Seconds())
	}
	b.ReportMetric(bench.Median(load), "s-load")
	b.ReportMetric(bench.Median(rss), "MB-peak-rss")
	b.ReportMetric(bench.Median(cpu), "cpu-s")
}
