package server

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestImportFilter: the ImportFilter sees every path a neighbour announces, with the
// neighbour's address and AS and the path's attributes, before the import policy; a
// path it rejects stays out of the Loc-RIB, and one it rejects after accepting an
// earlier path for the prefix withdraws that one. Locally originated paths are not
// filtered.
func TestImportFilter(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	reject := map[netip.Prefix]bool{netip.MustParsePrefix("198.51.100.0/24"): true}
	var seen []string
	filter := func(peer netip.Addr, peerAS uint32, family bgp.Family, nlri bgp.NLRI, attrs []bgp.PathAttributeInterface) bool {
		mu.Lock()
		defer mu.Unlock()
		p := nlri.(*bgp.IPAddrPrefix).Prefix
		hasPath := false
		for _, a := range attrs {
			_, ok := a.(*bgp.PathAttributeAsPath)
			hasPath = hasPath || ok
		}
		seen = append(seen, peer.String()+" "+p.String())
		require.Equal(t, uint32(65002), peerAS)
		require.Equal(t, bgp.RF_IPv4_UC, family)
		require.True(t, hasPath, "the filter gets the path's attributes")
		return !reject[p]
	}
	s := NewBgpServer(ImportFilterOption(filter))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })
	p := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	p.policy = s.policy

	inRIB := func(prefix string) bool {
		for _, path := range s.globalRib.GetPathList(table.GLOBAL_RIB_NAME, 0, []bgp.Family{bgp.RF_IPv4_UC}) {
			if path.GetNlri().String() == prefix {
				return true
			}
		}
		return false
	}
	// from is a path as the neighbour sent it (its source set).
	from := func(path *table.Path) *table.Path {
		return table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: path.GetNlri()}, false, path.GetPathAttrs(), path.GetTimestamp(), false)
	}
	s.propagateUpdate(p, []*table.Path{from(makePath(t, "192.0.2.0/24", "10.0.0.2", 0)), from(makePath(t, "198.51.100.0/24", "10.0.0.2", 0))})
	require.True(t, inRIB("192.0.2.0/24"), "an accepted path is in the Loc-RIB")
	require.False(t, inRIB("198.51.100.0/24"), "a rejected path is not")
	require.Equal(t, []string{"10.0.0.2 192.0.2.0/24", "10.0.0.2 198.51.100.0/24"}, seen)

	mu.Lock()
	reject[netip.MustParsePrefix("192.0.2.0/24")] = true
	mu.Unlock()
	s.propagateUpdate(p, []*table.Path{from(makePath(t, "192.0.2.0/24", "10.0.0.2", 100))})
	require.False(t, inRIB("192.0.2.0/24"), "a path rejected after an accepted one withdraws it")

	s.propagateUpdate(nil, []*table.Path{makePath(t, "198.51.100.0/24", "10.0.0.9", 0)})
	require.True(t, inRIB("198.51.100.0/24"), "a locally originated path is not filtered")
	require.Len(t, seen, 3)
}
