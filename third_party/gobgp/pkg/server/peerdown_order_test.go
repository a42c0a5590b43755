package server

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestPeerDownBeforeWithdrawals: when an established session goes down, a watcher
// hears of the state change before the withdrawals of the peer's routes, so that a
// FIB can move the traffic off the peer before it has worked through them.
func TestPeerDownBeforeWithdrawals(t *testing.T) {
	ctx := context.Background()
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })
	addr := netip.MustParseAddr("10.0.0.2")
	require.NoError(t, s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:     &api.PeerConf{NeighborAddress: addr.String(), PeerAsn: 65002, AdminDown: true},
		AfiSafis: []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}},
	}}))
	var p *peer
	require.NoError(t, s.mgmtOperation(func() error { p = s.neighborMap[addr]; return nil }, true))
	// The session established (as the server sees it; the FSM is left alone), and
	// two routes received.
	p.fsm.lock.Lock()
	conf := p.fsm.pConf.ReadCopy()
	conf.State.SessionState = oc.IntToSessionStateMap[int(bgp.BGP_FSM_ESTABLISHED)]
	p.fsm.pConf.Update(&conf)
	p.fsm.lock.Unlock()
	var paths []*table.Path
	for _, prefix := range []string{"192.0.2.0/24", "198.51.100.0/24"} {
		path := makePath(t, prefix, "10.0.0.2", 0)
		paths = append(paths, table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: path.GetNlri()}, false, path.GetPathAttrs(), time.Now(), false))
	}
	p.adjRibIn.Update(paths)
	s.propagateUpdate(p, paths)

	var mu sync.Mutex
	var events []string
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, s.WatchEvent(wctx, WatchEventMessageCallbacks{
		OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == apiutil.PEER_EVENT_STATE {
				events = append(events, "peer "+ev.Peer.State.SessionState.String())
			}
		},
		OnBestPath: func(ps []*apiutil.Path, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			for _, path := range ps {
				if path.Withdrawal {
					events = append(events, "withdraw "+path.Nlri.String())
				}
			}
		},
	}, WatchPeer(), WatchBestPath(false)))

	s.handleFSMMessage(p, &fsmMsg{MsgType: fsmMsgStateChange, MsgData: bgp.BGP_FSM_IDLE,
		StateReason: newfsmStateReason(fsmHoldTimerExpired, nil, nil), timestamp: time.Now()})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= 3
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "peer "+bgp.BGP_FSM_IDLE.String(), events[0], "the state change comes first: %v", events)
	require.ElementsMatch(t, []string{"withdraw 192.0.2.0/24", "withdraw 198.51.100.0/24"}, events[1:3])
	require.Len(t, events, 3, "the state change is reported once: %v", events)
}
