package server

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// UpdateGroup names a neighbour's update group, "" for none. Neighbours of one
// named group whose sessions make their updates alike (sameUpdates: peer type,
// AS numbers, local address, negotiated capabilities, how the export policy sees
// them) are sent each update computed once: the export pass (filterpath) runs for
// one of them, and the UPDATEs are packed and serialized once for all (FRR's
// update groups, BIRD's shared export of one channel's routes). An iBGP mesh
// node sending a full table to every other node did both once per peer. Naming
// two neighbours into one group is the embedder's promise that its ExportFilter
// answers alike for them; the server checks the rest. Called on the goroutines
// that propagate paths, concurrently; it must be fast and must not call the
// BgpServer.
type UpdateGroup func(peer netip.Addr) string

// UpdateGroupOption sets the server's UpdateGroup.
func UpdateGroupOption(f UpdateGroup) ServerOption {
	return func(o *options) {
		o.updateGroup = f
	}
}

// sharedUpdate is paths computed once for an update group, queued to each member
// at the same place, packed and serialized by the first member's send loop to
// reach it and written as they are by the others.
type sharedUpdate struct {
	mu sync.Mutex
	// paths grow while no member has taken them (extend).
	paths []*table.Path
	// members are the FSMs it was queued to, with the queue's sequence number
	// just after it: a member whose number moved on was queued something else
	// since (or its queue was taken or cleared).
	members []sharedMember
	taken   bool
	// packed: wire holds the UPDATEs, serialized for extendedMessage. Only the
	// bytes are kept for the other members: the messages they were built from
	// weigh nearly three times as much, and a slow member's backlog of them
	// was the largest part of what the mesh's sender held for its peers.
	packed          bool
	extendedMessage bool
	addPath         bgp.BGPAddPathMode
	wire            [][]byte
}

type sharedMember struct {
	fsm *fsm
	seq uint64
}

// sharedAt is a sharedUpdate's place in a member's queue: before the queued
// path at index at.
type sharedAt struct {
	at int
	u  *sharedUpdate
}

// sharedPackings counts the shared updates packed, and sharedReuses those written
// as another member packed them (for tests).
var sharedPackings, sharedReuses atomic.Int64

// extend adds paths to u when every member still has it last in its queue,
// untaken: then they go out with it, in order. It says whether it did.
func (u *sharedUpdate) extend(members []*peer, paths []*table.Path) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.taken || len(members) != len(u.members) || len(u.paths)+len(paths) > outgoingWakeAt {
		return false
	}
	for i, m := range u.members {
		if members[i].fsm != m.fsm {
			return false
		}
		m.fsm.outgoingMu.Lock()
		last := m.fsm.outgoingSeq == m.seq
		m.fsm.outgoingMu.Unlock()
		if !last {
			return false
		}
	}
	u.paths = append(u.paths, paths...)
	return true
}

// queueTo queues u to the members, each after what it holds (their send loops
// are woken at the end of the propagateUpdate call, as for other paths).
func (u *sharedUpdate) queueTo(members []*peer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, m := range members {
		u.members = append(u.members, sharedMember{fsm: m.fsm, seq: m.fsm.queueShared(u)})
	}
}

func (u *sharedUpdate) full() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.paths) >= outgoingWakeAt
}

// messages returns u's UPDATEs serialized with option, packing them when no
// member did yet (or did with other options); from then on no path joins u.
// The messages themselves are returned only to the member that packed them
// (nil to the others, which write the bytes).
func (u *sharedUpdate) messages(option *bgp.MarshallingOption) ([]*bgp.BGPMessage, [][]byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.taken = true
	var addPath bgp.BGPAddPathMode
	if len(u.paths) > 0 {
		addPath = option.AddPath[u.paths[0].GetFamily()] // one family: a group is formed per family
	}
	if u.packed && u.extendedMessage == option.ExtendedMessage && u.addPath == addPath {
		sharedReuses.Add(1)
		return nil, u.wire
	}
	msgs := table.CreateUpdateMsgFromPaths(u.paths, option)
	wire := make([][]byte, 0, len(msgs))
	kept := msgs[:0]
	for _, m := range msgs {
		b, err := m.Serialize(option)
		if err != nil {
			continue // as the send loop does: a message that does not serialize is skipped
		}
		kept = append(kept, m)
		wire = append(wire, b)
	}
	sharedPackings.Add(1)
	if !u.packed {
		u.packed, u.extendedMessage, u.addPath, u.wire = true, option.ExtendedMessage, addPath, wire
	}
	return kept, wire
}

