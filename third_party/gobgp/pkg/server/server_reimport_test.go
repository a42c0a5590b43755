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

// TestReimportWithin: after the import filter's answer changes for some prefixes,
// ReimportWithin runs exactly the neighbour's paths within the given prefixes
// through import again: a route now accepted enters the Loc-RIB, one now rejected
// leaves it, and the filter sees no other path.
func TestReimportWithin(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	reject := map[netip.Prefix]bool{netip.MustParsePrefix("198.51.100.0/24"): true}
	var seen []string
	filter := func(_ netip.Addr, _ uint32, _ bgp.Family, nlri bgp.NLRI, _ []bgp.PathAttributeInterface) bool {
		mu.Lock()
		defer mu.Unlock()
		p := nlri.(*bgp.IPAddrPrefix).Prefix
		seen = append(seen, p.String())
		return !reject[p]
	}
	s := NewBgpServer(ImportFilterOption(filter))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })
	p := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	p.policy = s.policy
	require.NoError(t, s.mgmtOperation(func() error { s.neighborMap[netip.MustParseAddr("10.0.0.2")] = p; return nil }, true))
	t.Cleanup(func() {
		_ = s.mgmtOperation(func() error { delete(s.neighborMap, netip.MustParseAddr("10.0.0.2")); return nil }, true)
	})

	inRIB := func(prefix string) bool {
		for _, path := range s.globalRib.GetPathList(table.GLOBAL_RIB_NAME, 0, []bgp.Family{bgp.RF_IPv4_UC}) {
			if path.GetNlri().String() == prefix {
				return true
			}
		}
		return false
	}
	from := func(path *table.Path) *table.Path {
		return table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: path.GetNlri()}, false, path.GetPathAttrs(), path.GetTimestamp(), false)
	}
	paths := []*table.Path{from(makePath(t, "192.0.2.0/24", "10.0.0.2", 0)), from(makePath(t, "198.51.100.0/24", "10.0.0.2", 0)),
		from(makePath(t, "203.0.113.0/24", "10.0.0.2", 0))}
	require.NoError(t, s.mgmtOperation(func() error {
		p.adjRibIn.Update(paths) // as a received UPDATE does
		s.propagateUpdate(p, paths)
		return nil
	}, true))
	require.True(t, inRIB("192.0.2.0/24"))
	require.False(t, inRIB("198.51.100.0/24"))
	require.True(t, inRIB("203.0.113.0/24"))

	mu.Lock()
	reject = map[netip.Prefix]bool{netip.MustParsePrefix("203.0.113.0/24"): true}
	seen = nil
	mu.Unlock()
	require.NoError(t, s.ReimportWithin(ctx, []netip.Prefix{netip.MustParsePrefix("198.51.100.0/22")}))
	require.True(t, inRIB("198.51.100.0/24"), "the route now accepted is in the Loc-RIB")
	require.True(t, inRIB("203.0.113.0/24"), "a route outside the prefixes is not checked again")
	mu.Lock()
	require.Equal(t, []string{"198.51.100.0/24"}, seen, "only the routes within the prefixes are checked again")
	mu.Unlock()

	require.NoError(t, s.ReimportWithin(ctx, []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}))
	require.False(t, inRIB("203.0.113.0/24"), "the route now rejected leaves the Loc-RIB")
	require.True(t, inRIB("192.0.2.0/24"))
}
