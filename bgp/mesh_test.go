package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

func startMeshNode(t *testing.T, addr string, port int32, neighbors ...Neighbor) *Speaker {
	t.Helper()
	a := netip.MustParseAddr(addr)
	s, err := Start(context.Background(), Config{ASN: 65000, RouterID: a, ListenAddresses: []string{addr}, ListenPort: port,
		MeshAddress: a, Neighbors: neighbors})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// upstream is an eBGP speaker (AS65001) on a loopback address that connects to a node
// listening on nodeAddr:port, announcing v4 and v6 routes with explicit next hops.
func upstream(t *testing.T, local, nodeAddr string, port int32, routes map[string]string) *server.BgpServer {
	t.Helper()
	srv := server.NewBgpServer()
	go srv.Serve()
	ctx := context.Background()
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: local, ListenPort: -1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	for prefix, nh := range routes {
		p, err := originPath(netip.MustParsePrefix(prefix), netip.MustParseAddr(nh))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}}); err != nil {
			t.Fatal(err)
		}
	}
	fam := func(afi api.Family_Afi) *api.AfiSafi {
		return &api.AfiSafi{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}
	}
	err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: nodeAddr, PeerAsn: 65000},
		Transport: &api.Transport{LocalAddress: local, RemotePort: uint32(port)},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
		AfiSafis:  []*api.AfiSafi{fam(api.Family_AFI_IP), fam(api.Family_AFI_IP6)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func meshState(s *Speaker, a string) string {
	for _, p := range s.MeshPeers() {
		if p.Address.String() == a {
			return p.State
		}
	}
	return ""
}

// TestMesh: two nodes in an iBGP mesh. What A learns from its upstream reaches B with
// next hops unchanged (both families), and what A originates reaches B; B's own
// upstream gets nothing (neither A's routes nor the mesh's); removing A from B's mesh
// withdraws A's routes from B at once.
func TestMesh(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	a := startMeshNode(t, "127.0.0.11", pa, Neighbor{Address: netip.MustParseAddr("127.0.0.13"), ASN: 65001, Passive: true,
		Families: []Family{IPv4Unicast, IPv6Unicast}})
	b := startMeshNode(t, "127.0.0.12", pb, Neighbor{Address: netip.MustParseAddr("127.0.0.14"), ASN: 65001, Passive: true,
		Families: []Family{IPv4Unicast, IPv6Unicast}})
	upstream(t, "127.0.0.13", "127.0.0.11", pa, map[string]string{"198.51.100.0/24": "10.1.0.2", "2001:db8:1::/48": "2001:db8::2"})
	observer := upstream(t, "127.0.0.14", "127.0.0.12", pb, nil)

	ctx := context.Background()
	if err := a.AddMeshPeer(ctx, MeshPeer{Address: netip.MustParseAddr("127.0.0.12"), Port: uint16(pb)}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddMeshPeer(ctx, MeshPeer{Address: netip.MustParseAddr("127.0.0.11"), Port: uint16(pa)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Originate(netip.MustParsePrefix("10.1.0.0/24"), netip.MustParseAddr("127.0.0.11")); err != nil {
		t.Fatal(err)
	}
	if err := a.Originate(netip.MustParsePrefix("2001:db8::/64"), netip.MustParseAddr("fd00::11")); err != nil {
		t.Fatal(err)
	}
	st := newStream(t, b)
	from := netip.MustParseAddr("127.0.0.11")
	want := map[netip.Prefix]netip.Addr{
		netip.MustParsePrefix("198.51.100.0/24"): netip.MustParseAddr("10.1.0.2"),
		netip.MustParsePrefix("2001:db8:1::/48"): netip.MustParseAddr("2001:db8::2"),
		netip.MustParsePrefix("10.1.0.0/24"):     netip.MustParseAddr("127.0.0.11"),
		netip.MustParsePrefix("2001:db8::/64"):   netip.MustParseAddr("fd00::11"),
	}
	for len(st.state) < len(want) {
		c := st.next()
		if c.Withdraw || want[c.Prefix] != c.Nexthop || c.Peer != from {
			t.Fatalf("B: change %+v, want one of %v from A", c, want)
		}
		st.apply(c)
	}
	if s := meshState(b, "127.0.0.11"); s != "established" {
		t.Errorf("B's session with A: %s", s)
	}

	// B's upstream receives nothing: give its session time to be up and an update to
	// arrive, then count.
	deadline := time.Now().Add(10 * time.Second)
	for {
		up := false
		for _, p := range b.Peers() {
			up = up || (!p.Mesh && p.State == "established")
		}
		if up || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	for _, f := range []bgp.Family{bgp.RF_IPv4_UC, bgp.RF_IPv6_UC} {
		got := 0
		if err := observer.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: f}, func(bgp.NLRI, []*apiutil.Path) { got++ }); err != nil {
			t.Fatal(err)
		}
		if got != 0 {
			t.Errorf("B's upstream received %d %s prefixes, want none (export is deny-by-default but for the mesh)", got, f)
		}
	}

	// A drained: B holds A's routes with local preference 1 and GRACEFUL_SHUTDOWN,
	// and gets them back as before once A is undrained.
	meshAttrs := func() string {
		out := "none"
		err := b.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC,
			Prefixes: []*apiutil.LookupPrefix{{Prefix: "198.51.100.0/24"}}}, func(_ bgp.NLRI, paths []*apiutil.Path) {
			for _, p := range paths {
				lp, gs := uint32(100), false
				for _, at := range p.Attrs {
					switch at := at.(type) {
					case *bgp.PathAttributeLocalPref:
						lp = at.Value
					case *bgp.PathAttributeCommunities:
						gs = slices.Contains(at.Value, 0xffff0000)
					}
				}
				out = fmt.Sprintf("local_pref=%d graceful_shutdown=%v", lp, gs)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, drained := range []bool{true, false} {
		if err := a.SetDrained(ctx, drained); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "local_pref=1 graceful_shutdown=true", false: "local_pref=100 graceful_shutdown=false"}[drained]
		deadline := time.Now().Add(10 * time.Second)
		for got := meshAttrs(); got != want; got = meshAttrs() {
			if time.Now().After(deadline) {
				t.Fatalf("A drained=%v: B holds A's route with %s, want %s", drained, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	if err := a.StopOriginating(netip.MustParsePrefix("10.1.0.0/24")); err != nil {
		t.Fatal(err)
	}
	st.expect(Change{Prefix: netip.MustParsePrefix("10.1.0.0/24"), Withdraw: true, Peer: from})

	start := time.Now()
	if err := b.RemoveMeshPeer(ctx, from); err != nil {
		t.Fatal(err)
	}
	for len(st.state) > 0 {
		c := st.next()
		if !c.Withdraw {
			t.Fatalf("change %+v while A's routes go", c)
		}
		st.apply(c)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("A's routes left B %s after the removal", d)
	}
	if len(b.MeshPeers()) != 0 {
		t.Errorf("B's mesh after the removal: %+v", b.MeshPeers())
	}
}

// TestResendMesh: a route B lost (here: an import policy on B drops it, then goes
// away without B asking again) comes back when A resends its routes to B.
func TestResendMesh(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	a := startMeshNode(t, "127.0.0.21", pa, Neighbor{Address: netip.MustParseAddr("127.0.0.23"), ASN: 65001, Passive: true})
	b := startMeshNode(t, "127.0.0.22", pb)
	upstream(t, "127.0.0.23", "127.0.0.21", pa, map[string]string{"198.51.100.0/24": "10.1.0.2", "203.0.113.0/24": "10.1.0.2"})
	ctx := context.Background()
	if err := a.AddMeshPeer(ctx, MeshPeer{Address: netip.MustParseAddr("127.0.0.22"), Port: uint16(pb)}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddMeshPeer(ctx, MeshPeer{Address: netip.MustParseAddr("127.0.0.21"), Port: uint16(pa)}); err != nil {
		t.Fatal(err)
	}
	st := newStream(t, b)
	for len(st.state) < 2 {
		st.apply(st.next())
	}
	lost := netip.MustParsePrefix("198.51.100.0/24")
	// B drops the route on import, and forgets the policy without asking again.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: "lost",
		Prefixes: []*api.Prefix{{IpPrefix: lost.String(), MaskLengthMin: 24, MaskLengthMax: 24}}}}))
	must(b.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: "drop-lost", Statements: []*api.Statement{{Name: "drop",
		Conditions: &api.Conditions{PrefixSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: "lost"}},
		Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_REJECT}}}}}))
	must(b.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{Name: "global",
		Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT, Policies: []*api.Policy{{Name: "drop-lost"}}, DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT}}))
	must(b.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: "127.0.0.21", Soft: true, Direction: api.ResetPeerRequest_DIRECTION_IN}))
	st.expect(Change{Prefix: lost, Withdraw: true, Peer: netip.MustParseAddr("127.0.0.21")})
	must(b.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{Name: "global",
		Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT, DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT}}))

	if err := a.ResendMesh(ctx, netip.MustParseAddr("127.0.0.22")); err != nil {
		t.Fatal(err)
	}
	st.expect(Change{Prefix: lost, Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: netip.MustParseAddr("127.0.0.21")})
	if err := a.ResendMesh(ctx, netip.MustParseAddr("127.0.0.99")); err == nil {
		t.Error("resent to an address that is no mesh peer")
	}
}
