package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/testutil"
	"github.com/fibfleet/fibfleet/rpki"
)

// TestRPKI: the node validates its upstream's routes against a real RTR server
// (stayrtr, in the upstream's namespace): RPKI-invalid routes (a wrong origin, longer
// than the VRP's max length) are refused, counted and never forwarded (packets), valid
// and not-found ones forwarded; the route API shows each state. A VRP change at the
// validator turns a valid route invalid and an invalid one valid, without a session
// reset, within seconds; the dataplane follows.
func TestRPKI(t *testing.T) {
	testutil.Need(t, testutil.Have("stayrtr"), "needs stayrtr (make test installs it)")
	ctx := context.Background()
	vrp := func(p string, max int, as uint32) rpki.VRP {
		return rpki.VRP{Prefix: netip.MustParsePrefix(p), MaxLength: max, ASN: as}
	}
	// BIRD announces every skeleton route with the path 65001.
	vrps := []rpki.VRP{
		vrp("1.1.1.0/24", 24, lab.UpstreamASN),     // valid
		vrp("9.9.9.0/24", 24, 64999),               // invalid: another origin
		vrp("100.64.0.0/16", 16, lab.UpstreamASN),  // 100.64.1.0/24 invalid: too long
		vrp("203.0.113.0/24", 24, lab.UpstreamASN), // valid
	}
	sk := startSkeleton(t, lab.SkeletonConfig{VRPs: vrps})
	lookup := func(a string) (bool, error) {
		l, err := apiGet[nodeapi.Lookup](sk.Get, "/api/v1/lookup?addr="+a)
		return l.Found, err
	}
	expect := func(what string, want map[string]bool) {
		t.Helper()
		got := map[string]bool{}
		err := lab.WaitFor(ctx, 60*time.Second, what, func() (bool, error) {
			for a := range want {
				f, err := lookup(a)
				if err != nil {
					return false, err
				}
				got[a] = f
			}
			for a, w := range want {
				if got[a] != w {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%v: in the FIB %v, want %v", err, got, want)
		}
	}
	expect("valid and not-found routes in, invalid ones out", map[string]bool{"1.1.1.1": true, "203.0.113.1": true, "198.51.100.1": true, "9.9.9.9": false, "100.64.1.1": false})
	// The upstream sessions waited for the validator's first set: every route was
	// validated as it arrived, none checked again after.
	if b, err := os.ReadFile(sk.NodeLog); err != nil || !strings.Contains(string(b), "every validator's first set is in: upstream sessions start") {
		t.Errorf("the node did not log that its upstream sessions waited for the validator (%v)", err)
	}
	m, err := sk.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	up := fmt.Sprintf(`{validator="%s"}`, lab.ValidatorAddr)
	if r := m[fmt.Sprintf(`fibfleet_bgp_import_refused_total{neighbor="%s",reason="rpki_invalid"}`, lab.UpstreamAddr)]; r != 2 || m["fibfleet_rpki_validator_up"+up] != 1 || m["fibfleet_rpki_vrps"+up] != 4 {
		t.Errorf("refused rpki_invalid %v, validator up %v, VRPs %v: want 2, 1, 4", r, m["fibfleet_rpki_validator_up"+up], m["fibfleet_rpki_vrps"+up])
	}
	routeState := func(q string) (nodeapi.RoutePath, error) {
		rs, err := apiGet[nodeapi.Routes](sk.Get, "/api/v1/routes?q="+q)
		if err == nil && len(rs.Paths) != 1 {
			err = fmt.Errorf("%d paths for %s: %+v", len(rs.Paths), q, rs.Paths)
		}
		if err != nil {
			return nodeapi.RoutePath{}, err
		}
		return rs.Paths[0], nil
	}
	for q, want := range map[string]string{"1.1.1.1": "valid", "9.9.9.9": "invalid", "198.51.100.1": "not_found"} {
		p, err := routeState(q)
		if err != nil || p.RPKI != want || (want == "invalid") != (p.Refused == "rpki_invalid") {
			t.Errorf("routes %s: %+v (%v), want rpki %s", q, p, err, want)
		}
	}
	sink1, err := sk.Listen(sk.Sink1)
	if err != nil {
		t.Fatal(err)
	}
	sink2, err := sk.Listen(sk.Sink2)
	if err != nil {
		t.Fatal(err)
	}
	valid, invalid := netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("9.9.9.9")
	for _, d := range []netip.Addr{valid, invalid} {
		if err := sk.Send(d, 20); err != nil {
			t.Fatal(err)
		}
	}
	if err := lab.WaitFor(ctx, 10*time.Second, "the valid route's packets forwarded", func() (bool, error) { return sink1.Count(valid) == 20, nil }); err != nil {
		t.Error(err)
	}
	if n := sink2.Count(invalid); n != 0 {
		t.Errorf("%d packets to %s forwarded over an RPKI-invalid route", n, invalid)
	}

	st := status(t, sk)
	var since time.Time
	for _, s := range st.Sessions {
		if s.Neighbor.String() == lab.UpstreamAddr {
			since = s.Established
		}
	}
	// The validator changes: 9.9.9.0/24 now the upstream's, 1.1.1.0/24 another's.
	vrps[0], vrps[1] = vrp("1.1.1.0/24", 24, 64999), vrp("9.9.9.0/24", 24, lab.UpstreamASN)
	if err := sk.WriteVRPs(vrps); err != nil {
		t.Fatal(err)
	}
	expect("the VRP change followed", map[string]bool{"1.1.1.1": false, "9.9.9.9": true, "203.0.113.1": true, "100.64.1.1": false})
	if err := sk.Send(invalid, 20); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, 10*time.Second, "the route turned valid forwarded", func() (bool, error) { return sink2.Count(invalid) == 20, nil }); err != nil {
		t.Error(err)
	}
	for _, s := range status(t, sk).Sessions {
		if s.Neighbor.String() == lab.UpstreamAddr && !s.Established.Equal(since) {
			t.Errorf("the upstream's session started again (%v, was %v): a VRP change must keep it", s.Established, since)
		}
	}
}
