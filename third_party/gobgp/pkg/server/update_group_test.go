package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestUpdateGroup: a speaker with two iBGP neighbours in one update group and a
// third outside it sends the three the same routes, but packs and serializes each
// UPDATE once for the group: the members' shared updates are packed once and
// written as they are to the other member. A member whose session is reset is
// sent everything again; the other member is sent nothing.
func TestUpdateGroup(t *testing.T) {
	ctx := context.Background()
	freePort := func(addr string) int {
		l, err := net.Listen("tcp", addr+":0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	const speakerAddr = "127.0.0.1"
	type neighbour struct {
		addr  string
		port  int
		group string
		srv   *BgpServer
	}
	ns := []*neighbour{{addr: "127.0.0.2", group: "mesh"}, {addr: "127.0.0.3", group: "mesh"}, {addr: "127.0.0.4"}}
	for i, n := range ns {
		n.port = freePort(n.addr)
		n.srv = NewBgpServer()
		go n.srv.Serve()
		require.NoError(t, n.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
			Asn: 65001, RouterId: fmt.Sprintf("10.0.0.%d", i+2), ListenPort: int32(n.port), ListenAddresses: []string{n.addr}}}))
		t.Cleanup(func() { _ = n.srv.StopBgp(ctx, &api.StopBgpRequest{}) })
		require.NoError(t, n.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
			Conf: &api.PeerConf{NeighborAddress: speakerAddr, PeerAsn: 65001}, Transport: &api.Transport{PassiveMode: true}}}))
	}
	groups := map[netip.Addr]string{}
	for _, n := range ns {
		groups[netip.MustParseAddr(n.addr)] = n.group
	}
	s := NewBgpServer(UpdateGroupOption(func(a netip.Addr) string { return groups[a] }))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "10.0.0.1", ListenPort: -1}}))
	t.Cleanup(func() { _ = s.StopBgp(ctx, &api.StopBgpRequest{}) })
	for _, n := range ns {
		up := newPeerStateWaiter(n.srv, api.PeerState_SESSION_STATE_ESTABLISHED)
		require.NoError(t, s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
			Conf:      &api.PeerConf{NeighborAddress: n.addr, PeerAsn: 65001},
			Transport: &api.Transport{RemotePort: uint32(n.port), LocalAddress: speakerAddr},
			Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, IdleHoldTimeAfterReset: 1}}}}))
		up.Wait(t, 10*time.Second)
	}

	held := func(n *neighbour) int {
		c := 0
		require.NoError(t, n.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC},
			func(bgp.NLRI, []*apiutil.Path) { c++ }))
		return c
	}
	updates := func(n *neighbour) uint64 {
		var u uint64
		require.NoError(t, n.srv.ListPeer(ctx, &api.ListPeerRequest{Address: speakerAddr}, func(p *api.Peer) {
			u = p.State.Messages.Received.Update
		}))
		return u
	}

	// Routes added one by one, each its own UPDATE (its own MED).
	packings, reuses := sharedPackings.Load(), sharedReuses.Load()
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.254"))
	path := func(i int, withdraw bool) *apiutil.Path {
		prefix, _ := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 32))
		p, _ := apiutil.NewPath(bgp.RF_IPv4_UC, prefix, withdraw, []bgp.PathAttributeInterface{
			bgp.NewPathAttributeOrigin(0), nh, bgp.NewPathAttributeMultiExitDisc(uint32(i))}, time.Now())
		return mustApi2apiutilPath(p)
	}
	routes := 300
	for i := range routes {
		_, err := s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path(i, false)}})
		require.NoError(t, err)
	}
	holdAll := func() {
		t.Helper()
		for _, n := range ns {
			require.Eventually(t, func() bool { return held(n) == routes }, 10*time.Second, 20*time.Millisecond,
				"%s does not hold the %d routes", n.addr, routes)
		}
	}
	holdAll()
	packed, reused := sharedPackings.Load()-packings, sharedReuses.Load()-reuses
	t.Logf("shared updates packed %d, written as the other member packed them %d", packed, reused)
	require.Positive(t, packed, "no shared update for the group")
	require.Equal(t, packed, reused, "every shared update packed once and written as it was to the other member")
	require.Equal(t, updates(ns[0]), updates(ns[1]), "the members were sent different UPDATEs")

	// 200 routes in one call, then 100 of them withdrawn and 50 of those
	// announced again in one call: the paths of a call join one shared update,
	// and each member ends with what the speaker holds.
	var more, gone []*apiutil.Path
	for i := routes; i < routes+200; i++ {
		more = append(more, path(i, false))
	}
	_, err := s.AddPath(apiutil.AddPathRequest{Paths: more})
	require.NoError(t, err)
	routes += 200
	holdAll()
	for i := routes - 100; i < routes; i++ {
		gone = append(gone, path(i, false))
	}
	require.NoError(t, s.DeletePath(apiutil.DeletePathRequest{Paths: gone}))
	_, err = s.AddPath(apiutil.AddPathRequest{Paths: gone[:50]})
	require.NoError(t, err)
	routes -= 50
	holdAll()
	time.Sleep(300 * time.Millisecond) // nothing more arrives
	holdAll()
	packed, reused = sharedPackings.Load()-packings, sharedReuses.Load()-reuses
	require.Equal(t, packed, reused, "every shared update packed once and written as it was to the other member")
	require.Equal(t, updates(ns[0]), updates(ns[1]), "the members were sent different UPDATEs")

	// A member's route refresh (or initial dump: its routeRefreshInProgress held)
	// is not overtaken: nothing is queued to it until it ends.
	var member *peer
	require.NoError(t, s.mgmtOperation(func() error {
		member = s.neighborMap[netip.MustParseAddr(ns[1].addr)]
		return nil
	}, false))
	queued := func() int {
		member.fsm.outgoingMu.Lock()
		defer member.fsm.outgoingMu.Unlock()
		return len(member.fsm.outgoingPaths) + len(member.fsm.outgoingShared)
	}
	member.routeRefreshInProgress.Lock()
	added := make(chan error, 1)
	go func() {
		_, err := s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path(routes+1000, false)}})
		added <- err
	}()
	time.Sleep(300 * time.Millisecond)
	during := queued()
	member.routeRefreshInProgress.Unlock()
	require.NoError(t, <-added)
	require.Zero(t, during, "queued to a member while its route refresh ran")
	routes++
	holdAll()

	// A member's session reset: it gets every route again, the other nothing.
	before := updates(ns[0])
	state := func(n *neighbour) api.PeerState_SessionState {
		st := api.PeerState_SESSION_STATE_UNSPECIFIED
		require.NoError(t, s.ListPeer(ctx, &api.ListPeerRequest{Address: n.addr}, func(p *api.Peer) { st = p.State.SessionState }))
		return st
	}
	require.NoError(t, s.ResetPeer(ctx, &api.ResetPeerRequest{Address: ns[1].addr}))
	require.Eventually(t, func() bool { return held(ns[1]) == 0 }, 10*time.Second, 10*time.Millisecond, "the reset member kept the routes")
	require.Eventually(t, func() bool { return state(ns[1]) == api.PeerState_SESSION_STATE_ESTABLISHED && held(ns[1]) == routes },
		20*time.Second, 20*time.Millisecond, "the reset member did not get the routes again")
	require.Positive(t, updates(ns[1]), "the reset member was sent no UPDATE")
	time.Sleep(500 * time.Millisecond) // what else was sent arrives
	require.Equal(t, before, updates(ns[0]), "the other member was sent UPDATEs when its group's other member came back")
	require.Equal(t, routes, held(ns[0]))
}

