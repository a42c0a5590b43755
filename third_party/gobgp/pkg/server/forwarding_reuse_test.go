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

// TestForwardingEventsReused: the forwarding events' lists are handed back once
// the watchers' OnForwarding returned and reused for the next UPDATEs (a full
// table's load made a new one for each), and every event still says, while its
// callback runs, what its own UPDATE changed. Two watchers each see every event.
func TestForwardingEventsReused(t *testing.T) {
	ctx := context.Background()
	s := NewBgpServer()
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })

	type seen struct {
		prefixes []string
		list     *apiutil.Forwarding // the list's first element: its backing array
	}
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
	// Lists other tests' events left on the free list would be counted below.
	for len(forwardingEvents) > 0 {
		<-forwardingEvents
	}

	a := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.0.0.2"))
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65002})}), nh}
	const updates = 100
	lists := map[*apiutil.Forwarding]bool{}
	for i := range updates {
		// Two prefixes an UPDATE.
		var paths []*table.Path
		var want []string
		for j := range 2 {
			pfx := netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", i, j))
			nlri, _ := bgp.NewIPAddrPrefix(pfx)
			paths = append(paths, table.NewPath(bgp.RF_IPv4_UC, a.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false))
			want = append(want, pfx.String())
		}
		s.propagateUpdate(a, paths)
		for _, w := range []chan seen{w1, w2} {
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
	// One UPDATE's events are in the watchers' hands at a time: a few lists, not
	// one an UPDATE (or more).
	if len(lists) > 4 {
		t.Errorf("%d UPDATEs' events came in %d lists, want their lists reused", updates, len(lists))
	}
}