// updateGroups are the update groups of one propagateUpdate call, formed at its
// first path of each family from the neighbours then established.
type updateGroups struct {
	family bgp.Family
	formed bool
	groups []*updateGroup
}

type updateGroup struct {
	// members are in their addresses' order (the order their locks are taken
	// in), each with the peer information of its session when the group formed.
	members []*peer
	infos   []*table.PeerInfo
	// For the path being propagated (begin): the members not its source, and
	// those of them handled together (send).
	active, handled []*peer
	// open is the shared update last queued to the handled members: the next
	// paths join it while it is the last thing each of them holds.
	open *sharedUpdate
}

// begin prepares the groups for one path's propagation: formed again when the
// family changes, each with its members that are not the source of bests or olds
// (filterpath treats a path's source apart).
func (g *updateGroups) begin(s *BgpServer, source *peer, family bgp.Family, bests, olds []*table.Path) {
	if !g.formed || g.family != family {
		g.groups, g.family, g.formed = s.formUpdateGroups(source, family), family, true
	}
	for _, grp := range g.groups {
		grp.active, grp.handled = grp.active[:0], grp.handled[:0]
		for _, m := range grp.members {
			if !sources(m, bests) && !sources(m, olds) {
				grp.active = append(grp.active, m)
			}
		}
	}
}

// handled says whether the peer was sent the path with its group.
func (g *updateGroups) handled(p *peer) bool {
	if g == nil {
		return false
	}
	for _, grp := range g.groups {
		if slices.Contains(grp.handled, p) {
			return true
		}
	}
	return false
}

// send sends a path to the group's active members together: with every member's
// routeRefreshInProgress read-locked (in address order: a route refresh or an
// initial dump, which holds one member's lock, is not overtaken), those still as
// the group formed them (the same session, advertising) have the export pass run
// once for them all, record its paths as sent, and get them in a shared update.
// The others are sent the path their own way (handled is left without them).
func (grp *updateGroup) send(s *BgpServer, family bgp.Family, bests, olds []*table.Path) {
	if len(grp.active) < 2 {
		return
	}
	for _, m := range grp.active {
		m.routeRefreshInProgress.RLock()
	}
	defer func() {
		for _, m := range grp.active {
			m.routeRefreshInProgress.RUnlock()
		}
	}()
	for _, m := range grp.active {
		i := slices.Index(grp.members, m)
		if needToAdvertise(m) && m.peerInfo.Load() == grp.infos[i] && m.IsFamilyEnabled(family) && !m.isAddPathSendEnabled(family) {
			grp.handled = append(grp.handled, m)
		}
	}
	if len(grp.handled) < 2 {
		grp.handled = grp.handled[:0]
		return
	}
	paths := s.processOutgoingPaths(grp.handled[0], bests, olds)
	for _, m := range grp.handled {
		m.updateRoutes(paths...)
	}
	if len(paths) == 0 {
		return
	}
	if grp.open != nil && grp.open.extend(grp.handled, paths) {
		return
	}
	if grp.open != nil && grp.open.full() {
		// A long pass (a neighbour's table withdrawn): the members' send loops
		// take the full one now, as outgoingWakeAt paths queued wake them.
		for _, m := range grp.handled {
			m.fsm.queueOutgoingPaths(nil, true)
		}
	}
	grp.open = &sharedUpdate{paths: paths}
	grp.open.queueTo(grp.handled)
}

// sources says whether the peer is the source of one of the paths, by its address
// or its router ID (filterPathFromSourcePeer tells sources by ID).
func sources(p *peer, paths []*table.Path) bool {
	addr, id := p.fsm.pConf.ReadOnly().State.NeighborAddress, p.routerID()
	for _, path := range paths {
		if path == nil {
			continue
		}
		if src := path.GetSource(); src != nil && (src.Address == addr || id.IsValid() && src.ID == id) {
			return true
		}
	}
	return false
}

