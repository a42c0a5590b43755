package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// announceBlackhole has an in-process peer announce a prefix with BLACKHOLE.
func (p *peer) announceBlackhole(prefix, nexthop string) {
	p.t.Helper()
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr(nexthop))
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh, bgp.NewPathAttributeCommunities([]uint32{blackholeValue})}
	if _, err := p.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs}}}); err != nil {
		p.t.Fatal(err)
	}
}

// TestBlackhole: a blackhole from a neighbour allowed to send one comes out of the
// change stream as a blackhole, as long as a host; from one that is not, it is
// refused and counted. The node's own blackholes reach the stream too and go to the
// neighbour whose export wants them, with BLACKHOLE and NO_EXPORT, and to nobody
// else; one of an announced prefix stands in for the announcement and gives it back
// when it goes.
func TestBlackhole(t *testing.T) {
	port := freePort(t)
	a, b := netip.MustParseAddr("127.0.0.31"), netip.MustParseAddr("127.0.0.32")
	own := netip.MustParsePrefix("198.19.10.0/24")
	lab := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}
	s, err := Start(context.Background(), Config{
		ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"), ListenAddresses: []string{"127.0.0.1"}, ListenPort: port,
		Originated: []netip.Prefix{own},
		Neighbors: []Neighbor{
			{Address: a, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true, Allow: lab, Blackholes: true},
				Export: &Export{Prefixes: []netip.Prefix{own}, Blackholes: true}},
			{Address: b, ASN: 65002, Passive: true, Import: &ImportRules{PrivateASNs: true, Allow: lab}, Export: &Export{Prefixes: []netip.Prefix{own}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	st := newStream(t, s)
	upA, upB := newPeer(t, 65001, a.String(), port), newPeer(t, 65002, b.String(), port)
	eventually(t, "both sessions up", func() (bool, string) {
		n := 0
		for _, p := range s.Peers() {
			if p.State == "established" {
				n++
			}
		}
		return n == 2, fmt.Sprint(s.Peers())
	})

	// From A, allowed: a /32 is a blackhole in the stream. From B, not allowed:
	// refused, counted, not in the stream (the next change is A's second one).
	upB.announceBlackhole("198.18.5.5/32", "10.2.0.2")
	upA.announceBlackhole("198.18.7.7/32", "10.1.0.2")
	st.expect(Change{Prefix: netip.MustParsePrefix("198.18.7.7/32"), Blackhole: true, Peer: a})
	eventually(t, "B's blackhole refused", func() (bool, string) {
		r := s.Refused()[b]
		return r[ReasonBlackhole] == 1, fmt.Sprint(r)
	})
	upA.announce("198.18.8.0/24", "10.1.0.2") // an ordinary route from A: not a blackhole
	st.expect(Change{Prefix: netip.MustParsePrefix("198.18.8.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: a})
	if got := received(t, upB); len(got) != 0 {
		t.Errorf("B holds %v: routes from A, blackholes or not, are never sent on", got)
	}

	// The node's own blackhole: in the stream, at A with NO_EXPORT, not at B.
	bh := netip.MustParsePrefix("198.19.10.7/32")
	if err := s.AddBlackhole(bh); err != nil {
		t.Fatal(err)
	}
	st.expect(Change{Prefix: bh, Blackhole: true})
	eventually(t, "A holds the node's blackhole with BLACKHOLE and NO_EXPORT", holds(t, upA, "198.19.10.7/32 | [65000] | 65535:666,65535:65281 |  |  | 127.0.0.1"))
	if got := received(t, upB); len(got) != 0 {
		t.Errorf("B holds %v: its export does not want blackholes", got)
	}
	if got := s.Blackholes(); !slices.Equal(got, []netip.Prefix{bh}) {
		t.Errorf("Blackholes() = %v, want [%s]", got, bh)
	}
	if adv, err := s.Advertised(a); err != nil || len(adv) != 1 || adv[0].Prefix != bh || !slices.Equal(adv[0].Communities, []string{BlackholeCommunity, NoExport}) {
		t.Errorf("Advertised(A) = %+v, %v: want the blackhole with BLACKHOLE and NO_EXPORT", adv, err)
	}
	if adv, err := s.Advertised(b); err != nil || len(adv) != 0 {
		t.Errorf("Advertised(B) = %+v, %v: want nothing", adv, err)
	}

	// A blackhole of the announced prefix itself stands in for its announcement.
	if err := s.Announce(own); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both hold the announced prefix", func() (bool, string) {
		ga, gb := received(t, upA), received(t, upB)
		return len(ga) == 2 && len(gb) == 1, fmt.Sprint(ga, gb)
	})
	if err := s.AddBlackhole(own); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A holds the prefix as a blackhole, B no longer holds it", func() (bool, string) {
		ga, gb := received(t, upA), received(t, upB)
		return slices.Contains(ga, "198.19.10.0/24 | [65000] | 65535:666,65535:65281 |  |  | 127.0.0.1") && len(gb) == 0, fmt.Sprint(ga, gb)
	})
	for _, p := range []netip.Prefix{own, bh} {
		if err := s.RemoveBlackhole(p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the announcement is back at both, the blackholes gone", func() (bool, string) {
		ga, gb := received(t, upA), received(t, upB)
		want := []string{"198.19.10.0/24 | [65000] |  |  |  | 127.0.0.1"}
		return slices.Equal(ga, want) && slices.Equal(gb, want), fmt.Sprint(ga, gb)
	})
	if got := s.Announced(); !slices.Equal(got, []netip.Prefix{own}) {
		t.Errorf("Announced() = %v, want [%s]", got, own)
	}
}