// TestFormUpdateGroupsAlone: a speaker with one named neighbour besides the source
// of the paths (a mesh node taking a table from its other mesh peer) forms no group
// for each UPDATE, and allocates nothing for it; with two, it forms one.
func TestFormUpdateGroupsAlone(t *testing.T) {
	s := NewBgpServer(UpdateGroupOption(func(netip.Addr) string { return "mesh" }))
	go s.Serve()
	require.NoError(t, s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "192.0.2.1", ListenPort: -1}}))
	t.Cleanup(s.Stop)
	source := newPeerandInfo(t, 65001, 65001, "192.0.2.2", s.globalRib)
	other := newPeerandInfo(t, 65001, 65001, "192.0.2.3", s.globalRib)
	third := newPeerandInfo(t, 65001, 65001, "192.0.2.4", s.globalRib)
	for _, p := range []*peer{source, other, third} {
		t.Cleanup(func() { cleanInfiniteChannel(p.fsm.outgoingCh) })
		p.fsm.state.Store(bgp.BGP_FSM_ESTABLISHED)
		p.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: bgp.BGP_ADD_PATH_NONE}) // negotiated
		p.policy = s.policy
	}
	s.neighborMap = map[netip.Addr]*peer{netip.MustParseAddr("192.0.2.2"): source, netip.MustParseAddr("192.0.2.3"): other}
	t.Cleanup(func() { s.neighborMap = map[netip.Addr]*peer{} }) // before the server stops: no FSM runs
	var groups []*updateGroup
	allocs := testing.AllocsPerRun(100, func() { groups = s.formUpdateGroups(source, bgp.RF_IPv4_UC) })
	require.Empty(t, groups)
	require.Zero(t, allocs, "allocations to form no group")

	s.neighborMap[netip.MustParseAddr("192.0.2.4")] = third
	groups = s.formUpdateGroups(source, bgp.RF_IPv4_UC)
	require.Len(t, groups, 1)
	require.ElementsMatch(t, []*peer{other, third}, groups[0].members)
}
