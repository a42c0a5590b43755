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
		loads: map[netip.Addr]*Load{peer: {Neighbor: peer}}, adjIn: map[netip.Addr]*adjIn{peer: newAdjIn(0)}, importFilter: newImportFilter(65000)}
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
