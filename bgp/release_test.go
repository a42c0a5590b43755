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
// load made one for each path selected), and every event holds its own changes,
// the next hops of equal paths included; lists of hundreds of changes too; a list
// longer than the largest class is not reused.
func TestReleasedChangeListsReused(t *testing.T) {
	s := &Speaker{events: make(chan Event, 4), done: make(chan struct{})}
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
	// A collection meanwhile may empty the pool once or twice.
	if len(lists) > 3 {
		t.Errorf("100 events released one by one came in %d lists, want one reused", len(lists))
	}

	// Events of 300 changes, and one past the largest class, left to the collector.
	many := func(n int) []apiutil.Forwarding {
		fs := make([]apiutil.Forwarding, n)
		for i := range fs {
			fs[i] = fwd(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 32).String(), "192.0.2.1")
		}
		return fs
	}
	lists = map[*Change]bool{}
	for range 20 {
		s.onForwarding(many(300), time.Now())
		ev := <-s.events
		if len(ev.Changes) != 300 || ev.Changes[299].Prefix != netip.MustParsePrefix("10.1.1.43/32") {
			t.Fatalf("an event of 300: %d changes, the last %v", len(ev.Changes), ev.Changes[len(ev.Changes)-1].Prefix)
		}
		lists[&ev.Changes[0]] = true
		s.Release(ev)
	}
	if len(lists) > 3 {
		t.Errorf("20 events of 300 changes released one by one came in %d lists, want one reused", len(lists))
	}
	largest := changeListSizes[len(changeListSizes)-1]
	lists = map[*Change]bool{}
	for range 2 {
		s.onForwarding(many(largest+1), time.Now())
		ev := <-s.events
		lists[&ev.Changes[0]] = true
		s.Release(ev)
	}
	if len(lists) != 2 {
		t.Errorf("two events of %d changes, more than the largest class, came in %d lists, want each its own", largest+1, len(lists))
	}
}
