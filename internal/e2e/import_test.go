package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// TestImportRules: BIRD announces, beside the skeleton's table, a crafted feed that
// breaks one import rule per route (special-purpose space, the default route, too
// long, too short, reserved ASNs, a 101-AS path) and valid routes. Every refused
// route is counted with its reason in /metrics, absent from the FIB, and datagrams to
// it are not forwarded; the valid ones are forwarded to the sink.
func TestImportRules(t *testing.T) {
	ctx := context.Background()
	sk := startSkeleton(t, lab.SkeletonConfig{Crafted: true})
	want := map[string]float64{}
	valid := 0
	for _, r := range lab.CraftedRoutes {
		if r.Reason == "" {
			valid++
		} else {
			want[r.Reason]++
		}
	}
	v4 := len(lab.AllRoutes()) + 1 + valid // +1: the RFC 8950 route over the IPv6 session
	var m map[string]float64
	err := lab.WaitFor(ctx, 60*time.Second, fmt.Sprintf("%d IPv4 routes and every refusal counted", v4), func() (bool, error) {
		var err error
		if m, err = sk.Metrics(); err != nil {
			return false, err
		}
		if m[`fibfleet_fib_routes{family="ipv4"}`] != float64(v4) {
			return false, nil
		}
		for reason, n := range want {
			if m[fmt.Sprintf(`fibfleet_bgp_import_refused_total{neighbor=%q,reason=%q}`, lab.UpstreamAddr, reason)] != n {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v: routes %v, refused %v", err, m[`fibfleet_fib_routes{family="ipv4"}`], refusedCounts(m))
	}
	sink, err := sk.Listen(sk.Sink1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lab.CraftedRoutes {
		dst := r.Prefix.Addr().Next()
		if r.Prefix.Bits() == 0 {
			dst = netip.MustParseAddr("4.4.4.4")
		}
		l, err := apiGet[nodeapi.Lookup](sk.Get, "/api/v1/lookup?addr="+dst.String())
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Found && l.Prefix == r.Prefix; got != (r.Reason == "") {
			t.Errorf("%s (%s): the FIB matches %v (found %v), want it there only if valid", r.Prefix, r.Reason, l.Prefix, l.Found)
		}
		if r.Prefix.Bits() == 0 {
			continue
		}
		if err := sk.Send(dst, 20); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range lab.CraftedRoutes {
		dst := r.Prefix.Addr().Next()
		if r.Reason == "" {
			if err := lab.WaitFor(ctx, 10*time.Second, "datagrams to "+dst.String(), func() (bool, error) { return sink.Count(dst) >= 20, nil }); err != nil {
				t.Errorf("valid %s: %v", r.Prefix, err)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // what the router would have forwarded has arrived
	for _, r := range lab.CraftedRoutes {
		if dst := r.Prefix.Addr().Next(); r.Reason != "" && sink.Count(dst) != 0 {
			t.Errorf("refused %s (%s): %d datagrams forwarded to the sink", r.Prefix, r.Reason, sink.Count(dst))
		}
	}
}

func refusedCounts(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if len(k) > 34 && k[:34] == "fibfleet_bgp_import_refused_total{" && v > 0 {
			out[k] = v
		}
	}
	return out
}