// formUpdateGroups groups the established neighbours the UpdateGroup names whose
// updates in family are alike, but the source of the paths propagated (sent them
// its own way). It allocates nothing when fewer than two are named: a mesh node
// taking a table from one mesh peer forms no group for each of its UPDATEs.
func (s *BgpServer) formUpdateGroups(source *peer, family bgp.Family) []*updateGroup {
	type candidate struct {
		p    *peer
		name string
	}
	var buf [8]candidate
	cands := buf[:0]
	for _, p := range s.neighborMap {
		if p == source || !groupable(p, family) {
			continue
		}
		if name := s.updateGroup(p.fsm.pConf.ReadOnly().State.NeighborAddress); name != "" {
			cands = append(cands, candidate{p: p, name: name})
		}
	}
	if len(cands) < 2 {
		return nil
	}
	var groups []*updateGroup
	for i, c := range cands {
		if c.p == nil {
			continue // in an earlier group
		}
		var grp *updateGroup
		for j := i + 1; j < len(cands); j++ {
			if o := cands[j]; o.p != nil && o.name == c.name && sameUpdates(c.p, o.p, family) {
				if grp == nil {
					grp = &updateGroup{members: []*peer{c.p}}
				}
				grp.members = append(grp.members, o.p)
				cands[j].p = nil
			}
		}
		if grp != nil {
			slices.SortFunc(grp.members, func(a, b *peer) int {
				return a.fsm.pConf.ReadOnly().State.NeighborAddress.Compare(b.fsm.pConf.ReadOnly().State.NeighborAddress)
			})
			for _, m := range grp.members {
				grp.infos = append(grp.infos, m.peerInfo.Load())
			}
			groups = append(groups, grp)
		}
	}
	return groups
}

// groupable says whether a peer's updates in family could be another's: what
// makes them its own (add-path, route reflection and route servers, VRFs, AS
// rewriting, route target constraint, a 2-octet-AS peer) keeps it out.
func groupable(p *peer, family bgp.Family) bool {
	if !needToAdvertise(p) || p.peerInfo.Load() == nil || p.isRouteServerClient() || p.isRouteReflectorClient() ||
		!p.IsFamilyEnabled(family) || p.isAddPathSendEnabled(family) || p.IsFamilyEnabled(bgp.RF_RTC_UC) {
		return false
	}
	conf := p.fsm.pConf.ReadOnly()
	if conf.Config.Vrf != "" || conf.AsPathOptions.State.ReplacePeerAs {
		return false
	}
	p.fsm.lock.Lock()
	twoByte := p.fsm.twoByteAsTrans
	p.fsm.lock.Unlock()
	_, ok := p.exportView()
	return !twoByte && ok
}

// sameUpdates says whether two groupable peers are sent the same updates in family,
// byte for byte, for paths neither is the source of.
func sameUpdates(a, b *peer, family bgp.Family) bool {
	ia, ib := *a.peerInfo.Load(), *b.peerInfo.Load()
	ia.ID, ia.Address, ia.PeerGroup = netip.Addr{}, netip.Addr{}, ""
	ib.ID, ib.Address, ib.PeerGroup = netip.Addr{}, netip.Addr{}, ""
	if ia != ib || a.isLLGREnabledFamily(family) != b.isLLGREnabledFamily(family) ||
		a.fsm.extendedMessage.Load() != b.fsm.extendedMessage.Load() || a.policy != b.policy ||
		a.allowAsPathLoopLocal() != b.allowAsPathLoopLocal() {
		return false
	}
	va, _ := a.exportView()
	vb, _ := b.exportView()
	return va == vb
}

// exportView is how the export policy sees the peer (RoutingPolicy.NeighborView),
// read again when the policy changed.
func (p *peer) exportView() (string, bool) {
	gen := p.policy.Generation()
	if v := p.view.Load(); v != nil && v.gen == gen {
		return v.view, v.ok
	}
	view, ok := p.policy.NeighborView(p.TableID(), table.POLICY_DIRECTION_EXPORT, p.fsm.pConf.ReadOnly().State.NeighborAddress)
	p.view.Store(&peerView{gen: gen, view: view, ok: ok})
	return view, ok
}

type peerView struct {
	gen  uint64
	view string
	ok   bool
}
