package bgp

import (
	"context"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// peer is an in-process GoBGP speaker on a loopback address that connects to the node
// over eBGP. It originates its paths with explicit next hops, which GoBGP keeps on eBGP
// (it would otherwise send its own 127/8 address, which the node rejects as invalid).
type peer struct {
	t   *testing.T
	srv *server.BgpServer
}

func newPeer(t *testing.T, asn uint32, local string, nodePort int32) *peer {
	t.Helper()
	srv := server.NewBgpServer()
	go srv.Serve()
	ctx := context.Background()
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: local, ListenPort: -1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 65000},
		Transport: &api.Transport{LocalAddress: local, RemotePort: uint32(nodePort)},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{t: t, srv: srv}
}

func (p *peer) announce(prefix, nexthop string) {
	p.t.Helper()
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr(nexthop))
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		nh,
	}
	_, err := p.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs}}})
	if err != nil {
		p.t.Fatal(err)
	}
}

// announcePath is announce with AS path changes before the peer prepends its own
// AS (none given: no AS_PATH attribute at all), next hop 10.1.0.2.
func (p *peer) announcePath(prefix string, path ...uint32) {
	p.t.Helper()
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.1.0.2"))
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}
	if len(path) > 0 {
		attrs = append(attrs, asPath(path...))
	}
	if _, err := p.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs}}}); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) withdraw(prefix, nexthop string) {
	p.t.Helper()
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr(nexthop))
	err := p.srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}}}})
	if err != nil {
		p.t.Fatal(err)
	}
}

