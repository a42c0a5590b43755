package bgp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/rpki"
)

// TestOriginValidation: routes of an upstream with import rules validated against
// VRPs: an invalid one (wrong origin, too long) refused with reason rpki_invalid,
// valid and not-found ones taken; a VRP change re-checks exactly the routes it
// covers (ReimportWithin), the session kept: a valid route turned invalid leaves, an
// invalid one turned valid enters; in "mark" mode invalid routes are taken.
func TestOriginValidation(t *testing.T) {
	port := freePort(t)
	peer := netip.MustParseAddr("127.0.0.31")
	node := startNode(t, port, Neighbor{Address: peer, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true}})
	vrps := rpki.NewUnion()
	vrps.Apply(rpki.Update{Source: "v1", First: true, Added: []rpki.VRP{
		{Prefix: netip.MustParsePrefix("8.8.8.0/24"), MaxLength: 24, ASN: 15169},
		{Prefix: netip.MustParsePrefix("1.1.1.0/24"), MaxLength: 24, ASN: 13335},
		{Prefix: netip.MustParsePrefix("9.9.9.0/24"), MaxLength: 24, ASN: 19281},
	}})
	if err := node.SetOriginValidation(t.Context(), vrps, InvalidReject, 0); err != nil {
		t.Fatal(err)
	}
	st := newStream(t, node)
	feeder := newPeer(t, 65001, peer.String(), port)
	announce := feeder.announcePath
	announce("1.1.1.0/24", 13335) // valid
	announce("9.9.9.0/24", 15169) // invalid: wrong origin
	announce("8.8.8.0/24", 15169) // valid
	announce("4.4.4.0/24", 3356)  // not found
	announce("8.8.4.0/24", 15169) // not found (no VRP covers it)
	want := func(prefix string) Change {
		return Change{Prefix: netip.MustParsePrefix(prefix), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: peer}
	}
	got := map[netip.Prefix]bool{}
	for len(got) < 4 {
		c := st.next()
		if c.Withdraw || c.Prefix == netip.MustParsePrefix("9.9.9.0/24") {
			t.Fatalf("change %+v: want only the valid and not-found routes", c)
		}
		st.apply(c)
		got[c.Prefix] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for node.Refused()[peer][ReasonRPKIInvalid] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("refused %v, want one rpki_invalid", node.Refused()[peer])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if paths, err := node.Paths("1.1.1.1"); err != nil || len(paths) != 1 || paths[0].RPKI != "valid" {
		t.Errorf("Paths(1.1.1.1) = %+v, %v: want the path, valid", paths, err)
	}
	if paths, err := node.Paths("9.9.9.9"); err != nil || len(paths) != 1 || paths[0].Refused != ReasonRPKIInvalid || paths[0].RPKI != "invalid" {
		t.Errorf("Paths(9.9.9.9) = %+v, %v: want the refused path, invalid", paths, err)
	}
	up := node.Peers()[0].Established

	// The validator changes: 9.9.9.0/24 now AS15169's, 8.8.8.0/24 no longer (another AS's).
	changed := vrps.Apply(rpki.Update{Source: "v1",
		Added:   []rpki.VRP{{Prefix: netip.MustParsePrefix("9.9.9.0/24"), MaxLength: 24, ASN: 15169}, {Prefix: netip.MustParsePrefix("8.8.8.0/24"), MaxLength: 24, ASN: 64496}},
		Removed: []rpki.VRP{{Prefix: netip.MustParsePrefix("8.8.8.0/24"), MaxLength: 24, ASN: 15169}}})
	if err := node.ReimportWithin(t.Context(), changed); err != nil {
		t.Fatal(err)
	}
	st.expectAll(Change{Prefix: netip.MustParsePrefix("8.8.8.0/24"), Withdraw: true, Peer: peer}, want("9.9.9.0/24"))
	if p := node.Peers(); !p[0].Established.Equal(up) {
		t.Errorf("the session started again: re-validation must keep it")
	}
	states := node.OriginStates()
	if states["valid"] < 3 || states["invalid"] < 2 || states["not_found"] < 2 {
		t.Errorf("states counted %v", states)
	}

	// Mark mode: invalid routes taken (and counted).
	if err := node.SetOriginValidation(t.Context(), vrps, InvalidMark, 0); err != nil {
		t.Fatal(err)
	}
	if err := node.ReimportWithin(t.Context(), []netip.Prefix{netip.MustParsePrefix("8.8.8.0/24")}); err != nil {
		t.Fatal(err)
	}
	st.expect(want("8.8.8.0/24"))
}

