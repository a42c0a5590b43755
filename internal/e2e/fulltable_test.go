package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestFullTableBGP has BIRD 2 send the whole real 2026 table, with real AS paths and
// communities (table.Attrs2014), to the node over eBGP and checks that every prefix is
// in the XDP dataplane (looked up through the node's pinned maps by the BPF probe) and
// that routes carry their attributes into the node; it logs the node's convergence
// times and peak RSS (bench.MeasureConvergence). The figures against BIRD 2 loading
// the same table are benchmarks' (fibbench -convergence, the median of several runs,
// and BenchmarkUpstreamsLoad): loading it here too took 40-50 s of the suite.
func TestFullTableBGP(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	testutil.Need(t, testutil.Have("bird") && testutil.Have("birdc"), "needs BIRD 2 (make test installs bird2)")
	all, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes := bench.LabTable(all)
	model, err := table.Attrs2014()
	if err != nil {
		t.Fatal(err)
	}
	sets, of := model.Assign(routes)
	check := func(sk *lab.Skeleton) error {
		// The attributes arrived: 20 routes' AS paths (the upstream's AS, then the
		// model's) and communities as the node holds them.
		for i := 0; i < len(routes); i += max(1, len(routes)/20) {
			var got nodeapi.Routes
			b, err := sk.Router.HTTPGet(lab.MetricsAddr, "/api/v1/routes?q="+routes[i].Prefix.String())
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &got); err != nil || len(got.Paths) != 1 {
				return fmt.Errorf("routes of %s: %s (%v)", routes[i].Prefix, b, err)
			}
			want := sets[of[i]]
			p := got.Paths[0]
			if !slices.Equal(p.ASPath, append([]uint32{lab.UpstreamASN}, want.Path...)) || len(p.Communities) != len(want.Communities) {
				return fmt.Errorf("%s: AS path %v with %d communities, want %v with %d", routes[i].Prefix, p.ASPath, len(p.Communities), want.Path, len(want.Communities))
			}
		}
		probe, err := dataplane.NewPinnedProbe("", sk.NodeName, len(routes)+1)
		if err != nil {
			return err
		}
		defer probe.Close()
		rng := rand.New(rand.NewPCG(1, 2))
		addrs := []netip.Addr{netip.MustParseAddr("198.51.100.1")} // via 10.11.1.2, like the table
		for _, r := range routes {
			b := r.Prefix.Addr().As4()
			x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			x |= rng.Uint32() & uint32(uint64(1)<<(32-r.Prefix.Bits())-1)
			addrs = append(addrs, addrOf(x))
		}
		out := make([]uint32, len(addrs))
		if _, err := probe.Lookup(dataplane.MechFIB4, addrs, out); err != nil {
			return err
		}
		if out[0] == 0 {
			return fmt.Errorf("198.51.100.1 has no route in the dataplane")
		}
		bad := 0
		for i, id := range out {
			if id != out[0] {
				if bad++; bad <= 5 {
					t.Errorf("%s: dataplane answers %#x, want nexthop %d (10.11.1.2)", addrs[i], id, out[0])
				}
			}
		}
		if bad > 0 {
			return fmt.Errorf("%d of %d table prefixes wrong in the dataplane", bad, len(routes))
		}
		t.Logf("every one of the %d table prefixes answers nexthop %d in the dataplane", len(routes), out[0])
		return nil
	}
	c, err := bench.MeasureConvergence(context.Background(), build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node"), t.TempDir(), routes, bench.ConvergenceOptions{Attrs: &model, NoBird: true}, check)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d routes in %d attribute sets; node: End-of-RIB in GoBGP %v after Established, dataplane complete %v (lag %v), kernel sync %v, peak RSS %s, peak Go heap %.0f MB, CPU %v",
		len(routes), len(sets), c.NodeBGP, c.NodeFIB, c.NodeLag, c.NodeKernel, c.NodeRSS, c.NodeHeapPeak/1e6, c.NodeCPU)
}

// TestFullTableBGPv6 has BIRD 2 send the whole real 2026 IPv6 table to the node over
// an IPv6 session and checks that every prefix is in the XDP dataplane (looked up
// through the node's pinned maps by the BPF probe running the production IPv6
// lookup), and that the node reports the load complete with the time it took.
func TestFullTableBGPv6(t *testing.T) {
	all, err := table.Real2026v6()
	if err != nil {
		t.Fatal(err)
	}
	var routes []table.Route
	for _, r := range all {
		overlaps := false
		for _, s := range lab.SkeletonRoutes6 {
			overlaps = overlaps || r.Prefix.Overlaps(s.Prefix)
		}
		if !overlaps {
			routes = append(routes, r)
		}
	}
	sk := startSkeleton(t, lab.SkeletonConfig{Table6: routes})
	total := float64(len(routes) + len(lab.SkeletonRoutes6))
	peer := `{neighbor="` + lab.UpstreamAddr6 + `"}`
	var m map[string]float64
	err = lab.WaitFor(context.Background(), 3*time.Minute, "the node to report BIRD's IPv6 dump complete", func() (bool, error) {
		var err error
		m, err = sk.Metrics()
		return err == nil && m[`fibfleet_bgp_load_complete`+peer] == 1, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m[`fibfleet_fib_routes{family="ipv6"}`]; got != total {
		t.Fatalf("dump complete with %v IPv6 routes in the FIB, want %v", got, total)
	}
	t.Logf("IPv6 table of %d prefixes: End-of-RIB in GoBGP %.2f s after Established, dataplane complete %.2f s (lag %.6f s); %v keys, %v pending",
		len(routes), m[`fibfleet_bgp_load_duration_seconds{neighbor="`+lab.UpstreamAddr6+`",stage="bgp"}`],
		m[`fibfleet_bgp_load_duration_seconds{neighbor="`+lab.UpstreamAddr6+`",stage="dataplane"}`], m[`fibfleet_fib_load_lag_seconds`+peer],
		m[`fibfleet_fib_ipv6_hash{kind="keys"}`], m[`fibfleet_fib_ipv6_hash{kind="pending"}`])
	// A key that found both buckets full is placed by the node's retry tick.
	err = lab.WaitFor(context.Background(), 30*time.Second, "no pending IPv6 keys", func() (bool, error) {
		m, err := sk.Metrics()
		return err == nil && m[`fibfleet_fib_ipv6_hash{kind="pending"}`] == 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	probe, err := dataplane.NewPinnedProbe6("", sk.NodeName, len(routes)+1)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	addrs := []netip.Addr{lab.SkeletonRoutes6[0].Prefix.Addr().Next()} // via fd00:11:1::2, like the table
	for _, r := range routes {
		addrs = append(addrs, bench.RandomIn6(rng, r.Prefix))
	}
	out := make([]uint32, len(addrs))
	if _, err := probe.Lookup(dataplane.Mech6FIB, addrs, out); err != nil {
		t.Fatal(err)
	}
	if out[0] == 0 {
		t.Fatalf("%s has no route in the dataplane", addrs[0])
	}
	bad := 0
	for i, id := range out {
		if id != out[0] {
			if bad++; bad <= 5 {
				t.Errorf("%s: dataplane answers %#x, want nexthop %d (fd00:11:1::2)", addrs[i], id, out[0])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d table prefixes wrong in the dataplane", bad, len(routes))
	}
	t.Logf("every one of the %d IPv6 table prefixes answers nexthop %d in the dataplane", len(routes), out[0])
}
