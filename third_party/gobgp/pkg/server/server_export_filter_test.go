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
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestExportFilter: a path the ExportFilter refuses for a neighbour is dropped before
// anything is done for it there (no clone, no AS path prepended, no policy
// evaluation: nothing allocated), with the neighbour's address and AS and whether
// the path is locally originated given to the filter; a path it takes goes through
// as before, and so does a refused path that replaces one the filter takes (the
// neighbour may need its withdrawal).
func TestExportFilter(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	type call struct {
		peer  netip.Addr
		as    uint32
		local bool
	}
	var last call
	var calls int
	filter := func(peer netip.Addr, peerAS uint32, family bgp.Family, nlri bgp.NLRI, local bool) bool {
		mu.Lock()
		defer mu.Unlock()
		last, calls = call{peer, peerAS, local}, calls+1
		if family != bgp.RF_IPv4_UC {
			t.Errorf("family %v", family)
		}
		return local // an edge router's upstream is sent its own prefixes alone
	}
	s := NewBgpServer(ExportFilterOption(filter))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })
	upstream := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	upstream.policy = s.policy
	// IPv4 unicast alone (no route target constraint to filter by).
	upstream.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: bgp.BGP_ADD_PATH_NONE})
	other := newPeerandInfo(t, 65001, 65003, "10.0.0.3", s.globalRib)

	// A path learned from another neighbour: refused, at no cost.
	learned := table.NewPath(bgp.RF_IPv4_UC, other.peerInfo.Load(), bgp.PathNLRI{NLRI: makePath(t, "192.0.2.0/24", "10.0.0.3", 0).GetNlri()},
		false, makePath(t, "192.0.2.0/24", "10.0.0.3", 0).GetPathAttrs(), time.Now(), false)
	require.Nil(t, s.filterpath(upstream, learned, nil), "a learned path the filter refuses is not sent")
	require.Equal(t, call{netip.MustParseAddr("10.0.0.2"), 65002, false}, last)
	require.Equal(t, 1, calls, "the filter is asked once (there is no replaced path)")
	if allocs := testing.AllocsPerRun(100, func() { s.filterpath(upstream, learned, nil) }); allocs != 0 {
		t.Errorf("a refused path costs %.0f allocations per neighbour: it was cloned or evaluated", allocs)
	}

	// A locally originated path: sent, its attributes rewritten for the neighbour.
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
	ownNLRI, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("198.51.100.0/24"))
	own := table.NewPath(bgp.RF_IPv4_UC, &table.PeerInfo{ID: netip.MustParseAddr("1.1.1.1")}, bgp.PathNLRI{NLRI: ownNLRI}, false,
		[]bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath(nil), nh}, time.Now(), false)
	require.True(t, own.IsLocal())
	out := s.filterpath(upstream, own, nil)
	require.NotNil(t, out, "a local path the filter takes is sent")
	require.True(t, last.local, "the filter is told the path is local")
	require.Equal(t, []uint32{65001}, out.GetAsList(), "its AS path is prepended for the eBGP neighbour as before")

	// A refused path that replaces a path the filter takes: processed as before.
	require.NotNil(t, s.filterpath(upstream, learned, own), "a refused path replacing a sent one is not dropped early")

	// Without a filter, the learned path goes through the policy (which takes it).
	plain := NewBgpServer()
	require.NotNil(t, plain.filterpath(upstream, learned, nil))
}
