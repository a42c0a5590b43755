package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// received describes what an in-process peer holds, one line per prefix: prefix, AS
// path, communities, large communities, MED, next hop.
func received(t *testing.T, p *peer) []string {
	t.Helper()
	var out []string
	err := p.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC}, func(_ bgp.NLRI, paths []*apiutil.Path) {
		for _, path := range paths {
			if path.PeerAddress != netip.MustParseAddr("127.0.0.1") {
				continue // its own
			}
			var aspath, comms, large, med, nh string
			for _, a := range path.Attrs {
				switch a := a.(type) {
				case *bgp.PathAttributeAsPath:
					var ases []uint32
					for _, seg := range a.Value {
						ases = append(ases, seg.GetAS()...)
					}
					aspath = fmt.Sprint(ases)
				case *bgp.PathAttributeCommunities:
					var cs []string
					for _, c := range a.Value {
						cs = append(cs, fmt.Sprintf("%d:%d", c>>16, c&0xffff))
					}
					comms = strings.Join(cs, ",")
				case *bgp.PathAttributeLargeCommunities:
					var cs []string
					for _, c := range a.Values {
						cs = append(cs, fmt.Sprintf("%d:%d:%d", c.ASN, c.LocalData1, c.LocalData2))
					}
					large = strings.Join(cs, ",")
				case *bgp.PathAttributeMultiExitDisc:
					med = fmt.Sprint(a.Value)
				case *bgp.PathAttributeNextHop:
					nh = a.Value.String()
				}
			}
			out = append(out, strings.Join([]string{path.Nlri.String(), aspath, comms, large, med, nh}, " | "))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s; last: %s", what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func holds(t *testing.T, p *peer, want ...string) func() (bool, string) {
	return func() (bool, string) {
		got := received(t, p)
		return slices.Equal(got, want), strings.Join(got, "; ")
	}
}

// TestExport: each upstream gets exactly the originated prefixes its export lists,
// with its communities, large communities, prepends and MED, and nothing else (not
// the other upstream's routes); an export changed live reaches the peer without a
// session reset; a drained node adds GRACEFUL_SHUTDOWN; a withdrawn prefix leaves;
// an upstream announcing one of the node's own prefixes is refused.
func TestExport(t *testing.T) {
	port := freePort(t)
	a, b := netip.MustParseAddr("127.0.0.21"), netip.MustParseAddr("127.0.0.22")
	p1, p2 := netip.MustParsePrefix("198.19.10.0/24"), netip.MustParsePrefix("198.19.20.0/24")
	s, err := Start(context.Background(), Config{
		ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"), ListenAddresses: []string{"127.0.0.1"}, ListenPort: port,
		Originated: []netip.Prefix{p1, p2},
		Neighbors: []Neighbor{
			{Address: a, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true, AnyLength: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}},
				Export: &Export{Prefixes: []netip.Prefix{p1, p2}, Communities: []string{"65000:100"}, LargeCommunities: []string{"65000:1:2"}, Prepend: 2, MED: 50, HasMED: true}},
			{Address: b, ASN: 65002, Passive: true, Export: &Export{Prefixes: []netip.Prefix{p1}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	go func() { // the node's change stream, read as the node does
		for {
			select {
			case <-s.Events():
			case <-s.Done():
				return
			}
		}
	}()
	upA, upB := newPeer(t, 65001, a.String(), port), newPeer(t, 65002, b.String(), port)
	upB.announce("8.8.8.0/24", "10.2.0.2") // never sent on to A
	for _, p := range []netip.Prefix{p1, p2} {
		if err := s.Announce(p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "A holds both prefixes with its attributes", holds(t, upA,
		"198.19.10.0/24 | [65000 65000 65000] | 65000:100 | 65000:1:2 | 50 | 127.0.0.1",
		"198.19.20.0/24 | [65000 65000 65000] | 65000:100 | 65000:1:2 | 50 | 127.0.0.1"))
	eventually(t, "B holds the one prefix its export lists", holds(t, upB, "198.19.10.0/24 | [65000] |  |  |  | 127.0.0.1"))
	adv, err := s.Advertised(a)
	if err != nil || len(adv) != 2 || !slices.Equal(adv[0].ASPath, []uint32{65000, 65000, 65000}) || adv[1].MED != 50 {
		t.Fatalf("Advertised(A) = %+v, %v: want both prefixes as A holds them", adv, err)
	}

	// A live change: the session stays, the peer gets the new attributes.
	up := s.Peers()
	if err := s.SetExport(t.Context(), a, &Export{Prefixes: []netip.Prefix{p2}, Communities: []string{"65000:200"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A holds what its new export says", holds(t, upA, "198.19.20.0/24 | [65000] | 65000:200 |  |  | 127.0.0.1"))
	if err := s.SetDrained(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a drained node's announcements carry GRACEFUL_SHUTDOWN", holds(t, upA, "198.19.20.0/24 | [65000] | 65000:200,65535:0 |  |  | 127.0.0.1"))
	if err := s.SetDrained(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "undrained, GRACEFUL_SHUTDOWN is gone", holds(t, upA, "198.19.20.0/24 | [65000] | 65000:200 |  |  | 127.0.0.1"))
	for _, p := range s.Peers() {
		for _, q := range up {
			if p.Address == q.Address && !p.Established.Equal(q.Established) {
				t.Errorf("session with %s started again (%v, was %v): export changes must keep it", p.Address, p.Established, q.Established)
			}
		}
	}

	if err := s.Withdraw(p1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a withdrawn prefix leaves B", holds(t, upB))

	// The node's own prefix, from an upstream: refused.
	upA.announce("198.19.10.0/25", "10.1.0.2")
	eventually(t, "an upstream's route inside an originated prefix is refused", func() (bool, string) {
		r := s.Refused()[a]
		return r[ReasonOwnPrefix] == 1, fmt.Sprint(r)
	})
	if got := received(t, upB); len(got) != 0 {
		t.Errorf("B holds %v: it must get nothing from A", got)
	}

	// Exports are checked against the originated prefixes.
	bad := Config{ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"), Originated: []netip.Prefix{p1},
		Neighbors: []Neighbor{{Address: a, ASN: 65001, Export: &Export{Prefixes: []netip.Prefix{p2}, Communities: []string{"65536:1"}, LargeCommunities: []string{"1:2"}, Prepend: 11}}}}
	err = bad.Validate()
	for _, want := range []string{"198.19.20.0/24 is not one the node originates", `community "65536:1"`, `large community "1:2"`, "prepend 11"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

// TestExportableOnlyOwnToUpstreams: GoBGP's export filter lets an upstream be sent
// this node's own paths alone, the mesh everything, other families through; a mesh
// peer counts as one from before its session starts until it is removed.
func TestExportableOnlyOwnToUpstreams(t *testing.T) {
	var m meshScope
	up, mesh := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("10.20.0.2")
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("198.51.100.0/24"))
	for _, c := range []struct {
		peer   netip.Addr
		family bgp.Family
		local  bool
		want   bool
	}{
		{up, bgp.RF_IPv4_UC, false, false},
		{up, bgp.RF_IPv6_UC, false, false},
		{up, bgp.RF_IPv4_UC, true, true},
		{up, bgp.RF_IPv4_VPN, false, true},
		{mesh, bgp.RF_IPv4_UC, false, false}, // not yet a mesh peer
	} {
		if got := m.exportable(c.peer, 65000, c.family, nlri, c.local); got != c.want {
			t.Errorf("exportable(%v, %v, local %v) = %v, want %v", c.peer, c.family, c.local, got, c.want)
		}
	}
	m.set(mesh, true)
	if !m.exportable(mesh, 65000, bgp.RF_IPv4_UC, nlri, false) || m.exportable(up, 65000, bgp.RF_IPv4_UC, nlri, false) {
		t.Error("a mesh peer is not sent learned paths, or an upstream is")
	}
	m.set(mesh, false)
	if m.exportable(mesh, 65000, bgp.RF_IPv4_UC, nlri, false) {
		t.Error("a removed mesh peer is still sent learned paths")
	}
}
