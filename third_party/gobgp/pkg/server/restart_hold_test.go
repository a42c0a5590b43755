package server

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestHoldRestartSync: a restarting server told to hold its sync sends its peer
// nothing, neither when the peer's End-of-RIB arrives nor when the deferral timer
// expires, until the embedder releases it; then the peer gets its routes.
func TestHoldRestartSync(t *testing.T) {
	ctx := context.Background()
	gr := func(restarting bool) *api.GracefulRestart {
		return &api.GracefulRestart{Enabled: true, RestartTime: 120, DeferralTime: 1, LocalRestarting: restarting}
	}
	afi := func() []*api.AfiSafi {
		return []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, Enabled: true},
			MpGracefulRestart: &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}}}
	}

	helper := NewBgpServer()
	go helper.Serve()
	require.NoError(t, helper.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 2, RouterId: "2.2.2.2", ListenPort: 10181}}))
	t.Cleanup(func() { _ = helper.StopBgp(ctx, &api.StopBgpRequest{}) })
	require.NoError(t, helper.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 1}, Transport: &api.Transport{PassiveMode: true},
		GracefulRestart: gr(false), AfiSafis: afi()}}))

	restarting := NewBgpServer()
	go restarting.Serve()
	require.NoError(t, restarting.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 1, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { _ = restarting.StopBgp(ctx, &api.StopBgpRequest{}) })
	restarting.HoldRestartSync()
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.0.0.1"))
	prefix, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.0.0.0/24"))
	path, _ := apiutil.NewPath(bgp.RF_IPv4_UC, prefix, false, []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}, time.Now())
	_, err := restarting.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{mustApi2apiutilPath(path)}})
	require.NoError(t, err)

	up := newPeerStateWaiter(helper, api.PeerState_SESSION_STATE_ESTABLISHED)
	require.NoError(t, restarting.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 2}, Transport: &api.Transport{RemotePort: 10181},
		Timers: &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}}, GracefulRestart: gr(true), AfiSafis: afi()}}))
	up.Wait(t, 10*time.Second)

	received := func() int {
		n := 0
		require.NoError(t, helper.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC},
			func(bgp.NLRI, []*apiutil.Path) { n++ }))
		return n
	}
	// The helper's End-of-RIB went out with its (empty) dump; the deferral timer is
	// one second. Held, nothing reaches the helper.
	time.Sleep(2500 * time.Millisecond)
	require.Equal(t, 0, received(), "the held restarting server sent its routes")

	require.NoError(t, restarting.ReleaseRestartSync(ctx))
	require.Eventually(t, func() bool { return received() == 1 }, 5*time.Second, 20*time.Millisecond, "released, the route never reached the helper")
}