// TestOriginValidationLower: with InvalidLower an RPKI-invalid route is taken with a
// lower local preference: alone it is the best path (the prefix stays reachable);
// beside a valid path it loses, although its AS path is shorter, and wins again
// when the valid one is withdrawn. The neighbour's own import local preference
// does not lift it.
func TestOriginValidationLower(t *testing.T) {
	port := freePort(t)
	a, b := netip.MustParseAddr("127.0.0.41"), netip.MustParseAddr("127.0.0.42")
	node := startNode(t, port,
		Neighbor{Address: a, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true}, ImportActions: &ImportActions{LocalPref: 200}},
		Neighbor{Address: b, ASN: 65002, Passive: true, Import: &ImportRules{PrivateASNs: true}})
	vrps := rpki.NewUnion()
	vrps.Apply(rpki.Update{Source: "v1", First: true, Added: []rpki.VRP{{Prefix: netip.MustParsePrefix("9.9.9.0/24"), MaxLength: 24, ASN: 19281}}})
	if err := node.SetOriginValidation(t.Context(), vrps, InvalidLower, 50); err != nil {
		t.Fatal(err)
	}
	st := newStream(t, node)
	upA, upB := newPeer(t, 65001, a.String(), port), newPeer(t, 65002, b.String(), port)
	p := netip.MustParsePrefix("9.9.9.0/24")
	nh := netip.MustParseAddr("10.1.0.2")
	upA.announcePath(p.String(), 15169) // invalid, the shorter path
	st.expect(Change{Prefix: p, Nexthop: nh, Peer: a})
	upB.announcePath(p.String(), 3356, 19281) // valid, longer
	st.expect(Change{Prefix: p, Nexthop: nh, Peer: b})
	paths, err := node.Paths("9.9.9.9")
	if err != nil || len(paths) != 2 {
		t.Fatalf("Paths = %+v, %v: want both", paths, err)
	}
	for _, q := range paths {
		switch {
		case q.Neighbor == a && (q.Best || q.LocalPref != 50 || q.RPKI != "invalid"):
			t.Errorf("the invalid path: %+v, want local preference 50, not best", q)
		case q.Neighbor == b && (!q.Best || q.RPKI != "valid"):
			t.Errorf("the valid path: %+v, want best", q)
		}
	}
	upB.withdraw(p.String(), nh.String())
	st.expect(Change{Prefix: p, Nexthop: nh, Peer: a})
	if node.Refused()[a][ReasonRPKIInvalid] != 0 {
		t.Errorf("refused %v: lower takes invalid routes", node.Refused()[a])
	}
}

// TestHoldUpstreams: with HoldUpstreams, an upstream with import rules is
// configured but its session does not start (its routes do not arrive) until
// ReleaseUpstreams; a neighbour without rules starts at once.
func TestHoldUpstreams(t *testing.T) {
	port := freePort(t)
	a, b := netip.MustParseAddr("127.0.0.51"), netip.MustParseAddr("127.0.0.52")
	node, err := Start(t.Context(), Config{ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"), ListenAddresses: []string{"127.0.0.1"}, ListenPort: port,
		HoldUpstreams: true, Neighbors: []Neighbor{
			{Address: a, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true}},
			{Address: b, ASN: 65000, Passive: true},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	st := newStream(t, node)
	upA, upB := newPeer(t, 65001, a.String(), port), newPeer(t, 65000, b.String(), port)
	upA.announcePath("8.8.8.0/24", 15169)
	upB.announce("9.9.9.0/24", "10.1.0.3")
	st.expect(Change{Prefix: netip.MustParsePrefix("9.9.9.0/24"), Nexthop: netip.MustParseAddr("10.1.0.3"), Peer: b, Internal: true})
	if h := node.Held(); len(h) != 1 || h[0] != a {
		t.Fatalf("Held() = %v, want [%s]", h, a)
	}
	time.Sleep(2 * time.Second) // A's connect retry is 1 s: it would be up by now
	for _, p := range node.Peers() {
		if p.Address == a && p.State == "established" {
			t.Fatal("the held upstream's session started before ReleaseUpstreams")
		}
	}
	if err := node.ReleaseUpstreams(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.expect(Change{Prefix: netip.MustParsePrefix("8.8.8.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: a})
	if h := node.Held(); len(h) != 0 {
		t.Errorf("Held() = %v after the release", h)
	}
}
