package bgp

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestAdjInCounts: what GoBGP tells of each UPDATE (its AdjRibInHook) becomes each
// neighbour's load progress and prefixes held per family: announcements of a session
// whose start the peer events have not told yet count for it once they do; other
// families are not counted; withdrawals reach the import filter's record of what it
// refused.
func TestAdjInCounts(t *testing.T) {
	peer := netip.MustParseAddr("192.0.2.1")
	s := &Speaker{log: slog.New(slog.NewTextHandler(io.Discard, nil)), done: make(chan struct{}),
		loads: map[netip.Addr]*Load{peer: {Neighbor: peer}}, adjIn: map[netip.Addr]*adjIn{peer: newAdjIn(0, 0)}, importFilter: newImportFilter(65000)}
	s.peers = map[netip.Addr]*PeerStatus{peer: {Address: peer, State: "idle"}}
	s.eors = map[netip.Addr]map[bgp.Family]bool{peer: {}}
	s.importFilter.set(peer, &ImportRules{})
	s.importFilter.held[peer].add(netip.MustParsePrefix("198.51.100.0/24")) // refused earlier
	nlri := func(p string) bgp.NLRI {
		n, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(p))
		return n
	}
	load := func() Load { return s.Loads()[0] }

	s.onAdjIn(peer, bgp.RF_IPv4_UC, 3, nil, 3) // before the session's start is told
	if l := load(); l.Received != 0 || l.Prefixes != [2]uint64{3, 0} {
		t.Fatalf("load %+v before the peer event, want nothing received yet and 3 IPv4 prefixes held", l)
	}
	state := func(st bgp.FSMState) {
		s.peerState(&apiutil.WatchEventMessage_PeerEvent{Peer: apiutil.Peer{State: apiutil.PeerState{NeighborAddress: peer, SessionState: st}}}, time.Now())
	}
	state(bgp.BGP_FSM_ESTABLISHED)
	s.onAdjIn(peer, bgp.RF_IPv6_UC, 2, nil, 2)
	s.onAdjIn(peer, bgp.RF_IPv4_UC, 1, []bgp.NLRI{nlri("198.51.100.0/24")}, 3)
	s.onAdjIn(peer, bgp.RF_IPv4_VPN, 9, nil, 9) // not a family the node takes
	if l := load(); l.Received != 6 || l.Prefixes != [2]uint64{3, 2} {
		t.Errorf("load %+v, want 6 received (3 of them before the peer event), [3 2] held", l)
	}
	if s.importFilter.held[peer].len() != 0 {
		t.Error("a withdrawn refused prefix is still counted as held")
	}
	state(bgp.BGP_FSM_IDLE)
	if l := load(); l.Prefixes != [2]uint64{0, 0} {
		t.Errorf("prefixes %v after the session ended, want none until GoBGP tells again", l.Prefixes)
	}
}

// TestHoldingsCountTheConfiguredTable: the memory limit's count of what an upstream
// holds is at least its configured expected_prefixes, also after a dump that ended
// small (a session up before its table, which then comes as updates: the fleet
// lab's), and after the session ended; a mesh peer counts what it holds.
func TestHoldingsCountTheConfiguredTable(t *testing.T) {
	up, mesh := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("10.0.0.2")
	s := &Speaker{log: slog.New(slog.NewTextHandler(io.Discard, nil)), done: make(chan struct{}),
		loads:        map[netip.Addr]*Load{up: {Neighbor: up, Expected: 1000}, mesh: {Neighbor: mesh}},
		adjIn:        map[netip.Addr]*adjIn{up: newAdjIn(0, 1000), mesh: newAdjIn(0, 0)},
		mesh:         map[netip.Addr]bool{mesh: true},
		events:       make(chan Event, 1),
		importFilter: newImportFilter(65000)}
	s.peers = map[netip.Addr]*PeerStatus{up: {Address: up, State: "idle"}, mesh: {Address: mesh, State: "idle"}}
	s.eors = map[netip.Addr]map[bgp.Family]bool{up: {bgp.RF_IPv4_UC: false}, mesh: {bgp.RF_IPv4_UC: false}}
	s.importFilter.set(up, &ImportRules{})
	state := func(st bgp.FSMState) {
		s.peerState(&apiutil.WatchEventMessage_PeerEvent{Peer: apiutil.Peer{State: apiutil.PeerState{NeighborAddress: up, SessionState: st}}}, time.Now())
	}
	want := func(paths int64, when string) {
		t.Helper()
		if got, peers := s.Holdings(); got != paths || peers != 1 {
			t.Errorf("%s: holdings %d paths, %d mesh peers; want %d, 1", when, got, peers, paths)
		}
	}
	want(1000, "before the session")
	state(bgp.BGP_FSM_ESTABLISHED)
	s.onAdjIn(up, bgp.RF_IPv4_UC, 4, nil, 4)
	s.onAdjIn(mesh, bgp.RF_IPv4_UC, 7, nil, 7)
	s.onEndOfRIB(&apiutil.Path{Family: bgp.RF_IPv4_UC, PeerAddress: up}, time.Now())
	if l := s.loads[up]; l.Expected != 4 {
		t.Fatalf("load %+v: the dump of 4 did not end", l)
	}
	want(1007, "after a dump of 4 ended")
	s.onAdjIn(up, bgp.RF_IPv4_UC, 1496, nil, 1500)
	want(1507, "holding more than configured")
	state(bgp.BGP_FSM_IDLE)
	want(1007, "after the session ended")
	if err := s.SetLimits(up, 0, 2000, 0); err != nil {
		t.Fatal(err)
	}
	want(2007, "with expected_prefixes raised live")
}