func startNode(t *testing.T, port int32, neighbors ...Neighbor) *Speaker {
	t.Helper()
	s, err := Start(context.Background(), Config{
		ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"),
		ListenAddresses: []string{"127.0.0.1"}, ListenPort: port, Neighbors: neighbors,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// stream reads a speaker's changes and keeps the state they describe. GoBGP may
// restate a best path it already reported (same prefix, same next hop); that is harmless
// for the FIB and allowed here, anything else unexpected fails the test.
type stream struct {
	t       *testing.T
	s       *Speaker
	pending []Change
	state   map[netip.Prefix]netip.Addr
}

func newStream(t *testing.T, s *Speaker) *stream {
	return &stream{t: t, s: s, state: map[netip.Prefix]netip.Addr{}}
}

// next returns the next change (bounded: a lost change fails the test, it does not hang it).
func (st *stream) next() Change {
	st.t.Helper()
	for len(st.pending) == 0 {
		select {
		case ev := <-st.s.Events():
			st.pending = append(st.pending, ev.Changes...)
		case <-time.After(20 * time.Second):
			st.t.Fatal("no best-path change within 20s")
		}
	}
	c := st.pending[0]
	st.pending = st.pending[1:]
	return c
}

func (st *stream) restates(c Change) bool {
	nh, ok := st.state[c.Prefix]
	return ok && !c.Withdraw && nh == c.Nexthop
}

func (st *stream) apply(c Change) {
	if c.Withdraw {
		delete(st.state, c.Prefix)
	} else {
		st.state[c.Prefix] = c.Nexthop
	}
}

// expect reads changes until want arrives, allowing only restatements before it.
func (st *stream) expect(want Change) {
	st.t.Helper()
	for {
		c := st.next()
		if reflect.DeepEqual(c, want) {
			st.apply(c)
			return
		}
		if !st.restates(c) {
			st.t.Fatalf("change %+v while waiting for %+v", c, want)
		}
	}
}

// expectAll reads changes until every one of wants arrived, in any order (GoBGP
// re-imports the paths of a reset or a re-validation in no particular order),
// allowing only restatements among them.
func (st *stream) expectAll(wants ...Change) {
	st.t.Helper()
	for len(wants) > 0 {
		c := st.next()
		i := slices.IndexFunc(wants, func(w Change) bool { return reflect.DeepEqual(c, w) })
		if i >= 0 {
			st.apply(c)
			wants = slices.Delete(wants, i, i+1)
			continue
		}
		if !st.restates(c) {
			st.t.Fatalf("change %+v while waiting for %+v", c, wants)
		}
	}
}

func TestBestPathStream(t *testing.T) {
	port := freePort(t)
	node := startNode(t, port,
		Neighbor{Address: netip.MustParseAddr("127.0.0.2"), ASN: 65001, Passive: true},
		Neighbor{Address: netip.MustParseAddr("127.0.0.3"), ASN: 65002, Passive: true})
	feeder := newPeer(t, 65001, "127.0.0.2", port)
	observer := newPeer(t, 65002, "127.0.0.3", port)

	st := newStream(t, node)
	want := map[netip.Prefix]netip.Addr{}
	for i, p := range []string{"198.51.100.0/24", "203.0.113.0/25", "192.0.2.0/24"} {
		nh := netip.AddrFrom4([4]byte{10, 1, byte(i), 2})
		feeder.announce(p, nh.String())
		want[netip.MustParsePrefix(p)] = nh
	}
	for len(st.state) < len(want) {
		c := st.next()
		if c.Withdraw || want[c.Prefix] != c.Nexthop {
			t.Fatalf("change %+v, want one of %v", c, want)
		}
		st.apply(c)
	}
	feeder.announce("198.51.100.0/24", "10.1.9.2")
	from := netip.MustParseAddr("127.0.0.2") // each change names the peer it came from
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.9.2"), Peer: from})
	feeder.withdraw("203.0.113.0/25", "10.1.1.2")
	st.expect(Change{Prefix: netip.MustParsePrefix("203.0.113.0/25"), Withdraw: true, Peer: from})

	// Export is deny-by-default: the node holds two best paths from the feeder and
	// would announce them to the observer without the policy. GoBGP lists them in the
	// observer's Adj-RIB-Out marked as filtered.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out []*apiutil.Path
		err := node.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_ADJ_OUT, Name: "127.0.0.3", Family: bgp.RF_IPv4_UC, EnableFiltered: true},
			func(_ bgp.NLRI, ps []*apiutil.Path) { out = append(out, ps...) })
		if err == nil && len(out) == 2 {
			for _, p := range out {
				if !p.Filtered {
					t.Fatalf("path %s would be exported to the observer", p.Nlri)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("observer's Adj-RIB-Out: %d paths (err %v), want 2 filtered", len(out), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var got int
	if err := observer.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC}, func(bgp.NLRI, []*apiutil.Path) { got++ }); err != nil {
		t.Fatal(err)
	}
	if got != 0 {
		t.Errorf("observer received %d prefixes from the node, want 0", got)
	}

	// Every announcement of the feeder was counted for its load progress, none of the
	// observer's (it sent none); both sessions are up.
	loads := map[string]Load{}
	for _, l := range node.Loads() {
		loads[l.Neighbor.String()] = l
	}
	if l := loads["127.0.0.2"]; l.Received != 4 || l.Established.IsZero() {
		t.Errorf("feeder load = %+v, want 4 prefixes received in an established session", l)
	}
	// It holds 2 of them now: one announced twice, one withdrawn.
	if l := loads["127.0.0.2"]; l.Prefixes != [2]uint64{2, 0} {
		t.Errorf("feeder's prefixes = %v, want [2 0] (IPv4, IPv6)", l.Prefixes)
	}
	if l := loads["127.0.0.3"]; l.Received != 0 || l.Established.IsZero() {
		t.Errorf("observer load = %+v, want 0 prefixes received in an established session", l)
	}

	peers := node.Peers()
	states := map[string]string{}
	for _, p := range peers {
		states[p.Address.String()] = p.State
	}
	if states["127.0.0.2"] != "established" || states["127.0.0.3"] != "established" {
		t.Errorf("peer states = %v, want both established", states)
	}
}

func TestMaxPrefixes(t *testing.T) {
	port := freePort(t)
	node := startNode(t, port, Neighbor{Address: netip.MustParseAddr("127.0.0.4"), ASN: 65001, Passive: true, MaxPrefixes: 2})
	feeder := newPeer(t, 65001, "127.0.0.4", port)
	st := newStream(t, node)
	feeder.announce("198.51.100.0/24", "10.1.0.2")
	feeder.announce("198.51.101.0/24", "10.1.0.2")
	from := netip.MustParseAddr("127.0.0.4")
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: from})
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.101.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: from})
	feeder.announce("198.51.102.0/24", "10.1.0.2")
	// Over the limit the session is torn down and its routes withdrawn.
	for len(st.state) > 0 {
		c := st.next()
		if !c.Withdraw && c.Prefix != netip.MustParsePrefix("198.51.102.0/24") && !st.restates(c) {
			t.Fatalf("unexpected change %+v while the session goes down", c)
		}
		st.apply(c)
	}
	// The session state arrives as a peer event, possibly just after the withdrawals.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p := node.Peers(); len(p) == 1 && p[0].State != "established" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after exceeding max-prefixes, peers = %+v, want the session down", node.Peers())
		}
	}
}

