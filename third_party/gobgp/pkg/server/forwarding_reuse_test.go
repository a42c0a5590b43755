package server

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// seen is what a watcher was told by one forwarding event.
type seen struct {
	prefixes []string
	list     *apiutil.Forwarding // the list's first element: its backing array
}

// TestForwardingEventsReused: the forwarding events' lists are handed back once
// the watchers' OnForwarding returned and reused for the next (a full table's
// load made a new one for each path selected), however many wait in the
// watchers' queues, and every event still says, while its callback runs, what
// its own UPDATE changed. Two watchers each see every event.
func TestForwardingEventsReused(t *testing.T) {
	ctx := context.Background()
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := func() chan seen {
		ch := make(chan seen, 1)
		require.NoError(t, s.WatchEvent(wctx, WatchEventMessageCallbacks{
			OnForwarding: func(fs []apiutil.Forwarding, _ time.Time) {
				var v seen
				for i := range fs {
					v.prefixes = append(v.prefixes, fs[i].Nlri.String())
				}
				v.list = &fs[0]
				ch <- v
			},
		}, WatchForwarding(false)))
		return ch
	}
	w1, w2 := watch(), watch()

	a := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.0.0.2"))
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65002})}), nh}
	// UPDATEs of two prefixes, and of 300 (as BIRD packs a full table's).
	for _, size := range []struct{ updates, prefixes int }{{100, 2}, {20, 300}} {
		lists := forwardUpdates(t, s, a, attrs, size.updates, size.prefixes, w1, w2)
		// An event a path: one UPDATE's events are in the watchers' hands at a
		// time (the second watcher's wait while the test reads the first's), so
		// about as many lists as an UPDATE has prefixes, not one an event; a
		// collection meanwhile may take a few. A free list of 256 made about 1,100.
		if max := size.prefixes + size.prefixes/5 + 4; len(lists) > max {
			t.Errorf("%d UPDATEs of %d prefixes: their events came in %d lists, want at most %d (their lists reused)", size.updates, size.prefixes, len(lists), max)
		}
	}
}

// forwardUpdates propagates updates UPDATEs of n prefixes from a, one at a time,
// checks that each watcher is told each UPDATE's destinations, and returns the
// lists (their first elements) the events came in.
func forwardUpdates(t *testing.T, s *BgpServer, a *peer, attrs []bgp.PathAttributeInterface, updates, n int, ws ...chan seen) map[*apiutil.Forwarding]bool {
	t.Helper()
	lists := map[*apiutil.Forwarding]bool{}
	for i := range updates {
		var paths []*table.Path
		var want []string
		for j := range n {
			pfx := netip.MustParsePrefix(fmt.Sprintf("%d.%d.%d.0/24", 10+n/100, 2*i+j/256, j%256))
			nlri, _ := bgp.NewIPAddrPrefix(pfx)
			paths = append(paths, table.NewPath(bgp.RF_IPv4_UC, a.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false))
			want = append(want, pfx.String())
		}
		s.propagateUpdate(a, paths)
		for _, w := range ws {
			// The UPDATE's destinations, in one event or several.
			var got []string
			for len(got) < len(want) {
				select {
				case v := <-w:
					got = append(got, v.prefixes...)
					lists[v.list] = true
				case <-time.After(5 * time.Second):
					t.Fatalf("UPDATE %d: forwarding events for %v, want %v", i, got, want)
				}
			}
			require.Equal(t, want, got, "UPDATE %d's events", i)
		}
	}
	return lists
}
