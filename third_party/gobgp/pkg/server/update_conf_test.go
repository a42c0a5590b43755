package server

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestUpdateKeepsNeighborConfig: handling an UPDATE leaves the neighbour's
// configuration as it is (it copied the whole of it, twice, for every UPDATE, to
// record a time the fsm records already), and the time of the last UPDATE is still
// what the neighbour's state reports.
func TestUpdateKeepsNeighborConfig(t *testing.T) {
	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	s := NewBgpServer()
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.168.0.1"))
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.10.10.0/24"))
	msg := bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65001})}),
		nh,
	}, []bgp.PathNLRI{{NLRI: nlri}})

	before := p.fsm.pConf.ReadOnly()
	// What the fsm does as it reads an UPDATE.
	p.fsm.bgpMessageStateUpdate(bgp.BGP_MSG_UPDATE, true)
	paths, _, _ := p.handleUpdate(&fsmMsg{MsgType: fsmMsgBGPMessage, MsgData: msg, timestamp: time.Now()})
	require.Len(t, paths, 1)
	if p.fsm.pConf.ReadOnly() != before {
		t.Error("handling an UPDATE replaced the neighbour's configuration with a copy")
	}
	got := s.toConfig(p, false).Timers.State.UpdateRecvTime
	if now := time.Now().Unix(); got < now-5 || got > now || got != atomic.LoadInt64(&p.fsm.timerStats.State.UpdateRecvTime) {
		t.Errorf("the neighbour's last UPDATE time is %d, want now (%d)", got, now)
	}
}