// TestMaxPrefixRestart: a session shut down for exceeding its max-prefix limit comes
// back after max_prefix_restart; with the limit raised live (SetLimits) meanwhile, it
// then stays up. Without the restart it would stay down (TestMaxPrefixes).
func TestMaxPrefixRestart(t *testing.T) {
	port := freePort(t)
	peer := netip.MustParseAddr("127.0.0.9")
	node := startNode(t, port, Neighbor{Address: peer, ASN: 65001, Passive: true, MaxPrefixes: 1, MaxPrefixRestart: 2 * time.Second})
	st := newStream(t, node)
	feeder := newPeer(t, 65001, peer.String(), port)
	feeder.announce("198.51.100.0/24", "10.1.0.2")
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: peer})
	feeder.announce("198.51.101.0/24", "10.1.0.2")
	wait := func(what string, cond func(PeerStatus) bool) PeerStatus {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if p := node.Peers(); len(p) == 1 && cond(p[0]) {
				return p[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("not within 20 s: %s (peers %+v)", what, node.Peers())
			}
		}
	}
	down := wait("shut down over the limit", func(p PeerStatus) bool { return p.State != "established" })
	shutAt := time.Now()
	if err := node.SetLimits(peer, 10, 0, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	up := wait("back after the restart time", func(p PeerStatus) bool { return p.State == "established" })
	if time.Since(shutAt) < time.Second {
		t.Errorf("back %v after the shutdown (%+v), before the restart time of 2 s", time.Since(shutAt), down)
	}
	time.Sleep(3 * time.Second)
	if p := node.Peers(); len(p) != 1 || p[0].State != "established" || !p[0].Established.Equal(up.Established) {
		t.Errorf("under the raised limit the session went down again: %+v", p)
	}
}

