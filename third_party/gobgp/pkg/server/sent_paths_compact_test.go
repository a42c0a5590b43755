package server

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestSentPathsWithoutAddPathKeepNoSetPerPrefix: what a peer without add-path send
// was sent is recorded per prefix without a set of path ids (one shared value), and
// reads as before: sent once, counted once, gone with its withdrawal. A peer with
// add-path send keeps its sets.
func TestSentPathsWithoutAddPathKeepNoSetPerPrefix(t *testing.T) {
	for _, c := range []struct {
		name string
		mode bgp.BGPAddPathMode
	}{{"no add-path", bgp.BGP_ADD_PATH_NONE}, {"add-path send", bgp.BGP_ADD_PATH_SEND}} {
		t.Run(c.name, func(t *testing.T) {
			s := NewBgpServer()
			go s.Serve()
			require.NoError(t, s.StartBgp(context.Background(), &api.StartBgpRequest{
				Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1},
			}))
			t.Cleanup(func() { require.NoError(t, s.StopBgp(context.Background(), &api.StopBgpRequest{})) })
			p := newPeerandInfo(t, 65001, 65002, "10.0.0.1", s.globalRib)
			p.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: c.mode})

			const n = 16
			paths := make([]*table.Path, n)
			for i := range paths {
				prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 32).String()
				paths[i] = makePath(t, prefix, "192.0.2.254", 0)
			}
			p.updateRoutes(paths...)
			p.updateRoutes(paths...) // sent again: still one each
			sets := 0
			p.sentPaths.Range(func(_, v any) bool {
				if _, ok := v.(pathIDSet); ok {
					sets++
				}
				return true
			})
			if c.mode == bgp.BGP_ADD_PATH_NONE {
				require.Zero(t, sets, "destinations recorded with a set of their own")
			} else {
				require.Equal(t, n, sets)
			}
			for _, path := range paths {
				require.True(t, p.hasPathAlreadyBeenSent(path))
				require.Equal(t, uint8(1), p.getRoutesCount(bgp.RF_IPv4_UC, path.GetPrefix()))
			}
			p.updateRoutes(paths[0].Clone(true))
			require.False(t, p.hasPathAlreadyBeenSent(paths[0]), "withdrawn")
			require.Zero(t, p.getRoutesCount(bgp.RF_IPv4_UC, paths[0].GetPrefix()))
			require.True(t, p.hasPathAlreadyBeenSent(paths[1]))
		})
	}
}
