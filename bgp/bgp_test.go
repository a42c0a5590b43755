package bgp

import (
	"context"
	"net"
	"net/netip"
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
		if c == want {
			st.apply(c)
			return
		}
		if !st.restates(c) {
			st.t.Fatalf("change %+v while waiting for %+v", c, want)
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
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.9.2")})
	feeder.withdraw("203.0.113.0/25", "10.1.1.2")
	st.expect(Change{Prefix: netip.MustParsePrefix("203.0.113.0/25"), Withdraw: true})

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
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2")})
	st.expect(Change{Prefix: netip.MustParsePrefix("198.51.101.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2")})
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

func TestValidate(t *testing.T) {
	err := Config{ListenPort: 70000, Neighbors: []Neighbor{{}, {Address: netip.MustParseAddr("10.0.0.1"), ASN: 1}, {Address: netip.MustParseAddr("10.0.0.1"), ASN: 1}}}.Validate()
	if err == nil {
		t.Fatal("an empty config validated")
	}
	for _, want := range []string{"bgp.asn", "bgp.router_id", "listen_port", "neighbors[0].address", "neighbors[0].asn", "listed twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