func TestValidate(t *testing.T) {
	err := Config{ListenPort: 70000, RestartTime: 5000 * time.Second, LongLivedTime: 1500 * time.Millisecond,
		Neighbors: []Neighbor{{}, {Address: netip.MustParseAddr("10.0.0.1"), ASN: 1}, {Address: netip.MustParseAddr("10.0.0.1"), ASN: 1},
			{Address: netip.MustParseAddr("10.0.0.2"), ASN: 1, Families: []Family{"ipv9-unicast"}},
			{Address: netip.MustParseAddr("10.0.0.4"), ASN: 1, TTLSecurity: true, MultihopTTL: 2, MaxPrefixRestart: time.Minute, Password: strings.Repeat("x", 81)}}}.Validate()
	if err == nil {
		t.Fatal("an empty config validated")
	}
	for _, want := range []string{"bgp.asn", "bgp.router_id", "listen_port", "neighbors[0].address", "neighbors[0].asn", "listed twice", `neighbors[3].families: "ipv9-unicast"`,
		"neighbors[4]: ttl_security (GTSM) is for a directly connected peer", "neighbors[4].max_prefix_restart 1m0s: give a positive duration with max_prefixes set", "81 bytes; Linux takes at most 80",
		"restart_time 1h23m20s: use whole seconds from 1s to 4095s", "long_lived_time 1.5s: use whole seconds"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestIPv6Family: a session carrying IPv4 and IPv6 unicast (MP-BGP over an IPv4
// transport) delivers IPv6 routes with their next hops, and the neighbour's dump is
// complete only once both families' End-of-RIBs have arrived. (GoBGP, as the sender,
// leaves link-local next hops out on a session that is not over a shared link:
// TestToChangeIPv6 covers them.)
func TestIPv6Family(t *testing.T) {
	port := freePort(t)
	node := startNode(t, port, Neighbor{Address: netip.MustParseAddr("127.0.0.6"), ASN: 65001, Passive: true,
		Families: []Family{IPv4Unicast, IPv6Unicast}})
	srv := server.NewBgpServer()
	go srv.Serve()
	ctx := context.Background()
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "127.0.0.6", ListenPort: -1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	add := func(family bgp.Family, prefix string, attrs ...bgp.PathAttributeInterface) {
		t.Helper()
		nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
		if family == bgp.RF_IPv6_UC {
			nh := attrs[0].(*bgp.PathAttributeMpReachNLRI)
			mp, err := bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, nh.Nexthop, nh.LinkLocalNexthop)
			if err != nil {
				t.Fatal(err)
			}
			attrs = []bgp.PathAttributeInterface{mp}
		}
		attrs = append(attrs, bgp.NewPathAttributeOrigin(0))
		if _, err := srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{{Family: family, Nlri: nlri, Attrs: attrs}}}); err != nil {
			t.Fatal(err)
		}
	}
	v4nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.1.0.2"))
	add(bgp.RF_IPv4_UC, "198.51.100.0/24", v4nh)
	add(bgp.RF_IPv6_UC, "2001:db8:1::/48", &bgp.PathAttributeMpReachNLRI{Nexthop: netip.MustParseAddr("2001:db8::2"), LinkLocalNexthop: netip.MustParseAddr("fe80::2")})
	add(bgp.RF_IPv6_UC, "2001:db8:2::/48", &bgp.PathAttributeMpReachNLRI{Nexthop: netip.MustParseAddr("2001:db8::3")})
	// Paths first, then the session: the dump ends with End-of-RIB (graceful restart).
	fam := func(afi api.Family_Afi) *api.AfiSafi {
		return &api.AfiSafi{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}
	}
	err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:            &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 65000},
		Transport:       &api.Transport{LocalAddress: "127.0.0.6", RemotePort: uint32(port)},
		Timers:          &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
		GracefulRestart: &api.GracefulRestart{Enabled: true, HelperOnly: true, RestartTime: 120},
		AfiSafis:        []*api.AfiSafi{fam(api.Family_AFI_IP), fam(api.Family_AFI_IP6)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddr("127.0.0.6")
	want := map[netip.Prefix]Change{
		netip.MustParsePrefix("198.51.100.0/24"): {Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: from},
		netip.MustParsePrefix("2001:db8:1::/48"): {Prefix: netip.MustParsePrefix("2001:db8:1::/48"), Nexthop: netip.MustParseAddr("2001:db8::2"), Peer: from},
		netip.MustParsePrefix("2001:db8:2::/48"): {Prefix: netip.MustParsePrefix("2001:db8:2::/48"), Nexthop: netip.MustParseAddr("2001:db8::3"), Peer: from},
	}
	got := map[netip.Prefix]Change{}
	deadline := time.After(20 * time.Second)
	for eor := false; !eor; {
		select {
		case ev := <-node.Events():
			for _, c := range ev.Changes {
				got[c.Prefix] = c
			}
			if ev.EndOfRIB.IsValid() {
				if len(got) != len(want) {
					t.Fatalf("End-of-RIB after %d of %d routes: %v", len(got), len(want), got)
				}
				eor = true
			}
		case <-deadline:
			t.Fatalf("no End-of-RIB within 20s; changes so far: %v", got)
		}
	}
	for p, w := range want {
		if !reflect.DeepEqual(got[p], w) {
			t.Errorf("%s: change %+v, want %+v", p, got[p], w)
		}
	}
	if l := node.Loads(); len(l) != 1 || l[0].Received != 3 || l[0].EndOfRIB.IsZero() || l[0].Prefixes != [2]uint64{1, 2} {
		t.Errorf("load = %+v, want 3 prefixes received (1 IPv4, 2 IPv6) and the dump complete", l)
	}
}

