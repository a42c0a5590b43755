package server

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestUpdateEventNeighbor: a pre-policy update event says which neighbour sent it
// (what watchers filter on and MRT reads) without a copy of the neighbour's whole
// state (its capabilities, its OPEN message, its counters) made for every UPDATE:
// the peer's events share one until its configuration changes.
func TestUpdateEventNeighbor(t *testing.T) {
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: 65000, RouterId: "1.1.1.1", ListenPort: -1}}))
	defer s.StopBgp(context.Background(), &api.StopBgpRequest{})

	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	// An established session's state: the peer's capabilities and OPEN.
	caps := []bgp.ParameterCapabilityInterface{bgp.NewCapFourOctetASNumber(65001), bgp.NewCapMultiProtocol(bgp.RF_IPv4_UC), bgp.NewCapRouteRefresh()}
	p.fsm.capMap = map[bgp.BGPCapabilityCode][]bgp.ParameterCapabilityInterface{}
	for _, c := range caps {
		p.fsm.capMap[c.Code()] = append(p.fsm.capMap[c.Code()], c)
	}
	open, err := bgp.NewBGPOpenMessage(65001, 90, netip.MustParseAddr("192.168.0.1"), []bgp.OptionParameterInterface{bgp.NewOptionParameterCapability(caps)})
	require.NoError(t, err)
	p.fsm.recvOpen = open

	w, err := s.watch(WatchUpdate(false, "", ""))
	require.NoError(t, err)
	defer w.Stop()

	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.10.10.0/24"))
	path := table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false,
		[]bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}, time.Now(), false)
	next := func() *oc.Neighbor {
		t.Helper()
		s.notifyPrePolicyUpdateWatcher(p, []*table.Path{path}, nil, time.Now(), nil)
		select {
		case e := <-w.Event():
			return e.(*watchEventUpdate).Neighbor
		case <-time.After(5 * time.Second):
			t.Fatal("no update event")
		}
		return nil
	}
	n := next()
	require.NotNil(t, n)
	require.Equal(t, netip.MustParseAddr("192.168.0.1"), n.State.NeighborAddress)
	require.Equal(t, uint32(65001), n.Config.PeerAs)
	require.False(t, n.IsAddPathReceiveEnabled(bgp.RF_IPv4_UC))
	if len(n.State.RemoteCapabilityList) > 0 || len(n.State.LocalCapabilityList) > 0 || n.State.ReceivedOpenMessage != nil {
		t.Errorf("the event's neighbour carries %d remote and %d local capabilities and an OPEN message (%v): copied for every UPDATE, read by no watcher",
			len(n.State.RemoteCapabilityList), len(n.State.LocalCapabilityList), n.State.ReceivedOpenMessage != nil)
	}
	if n2 := next(); n2 != n {
		t.Error("two UPDATEs of one session carry two copies of the neighbour's configuration, want one shared")
	}
	// A configuration change shows in the next event.
	conf := p.fsm.pConf.ReadCopy()
	conf.Config.Description = "changed"
	p.fsm.pConf.Update(&conf)
	if n3 := next(); n3 == n || n3.Config.Description != "changed" {
		t.Errorf("after a configuration change the event's neighbour says %q, want the new configuration", n3.Config.Description)
	}
}
