// Copyright (C) 2026 fibfleet authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or
// implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package server

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestEstablishedPeerGetsUpdatesAfterInitialDump: when a session becomes
// established, handleFSMMessage dumps the Loc-RIB to the peer, and the FSM goroutine
// stores the established state only after that callback returns. An update that
// another peer's goroutine applies to the Loc-RIB after the dump has read it, and
// propagates before that store, must still reach the peer: it is in neither the dump
// nor, before the fix, the propagation (which skips peers that are not established),
// so the peer never learned it.
func TestEstablishedPeerGetsUpdatesAfterInitialDump(t *testing.T) {
	ctx := context.Background()
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{
		Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1},
	}))
	require.NoError(t, s.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{
		Assignment: &api.PolicyAssignment{
			Name:          table.GLOBAL_RIB_NAME,
			Direction:     api.PolicyDirection_POLICY_DIRECTION_EXPORT,
			DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT,
		},
	}))

	peerAddr := netip.MustParseAddr("10.0.0.1")
	p := newPeerandInfo(t, 65001, 65002, peerAddr.String(), s.globalRib)
	p.policy = s.policy
	p.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: bgp.BGP_ADD_PATH_NONE})
	p.fsm.lock.Lock()
	conf := p.fsm.pConf.ReadCopy()
	conf.State.SessionState = "openconfirm"
	p.fsm.pConf.Update(&conf)
	p.fsm.lock.Unlock()
	p.fsm.state.Store(bgp.BGP_FSM_OPENCONFIRM)
	require.NoError(t, s.mgmtOperation(func() error {
		s.neighborMap[peerAddr] = p
		return nil
	}, true))
	t.Cleanup(func() {
		require.NoError(t, s.mgmtOperation(func() error {
			delete(s.neighborMap, peerAddr)
			return nil
		}, false))
		cleanInfiniteChannel(p.fsm.outgoingCh)
		require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{}))
	})

	// In the Loc-RIB before the session comes up: the initial dump carries it.
	s.propagateUpdate(nil, []*table.Path{makePath(t, "192.0.2.0/32", "192.0.2.254", 0)})

	// The FSM's callback for the transition: the initial dump.
	s.handleFSMMessage(p, &fsmMsg{
		MsgType:     fsmMsgStateChange,
		MsgData:     bgp.BGP_FSM_ESTABLISHED,
		StateReason: newfsmStateReason(fsmOpenMsgNegotiated, nil, nil),
		timestamp:   time.Now(),
	})
	// Another peer's update, handled concurrently, lands between the callback and
	// the FSM's store of the state.
	s.propagateUpdate(nil, []*table.Path{makePath(t, "192.0.2.1/32", "192.0.2.254", 0)})
	p.fsm.state.Store(bgp.BGP_FSM_ESTABLISHED) // what the FSM goroutine does next

	sent := map[string]bool{}
	for len(sent) < 2 {
		select {
		case o := <-p.fsm.outgoingCh.Out():
			msg, ok := takeOutgoing(p.fsm, o)
			require.True(t, ok)
			for _, path := range msg.Paths {
				if path != nil && !path.IsEOR() && !path.IsWithdraw {
					sent[path.GetPrefix()] = true
				}
			}
		case <-time.After(time.Second):
			t.Fatalf("the peer was sent %v; want both 192.0.2.0/32 (in the initial dump) and 192.0.2.1/32 (propagated after it)", sent)
		}
	}
}