// TestToChangeIPv6: MP_REACH next hops, global and link-local (RFC 2545), become a
// Change's Nexthop and LinkLocal; a link-local alone becomes the Nexthop.
func TestToChangeIPv6(t *testing.T) {
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("2001:db8:1::/48"))
	v6 := bgp.RF_IPv6_UC
	for _, c := range []struct {
		global, ll string
		want       Change
	}{
		{"2001:db8::2", "fe80::2", Change{Nexthop: netip.MustParseAddr("2001:db8::2"), LinkLocal: netip.MustParseAddr("fe80::2")}},
		{"2001:db8::2", "", Change{Nexthop: netip.MustParseAddr("2001:db8::2")}},
		{"::", "fe80::3", Change{Nexthop: netip.MustParseAddr("fe80::3"), LinkLocal: netip.MustParseAddr("fe80::3")}},
	} {
		p := apiutil.ForwardingPath{Nexthop: netip.MustParseAddr(c.global), ASPath: asPath(65001)}
		if c.ll != "" {
			p.LinkLocalNexthop = netip.MustParseAddr(c.ll)
		}
		got, ok := toChange(v6, nlri, &p, false)
		c.want.Prefix = netip.MustParsePrefix("2001:db8:1::/48")
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("next hops %s, %q: change %+v (%v), want %+v", c.global, c.ll, got, ok, c.want)
		}
		// Without an AS path: a route from inside the AS.
		c.want.Internal = true
		p.ASPath = nil
		if got, ok := toChange(v6, nlri, &p, false); !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("next hops %s, %q, no AS path: change %+v (%v), want %+v", c.global, c.ll, got, ok, c.want)
		}
		// With BLACKHOLE: a blackhole, whatever the next hop.
		p.Communities = []uint32{65000<<16 | 1, blackholeValue}
		if got, ok := toChange(v6, nlri, &p, false); !ok || !got.Blackhole {
			t.Errorf("next hops %s, %q, BLACKHOLE: change %+v (%v), want a blackhole", c.global, c.ll, got, ok)
		}
		// The last best path withdrawn.
		if got, ok := toChange(v6, nlri, &p, true); !ok || !got.Withdraw || got.Blackhole {
			t.Errorf("next hops %s, %q, withdrawn: change %+v (%v), want a withdrawal", c.global, c.ll, got, ok)
		}
	}
	// This node's own announcement (an unspecified next hop): the FIB holds no route
	// of it.
	own, _ := announcePath(netip.MustParsePrefix("2001:db8:1::/48"))
	var ownPath apiutil.ForwardingPath
	for _, a := range own.Attrs {
		if mp, ok := a.(*bgp.PathAttributeMpReachNLRI); ok {
			ownPath.Nexthop, ownPath.LinkLocalNexthop = mp.Nexthop, mp.LinkLocalNexthop
		}
	}
	if got, ok := toChange(v6, own.Nlri, &ownPath, false); !ok || !got.Withdraw {
		t.Errorf("own announcement: change %+v (%v), want a withdrawal", got, ok)
	}
	if _, ok := toChange(v6, nlri, &apiutil.ForwardingPath{}, false); ok {
		t.Error("a path without a next hop became a change")
	}
	if _, ok := toChange(bgp.RF_IPv4_VPN, nlri, &apiutil.ForwardingPath{Nexthop: netip.MustParseAddr("192.0.2.1")}, false); ok {
		t.Error("a path of another family became a change")
	}
}
