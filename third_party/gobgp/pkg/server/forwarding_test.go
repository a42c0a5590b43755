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
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestWatchForwarding: a forwarding watcher hears of each destination's best path,
// equal paths (with UseMultiplePaths) and backup (the best path through another next
// hop), including a backup that arrives or leaves while the best path stays, which the
// best-path watcher never reports; a destination with no path left comes as a
// withdrawal. With current, the first event lists what the RIB already holds.
func TestWatchForwarding(t *testing.T) {
	ctx := context.Background()
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })

	var mu sync.Mutex
	var got []apiutil.Forwarding
	var bests int
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, s.WatchEvent(wctx, WatchEventMessageCallbacks{
		OnForwarding: func(fs []apiutil.Forwarding, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fs...)
		},
		OnBestPath: func(ps []*apiutil.Path, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			bests += len(ps)
		},
	}, WatchForwarding(false), WatchBestPath(false)))
	// next waits for the next forwarding change and returns it with how many best
	// path changes came along.
	next := func() (apiutil.Forwarding, int) {
		t.Helper()
		var f apiutil.Forwarding
		var b int
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 {
				return false
			}
			f, got, b, bests = got[0], got[1:], bests, 0
			return true
		}, 5*time.Second, time.Millisecond)
		return f, b
	}
	nexthop := func(p *apiutil.ForwardingPath) netip.Addr { return p.Nexthop }

	a := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	b := newPeerandInfo(t, 65001, 65003, "10.0.0.3", s.globalRib)
	from := func(p *peer, nh string, asPath []uint32, withdraw bool) *table.Path {
		path := makePath(t, "192.0.2.0/24", nh, 0)
		attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, asPath)})}
		nhAttr, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr(nh))
		return table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: path.GetNlri()}, withdraw, append(attrs, nhAttr), time.Now(), false)
	}

	s.propagateUpdate(a, []*table.Path{from(a, "10.0.0.2", []uint32{65002}, false)})
	f, _ := next()
	require.Equal(t, "10.0.0.2", nexthop(&f.Best).String())
	require.Nil(t, f.Backup)
	require.Empty(t, f.Multipath)

	// b's path is worse (longer AS path): the best stays, a backup arrives.
	s.propagateUpdate(b, []*table.Path{from(b, "10.0.0.3", []uint32{65003, 65010}, false)})
	f, nb := next()
	require.Equal(t, "10.0.0.2", nexthop(&f.Best).String())
	require.NotNil(t, f.Backup, "the other next hop's path is the backup")
	require.Equal(t, "10.0.0.3", nexthop(f.Backup).String())
	require.Zero(t, nb, "the best-path watcher heard of no change")

	// The best goes: b's path is the best, no backup.
	s.propagateUpdate(a, []*table.Path{from(a, "10.0.0.2", []uint32{65002}, true)})
	f, _ = next()
	require.Equal(t, "10.0.0.3", nexthop(&f.Best).String())
	require.Nil(t, f.Backup)

	// Nothing left: a withdrawal.
	s.propagateUpdate(b, []*table.Path{from(b, "10.0.0.3", []uint32{65003, 65010}, true)})
	f, _ = next()
	require.True(t, f.Withdrawn)
	require.Equal(t, "192.0.2.0/24", f.Nlri.String())
	require.Equal(t, bgp.RF_IPv4_UC, f.Family)
	require.Equal(t, "10.0.0.3", f.Best.PeerAddress.String(), "the last best path's")

	// Multipath: two equal paths are the best and its equal; a third next hop, worse,
	// is the backup.
	old := table.UseMultiplePaths.Enabled
	table.UseMultiplePaths.Enabled = true
	t.Cleanup(func() { table.UseMultiplePaths.Enabled = old })
	c := newPeerandInfo(t, 65001, 65004, "10.0.0.4", s.globalRib)
	s.propagateUpdate(a, []*table.Path{from(a, "10.0.0.2", []uint32{65002}, false)})
	next()
	s.propagateUpdate(b, []*table.Path{from(b, "10.0.0.3", []uint32{65003}, false)})
	f, _ = next()
	require.Len(t, f.Multipath, 1, "an equal path from another neighbour AS (GoBGP's multipath ignores it)")
	require.ElementsMatch(t, []string{"10.0.0.2", "10.0.0.3"}, []string{nexthop(&f.Best).String(), nexthop(&f.Multipath[0]).String()})
	s.propagateUpdate(c, []*table.Path{from(c, "10.0.0.4", []uint32{65004, 65010}, false)})
	f, _ = next()
	require.NotNil(t, f.Backup)
	require.Equal(t, "10.0.0.4", nexthop(f.Backup).String())

	// A new watcher with current gets the RIB's forwarding paths first.
	var init []apiutil.Forwarding
	done := make(chan struct{})
	require.NoError(t, s.WatchEvent(wctx, WatchEventMessageCallbacks{OnForwarding: func(fs []apiutil.Forwarding, _ time.Time) {
		if init == nil {
			init = fs
			close(done)
		}
	}}, WatchForwarding(true)))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no initial forwarding event")
	}
	require.Len(t, init, 1)
	require.Len(t, init[0].Multipath, 1)
	require.Equal(t, "10.0.0.4", nexthop(init[0].Backup).String())
}
