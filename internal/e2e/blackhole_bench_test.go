package e2e

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/testutil"
	"github.com/fibfleet/fibfleet/rpki"
)

// BenchmarkBlackhole times a fleet blackhole from its write to etcd (what ctl
// blackhole add does) until every node of a fleet of three holds it in its FIB as a
// blackhole, and its removal until none does, b.N times; each node's FIB is polled
// through its API every millisecond (the resolution). Target: under 1 s.
func BenchmarkBlackhole(b *testing.B) {
	fl, store := startFleet(b, lab.FleetConfig{})
	if err := fl.WaitFormed(90*time.Second, 4, 3); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p := netip.MustParsePrefix("198.51.100.99/32")
	// all waits until every node's FIB holds p as a blackhole, or none does.
	all := func(want bool) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for _, n := range fl.Nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Since(start) < 10*time.Second {
					l, err := apiGet[nodeapi.Lookup](n.Get, "/api/v1/lookup?addr="+p.Addr().String())
					if err == nil && (l.Found && l.Blackhole && l.Prefix == p) == want {
						return
					}
					time.Sleep(time.Millisecond)
				}
				b.Errorf("%s: blackhole %v not in its FIB within 10 s", n.Name, want)
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var add, del []float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := store.AddBlackhole(ctx, cluster.Blackhole{Prefix: p}); err != nil {
			b.Fatal(err)
		}
		all(true)
		add = append(add, time.Since(start).Seconds()*1000)
		start = time.Now()
		if _, err := store.DeleteBlackhole(ctx, p); err != nil {
			b.Fatal(err)
		}
		all(false)
		del = append(del, time.Since(start).Seconds()*1000)
	}
	b.ReportMetric(bench.Median(add), "ms-add-to-all")
	b.ReportMetric(bench.Median(del), "ms-del-to-all")
	b.ReportMetric(slices.Max(add), "ms-add-max")
}

// BenchmarkROV loads a table without route origin validation and with it, against
// the real VRPs and against VRPs synthesized from the table itself (half as many as
// its routes; rpki.invalid mark, so that every run ends with the whole table), b.N
// rounds in rotating order, and reports each ratio of the medians to no validation
// (the target: at most 1.15x). CI runs it once at a tiny size; the full run is `go run
// ./internal/bench/fibbench -rov-ab`.
func BenchmarkROV(b *testing.B) {
	testutil.Need(b, testutil.Have("stayrtr"), "needs stayrtr (make test installs it)")
	routes := benchTable(b, 20000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	real, err := bench.RealVRPs()
	if err != nil {
		b.Fatal(err)
	}
	synth, err := bench.SynthesizeVRPs(len(routes)/2, 1, routes)
	if err != nil {
		b.Fatal(err)
	}
	sets := [][]rpki.VRP{nil, real, synth}
	secs := make([][]float64, len(sets))
	for i := range b.N {
		for k := range sets {
			j := (i + k) % len(sets)
			opts := bench.ConvergenceOptions{NoBird: true, VRPs: sets[j]}
			if sets[j] != nil {
				opts.RPKIInvalid = "mark"
			}
			c, err := bench.MeasureConvergence(context.Background(), node, b.TempDir(), routes, opts, nil)
			if err != nil {
				b.Fatal(err)
			}
			if sets[j] != nil && c.VRPsAtEstablished == 0 {
				b.Logf("run %d with %d VRPs: none had arrived when the session came up", i, len(sets[j]))
			}
			secs[j] = append(secs[j], c.NodeFIB.Seconds())
		}
	}
	b.ReportMetric(bench.Median(secs[0]), "s-no-rov")
	b.ReportMetric(bench.Median(secs[1])/bench.Median(secs[0]), "x-real/none")
	b.ReportMetric(bench.Median(secs[2])/bench.Median(secs[0]), "x-synth/none")
}

// BenchmarkVRPChange times a VRP change at the validator (its file rewritten: stayrtr
// reads it every second and notifies the node) until the dataplane follows: a valid
// route turned invalid leaves the FIB, then back. stayrtr's one-second poll is inside
// the figure (half a second on average); the node's own share is the rest.
func BenchmarkVRPChange(b *testing.B) {
	testutil.Need(b, testutil.Have("stayrtr"), "needs stayrtr (make test installs it)")
	testutil.Need(b, testutil.Have("bird") && testutil.Have("birdc"), "needs BIRD 2 (make test installs bird2)")
	vrp := func(as uint32) []rpki.VRP {
		return []rpki.VRP{{Prefix: netip.MustParsePrefix("1.1.1.0/24"), MaxLength: 24, ASN: as}}
	}
	sk := startSkeleton(b, lab.SkeletonConfig{VRPs: vrp(lab.UpstreamASN)})
	in := func(want bool) time.Duration {
		start := time.Now()
		err := lab.WaitFor(context.Background(), 30*time.Second, "the FIB to follow the VRP change", func() (bool, error) {
			l, err := apiGet[nodeapi.Lookup](sk.Get, "/api/v1/lookup?addr=1.1.1.1")
			return err == nil && l.Found == want, err
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	in(true)
	var out, back []float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := sk.WriteVRPs(vrp(64999)); err != nil {
			b.Fatal(err)
		}
		in(false)
		out = append(out, time.Since(start).Seconds()*1000)
		start = time.Now()
		if err := sk.WriteVRPs(vrp(lab.UpstreamASN)); err != nil {
			b.Fatal(err)
		}
		in(true)
		back = append(back, time.Since(start).Seconds()*1000)
	}
	b.ReportMetric(bench.Median(out), "ms-to-invalid")
	b.ReportMetric(bench.Median(back), "ms-to-valid")
}

// BenchmarkROVLate gives the validator VRPs synthesized from the table (half as
// many as its routes) after the table is in the FIB, all not found (sessions do not
// wait for validators), and reports the set's transfer to the node (what waiting
// would delay every session by, at least) and the re-check until the invalid routes
// left the FIB (what not waiting costs, on top). CI runs it once at a tiny size; the
// full run is `go run ./internal/bench/fibbench -rov-late`.
func BenchmarkROVLate(b *testing.B) {
	testutil.Need(b, testutil.Have("stayrtr"), "needs stayrtr (make test installs it)")
	routes := benchTable(b, 20000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	synth, err := bench.SynthesizeVRPs(len(routes)/2, 1, routes)
	if err != nil {
		b.Fatal(err)
	}
	var tr, rc []float64
	for range b.N {
		l, err := bench.MeasureLateVRPs(context.Background(), node, b.TempDir(), routes, synth)
		if err != nil {
			b.Fatal(err)
		}
		if l.Invalid == 0 {
			b.Fatal("the synthesized VRPs make no route invalid: nothing to re-check")
		}
		tr, rc = append(tr, l.Transfer.Seconds()), append(rc, l.Recheck.Seconds())
	}
	b.ReportMetric(bench.Median(tr), "s-transfer")
	b.ReportMetric(bench.Median(rc), "s-recheck")
}
