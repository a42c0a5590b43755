package server

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestAdjRibInHook: each UPDATE a neighbour sends is told to the AdjRibInHook once it
// is in the Adj-RIB-In: the neighbour, the family, how many paths it announced, the
// NLRI it withdrew, and how many paths of the family the neighbour holds now (a
// re-announcement counts once, a withdrawal of an unknown prefix changes nothing).
func TestAdjRibInHook(t *testing.T) {
	ctx := context.Background()
	type told struct {
		peer      netip.Addr
		family    bgp.Family
		announced int
		withdrawn []string
		held      int
	}
	var mu sync.Mutex
	var calls []told
	hook := func(peer netip.Addr, family bgp.Family, announced int, withdrawn []bgp.NLRI, held int) {
		mu.Lock()
		defer mu.Unlock()
		c := told{peer: peer, family: family, announced: announced, held: held}
		for _, n := range withdrawn {
			c.withdrawn = append(c.withdrawn, n.String())
		}
		calls = append(calls, c)
	}
	s := NewBgpServer(AdjRibInHookOption(hook))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(s.Stop) // the BFD server too: goleak checks in bfd_server_test.go follow
	p := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	t.Cleanup(func() { cleanInfiniteChannel(p.fsm.outgoingCh) })
	p.fsm.state.Store(bgp.BGP_FSM_ESTABLISHED)

	update := func(withdrawn []string, nlri ...string) {
		t.Helper()
		var w, n []bgp.PathNLRI
		for _, x := range withdrawn {
			a, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(x))
			w = append(w, bgp.PathNLRI{NLRI: a})
		}
		for _, x := range nlri {
			a, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(x))
			n = append(n, bgp.PathNLRI{NLRI: a})
		}
		var attrs []bgp.PathAttributeInterface
		if len(n) > 0 {
			nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.0.0.2"))
			attrs = []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0),
				bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65002})}), nh}
		}
		s.handleFSMMessage(p, &fsmMsg{MsgType: fsmMsgBGPMessage, MsgData: bgp.NewBGPUpdateMessage(w, attrs, n), timestamp: time.Now()})
	}
	peer, v4 := netip.MustParseAddr("10.0.0.2"), bgp.RF_IPv4_UC
	update(nil, "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
	update(nil, "192.0.2.0/24")                          // announced again
	update([]string{"198.51.100.0/24", "100.64.0.0/10"}) // one unknown
	update([]string{"203.0.113.0/24"}, "10.0.0.0/8")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []told{
		{peer, v4, 3, nil, 3},
		{peer, v4, 1, nil, 3},
		{peer, v4, 0, []string{"198.51.100.0/24", "100.64.0.0/10"}, 2},
		{peer, v4, 1, []string{"203.0.113.0/24"}, 2},
	}, calls)
}
