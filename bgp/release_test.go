package bgp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestReleasedChangeListsReused: an event's change list handed back (Release) is
// filled again by a later forwarding event instead of a new one (a full table's
// load made one for each UPDATE), and every event holds its own changes, the
// next hops of equal paths included; a list too long to keep is not reused.
func TestReleasedChangeListsReused(t *testing.T) {
	s := &Speaker{events: make(chan Event, 4), changeLists: make(chan []Change, eventBuffer), done: make(chan struct{})}
	fwd := func(prefix, nexthop string, multipath ...string) apiutil.Forwarding {
		nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		f := apiutil.Forwarding{Family: bgp.RF_IPv4_UC, Nlri: nlri,
			Best: apiutil.ForwardingPath{Nexthop: netip.MustParseAddr(nexthop), PeerAddress: netip.MustParseAddr(nexthop)}}
		for _, m := range multipath {
			f.Multipath = append(f.Multipath, apiutil.ForwardingPath{Nexthop: netip.MustParseAddr(m), PeerAddress: netip.MustParseAddr(m)})
		}
		return f
	}
	lists := map[*Change]bool{}
	for i := range 100 {
		nh := netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + i%200)})
		fs := []apiutil.Forwarding{fwd("10.0.0.0/24", nh.String()), fwd("10.0.1.0/24", nh.String(), "192.0.2.250")}
		s.onForwarding(fs, time.Now())
		ev := <-s.events
		if len(ev.Changes) != 2 || ev.Changes[0].Prefix != netip.MustParsePrefix("10.0.0.0/24") || ev.Changes[1].Nexthop != nh {
			t.Fatalf("event %d: changes %+v, want its two destinations through %s", i, ev.Changes, nh)
		}
		if len(ev.Changes[0].Multipath) != 0 || len(ev.Changes[1].Multipath) != 1 || ev.Changes[1].Multipath[0].Nexthop != netip.MustParseAddr("192.0.2.250") {
			t.Fatalf("event %d: equal paths %v and %v, want none and 192.0.2.250", i, ev.Changes[0].Multipath, ev.Changes[1].Multipath)
		}
		lists[&ev.Changes[:1][0]] = true
		s.Release(ev)
	}
	if len(lists) != 1 {
		t.Errorf("100 events released one by one came in %d lists, want one reused", len(lists))
	}

	// A list longer than maxReleasedChanges is left to the collector.
	long := make([]apiutil.Forwarding, maxReleasedChanges+1)
	for i := range long {
		long[i] = fwd(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 32).String(), "192.0.2.1")
	}
	s.onForwarding(long, time.Now())
	ev := <-s.events
	s.Release(ev)
	if n := len(s.changeLists); n != 1 {
		t.Errorf("after a long list's release the speaker keeps %d lists, want 1 (the short one)", n)
	}
}
