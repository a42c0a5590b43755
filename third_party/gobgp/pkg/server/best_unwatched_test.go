package server

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestBestPathEventsOnlyWhenWatched: best-path events clone every best path; with
// no best-path watcher nothing is built (this ran for every UPDATE), with one the
// event still comes.
func TestBestPathEventsOnlyWhenWatched(t *testing.T) {
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: 65000, RouterId: "1.1.1.1", ListenPort: -1}}))
	defer s.Stop() // the BFD server too: goleak checks in bfd_server_test.go follow

	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	t.Cleanup(func() { cleanInfiniteChannel(p.fsm.outgoingCh) })
	var best []*table.Path
	for i := range 16 {
		nlri, _ := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24))
		best = append(best, table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false,
			[]bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}, time.Now(), false))
	}
	if allocs := testing.AllocsPerRun(50, func() { s.notifyBestWatcher(best, nil, nil, nil) }); allocs > 0 {
		t.Errorf("notifying 16 best paths with no best-path watcher allocates %.0f times, want none", allocs)
	}

	w, err := s.watch(WatchBestPath(false))
	require.NoError(t, err)
	defer w.Stop()
	s.notifyBestWatcher(best, nil, nil, nil)
	select {
	case e := <-w.Event():
		require.Len(t, e.(*watchEventBestPath).PathList, 16)
	case <-time.After(5 * time.Second):
		t.Fatal("a best-path watcher got no event")
	}
}
