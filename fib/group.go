package fib

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
)

// Next-hop groups. A route points to a group: its active next hops (the best path's,
// and those of equal paths: ECMP) and its backup (the best path through another next
// hop: BGP PIC edge). Routes with the same next hops share one group, so a million
// routes over two upstreams use a handful. A failure (SetNeighborDown, SetLinkDown)
// rewrites each group holding a failed next hop once: the traffic of every route
// through it moves at once, whatever the table's size, while BGP reconverges behind.
//
// The dataplane's buckets are kept resilient: a member that goes down gives its
// buckets to the others and no other bucket moves; when it returns it takes back the
// buckets it had (its home buckets) and no others. A group's traffic goes to its
// usable active members; when none is usable, to its usable backups; when none is
// either, to the kernel.

// MaxMembers bounds a group's members, active and backup.
const MaxMembers = 16

// GroupState says where a group's traffic goes.
type GroupState uint8

const (
	// GroupActive: every active member is usable.
	GroupActive GroupState = iota
	// GroupDegraded: some active members are down; the others carry their flows.
	GroupDegraded
	// GroupBackup: every active member is down; the backup carries the traffic.
	GroupBackup
	// GroupDown: no member is usable; the traffic passes to the kernel.
	GroupDown
)

func (s GroupState) String() string {
	return [...]string{"active", "degraded", "backup", "down"}[s]
}

type group struct {
	id     uint32
	key    string
	active []*nexthop // sorted by next hop
	backup []*nexthop
	refs   int // routes pointing here
	// buckets are what the dataplane holds.
	buckets dataplane.NexthopGroup
	state   GroupState
}

// primary is the next hop a route through the group is reported and mirrored with:
// its first active member.
func (g *group) primary() *nexthop { return g.active[0] }

// idPool hands out ids 1..max-1 and takes a freed id back for reuse only after the
// grace period: a lookup may still hold it for a moment.
type idPool struct {
	next, max uint32
	free      []freedID
}

func (p *idPool) get() (uint32, bool) {
	if len(p.free) > 0 && time.Since(p.free[0].at) >= groupGrace {
		id := p.free[0].id
		p.free = p.free[1:]
		return id, true
	}
	if p.next >= p.max {
		return 0, false
	}
	p.next++
	return p.next - 1, true
}

// put frees an id; a zero at says it was never published (reusable at once).
func (p *idPool) put(id uint32, at time.Time) {
	p.free = append(p.free, freedID{id: id, at: at})
}

// members returns a route's active and backup next hops, in a canonical order:
// the active ones deduplicated and sorted (at most MaxMembers with the backup), the
// backup only when it is not active.
func members(u Update) (active []netip.Addr, backup netip.Addr) {
	if u.Blackhole {
		return []netip.Addr{discard}, netip.Addr{}
	}
	active = append(make([]netip.Addr, 0, 1+len(u.Multipath)), u.Nexthop)
	for _, a := range u.Multipath {
		if a.IsValid() {
			active = append(active, a)
		}
	}
	if len(active) > 1 {
		slices.SortFunc(active, netip.Addr.Compare)
		active = slices.Compact(active)
	}
	if u.Backup.IsValid() && !slices.Contains(active, u.Backup) {
		backup = u.Backup
	}
	limit := MaxMembers
	if backup.IsValid() {
		limit--
	}
	if len(active) > limit {
		active = active[:limit]
	}
	return active, backup
}

// appendKey appends a group's key: its members' addresses, length-prefixed, the
// backup after a marker.
func appendKey(b []byte, active []netip.Addr, backup netip.Addr) []byte {
	put := func(a netip.Addr) {
		n := len(b)
		b = append(b, 0)
		b, _ = a.AppendBinary(b)
		b[n] = byte(len(b) - n - 1)
	}
	for _, a := range active {
		put(a)
	}
	if backup.IsValid() {
		b = append(b, 0xff)
		put(backup)
	}
	return b
}

// acquireGroup returns the group of these members, creating and writing it if new;
// f.keyBuf holds their key (appendKey).
func (f *FIB) acquireGroup(active []netip.Addr, backup netip.Addr) (*group, error) {
	if g, ok := f.groups[string(f.keyBuf)]; ok {
		g.refs++
		return g, nil
	}
	id, ok := f.gids.get()
	if !ok {
		return nil, fmt.Errorf("fib: out of next-hop group ids (%d groups in use)", len(f.groups))
	}
	g := &group{id: id, key: string(f.keyBuf), refs: 1}
	undo := func() {
		for _, nh := range slices.Concat(g.active, g.backup) {
			delete(nh.groups, g)
			f.release(nh.gw)
		}
		f.gids.put(id, time.Time{})
	}
	all := active
	if backup.IsValid() {
		all = slices.Concat(active, []netip.Addr{backup})
	}
	// The discard next hop is the zero Addr: every active member counts.
	for i, a := range all {
		nh, err := f.acquire(a)
		if err != nil {
			undo()
			return nil, err
		}
		if i < len(active) {
			g.active = append(g.active, nh)
		} else {
			g.backup = append(g.backup, nh)
		}
		nh.groups[g] = struct{}{}
	}
	if err := f.layout(g); err != nil {
		undo()
		return nil, err
	}
	f.groups[g.key] = g
	return g, nil
}

// releaseGroup drops a route's reference; the last one releases the members and
// clears the group once the batch is committed.
func (f *FIB) releaseGroup(g *group) {
	g.refs--
	if g.refs > 0 {
		return
	}
	delete(f.groups, g.key)
	for _, nh := range slices.Concat(g.active, g.backup) {
		delete(nh.groups, g)
		f.release(nh.gw)
	}
	f.releasedGroups = append(f.releasedGroups, g.id)
}

// down says whether a next hop is unusable: its neighbour or its link is down.
func (f *FIB) down(nh *nexthop) bool {
	if nh.drop || nh.local {
		return false
	}
	if _, ok := f.downNeigh[nh.res.Neighbor]; ok && nh.res.Neighbor.IsValid() {
		return true
	}
	_, ok := f.downLink[nh.res.Nexthop.Ifindex]
	return ok && nh.res.Nexthop.Ifindex != 0
}

// usable says whether a member can carry traffic now: not down, and resolved (or the
// discard nexthop, or one of the node's own addresses, which the kernel delivers).
func (f *FIB) usable(nh *nexthop) bool {
	return !f.down(nh) && (nh.res.Nexthop.Resolved || nh.drop || nh.local)
}

// layout computes a group's buckets from its members' state now and writes them if
// they changed: the usable active members; else the usable backups; else the active
// members not down but unresolved (their traffic passes to the kernel, which
// resolves them, as without a group); else none (GroupDown: to the kernel).
func (f *FIB) layout(g *group) error {
	var ids []uint16
	var weights []int
	add := func(nh *nexthop) {
		ids, weights = append(ids, uint16(nh.id)), append(weights, f.weight(nh))
	}
	state := GroupActive
	for _, nh := range g.active {
		if f.usable(nh) {
			add(nh)
		} else {
			state = GroupDegraded
		}
	}
	if len(ids) == 0 {
		state = GroupDown
		for _, nh := range g.backup {
			if f.usable(nh) {
				add(nh)
				state = GroupBackup
			}
		}
	}
	if len(ids) == 0 {
		for _, nh := range g.active {
			if !f.down(nh) {
				add(nh)
				state = GroupDegraded
			}
		}
	}
	b := resilient(g.buckets, ids, weights)
	g.state = state
	if b == g.buckets && g.buckets != (dataplane.NexthopGroup{}) {
		return nil
	}
	if err := f.dp.SetGroup(g.id, b); err != nil {
		return fmt.Errorf("fib: write next-hop group %d: %w", g.id, err)
	}
	g.buckets = b
	return nil
}

// relayout lays out again every group holding one of these next hops: one write per
// group whose buckets changed. It returns how many were written.
func (f *FIB) relayout(nhs []*nexthop) int {
	seen := map[*group]struct{}{}
	n := 0
	for _, nh := range nhs {
		for g := range nh.groups {
			if _, ok := seen[g]; ok {
				continue
			}
			seen[g] = struct{}{}
			before := g.buckets
			if err := f.layout(g); err != nil {
				f.log.Warn("rewrite next-hop group", "group", g.id, "err", err)
			} else if g.buckets != before {
				n++
			}
		}
	}
	return n
}

// resilient returns buckets for the members ids (nexthop ids, in the group's order)
// with their weights (nil: equal) that move as few of prev's as it can. Each member's
// home buckets are its seats in homes (equal weights: member i's are those b with
// b mod len(ids) == i), its quota their number.
// A bucket at home stays; another bucket stays with its member while that member is
// under quota; the rest go home when home has room, else to the first member under
// quota. So a member that leaves gives up only its own buckets, and one that returns
// takes back only its home.
func resilient(prev dataplane.NexthopGroup, ids []uint16, weights []int) dataplane.NexthopGroup {
	var out dataplane.NexthopGroup
	n := len(ids)
	if n == 0 {
		return out
	}
	index := make(map[uint16]int, n)
	for i, id := range ids {
		index[id] = i
	}
	home := homes(n, weights)
	quota := make([]int, n)
	for _, i := range home {
		quota[i]++
	}
	count := make([]int, n)
	var set [dataplane.GroupBuckets]bool
	for b, id := range prev.Buckets {
		if i := home[b]; id == ids[i] {
			out.Buckets[b], set[b] = id, true
			count[i]++
		}
	}
	for b, id := range prev.Buckets {
		if i, ok := index[id]; ok && !set[b] && count[i] < quota[i] {
			out.Buckets[b], set[b] = id, true
			count[i]++
		}
	}
	for b := range out.Buckets {
		if set[b] {
			continue
		}
		i := home[b]
		if count[i] >= quota[i] {
			for j := range n {
				if count[j] < quota[j] {
					i = j
					break
				}
			}
		}
		out.Buckets[b] = ids[i]
		count[i]++
	}
	return out
}

// homes gives each bucket its home member: the buckets are handed out one by one, as
// seats by the Sainte-Laguë method, to the member with the highest weight / (2 ×
// buckets so far + 1), the first on a tie (nil or equal weights: 0, 1, ..., n-1, 0,
// ...). So each member's home buckets are spread over the table, their number is
// close to its share of the weights, and, a divisor method, a member's leaving never
// lowers another's number: the others keep every bucket they held.
func homes(n int, weights []int) [dataplane.GroupBuckets]int {
	var home [dataplane.GroupBuckets]int
	w := func(i int) int {
		if weights == nil {
			return 1
		}
		return max(1, weights[i])
	}
	seats := make([]int, n)
	for b := range home {
		best := 0
		for i := 1; i < n; i++ {
			// w(i)/(2 seats(i)+1) > w(best)/(2 seats(best)+1), in integers.
			if w(i)*(2*seats[best]+1) > w(best)*(2*seats[i]+1) {
				best = i
			}
		}
		seats[best]++
		home[b] = best
	}
	return home
}

// weight is a member's weight: its neighbour's (SetNeighborWeights), 1 by default.
func (f *FIB) weight(nh *nexthop) int {
	if w, ok := f.weights[nh.res.Neighbor]; ok && nh.res.Neighbor.IsValid() {
		return w
	}
	return 1
}

// SetNeighborWeights sets the weights of the next hops resolved through each
// neighbour (1 to 64; absent: 1): in a group, a member's share of the buckets, so of
// the flows, is its weight over the sum of the usable members'. Groups holding a next
// hop whose weight changed are laid out again, each member keeping what it can.
func (f *FIB) SetNeighborWeights(weights map[netip.Addr]int) error {
	for n, w := range weights {
		if w < 1 || w > 64 {
			return fmt.Errorf("fib: weight %d for %s: use 1 to 64", w, n)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var nhs []*nexthop
	for n := range f.byNeigh {
		if cmp.Or(f.weights[n], 1) != cmp.Or(weights[n], 1) {
			for nh := range f.byNeigh[n] {
				nhs = append(nhs, nh)
			}
		}
	}
	f.weights = maps.Clone(weights)
	slices.SortFunc(nhs, func(a, b *nexthop) int { return cmp.Compare(a.id, b.id) })
	f.relayout(nhs)
	return nil
}

// Failover is what a failure (or a recovery) changed.
type Failover struct {
	// Nexthops are the next hops it marked down or up.
	Nexthops int
	// Groups are the groups rewritten: one write each.
	Groups int
	// Took is how long the writes took, from the call.
	Took time.Duration
}

// SetNeighborDown marks every next hop resolved through a neighbour down for a cause
// (its BFD session or BGP session failed, the fleet node died), or clears that cause,
// and rewrites at once each group that holds one when the neighbour's state changed:
// it is down while any cause holds. BGP reconverges behind it: routes then move to
// groups without the failed next hop, and the groups follow.
//
// A neighbour that flaps is held down (SetHoldDown): coming back up after its second
// failure within the window, it stays down for the hold time (cause "hold"), which
// doubles with each further failure.
func (f *FIB) SetNeighborDown(neigh netip.Addr, down bool, cause string) Failover {
	start := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !setCause(f.downNeigh, neigh, cause, down) {
		return Failover{}
	}
	if down {
		f.noteDown(neigh, start)
	} else if hold := f.holdFor(neigh, start); hold > 0 && cause != "hold" {
		// Still down, for the hold time, then up unless another cause holds it.
		setCause(f.downNeigh, neigh, "hold", true)
		f.log.Warn("neighbour flapping: held down", "neighbor", neigh, "for", hold, "failures", len(f.flaps[neigh]))
		c := f.failovers[FailoverKey{Cause: "hold", Down: true}]
		c.Count++
		f.failovers[FailoverKey{Cause: "hold", Down: true}] = c
		time.AfterFunc(hold, func() { f.SetNeighborDown(neigh, false, "hold") })
		return Failover{}
	}
	nhs := make([]*nexthop, 0, len(f.byNeigh[neigh]))
	for nh := range f.byNeigh[neigh] {
		nhs = append(nhs, nh)
	}
	return f.failover(nhs, start, cause, down, "neighbor", neigh.String())
}

// SetLinkDown marks every next hop out of an interface down, or up again, as
// SetNeighborDown does for a neighbour.
func (f *FIB) SetLinkDown(ifindex uint32, down bool, cause string) Failover {
	start := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !setCause(f.downLink, ifindex, cause, down) {
		return Failover{}
	}
	var nhs []*nexthop
	for _, nh := range f.byGW {
		if nh.res.Nexthop.Ifindex == ifindex {
			nhs = append(nhs, nh)
		}
	}
	return f.failover(nhs, start, cause, down, "ifindex", fmt.Sprint(ifindex))
}

// SetHoldDown holds a flapping neighbour down: after its second failure within
// window, it stays down for base once every cause cleared, twice that after the
// third, and so on up to window; a neighbour up for a whole window is forgiven. A
// base of 0 turns it off.
func (f *FIB) SetHoldDown(base, window time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdBase, f.holdWindow = base, window
}

// noteDown records a neighbour's failure, forgetting those older than the window.
func (f *FIB) noteDown(n netip.Addr, now time.Time) {
	if f.holdBase <= 0 {
		return
	}
	downs := slices.DeleteFunc(f.flaps[n], func(t time.Time) bool { return now.Sub(t) > f.holdWindow })
	f.flaps[n] = append(downs, now)
}

// holdFor is how long a neighbour coming back up stays held down.
func (f *FIB) holdFor(n netip.Addr, now time.Time) time.Duration {
	downs := slices.DeleteFunc(f.flaps[n], func(t time.Time) bool { return now.Sub(t) > f.holdWindow })
	f.flaps[n] = downs
	if f.holdBase <= 0 || len(downs) < 2 {
		return 0
	}
	hold := f.holdBase << min(len(downs)-2, 20)
	return min(hold, f.holdWindow)
}

// setCause adds or removes a cause of k being down; it says whether k went down or
// came up.
func setCause[K comparable](m map[K]map[string]bool, k K, cause string, down bool) bool {
	was := len(m[k]) > 0
	if down {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][cause] = true
	} else {
		delete(m[k], cause)
		if len(m[k]) == 0 {
			delete(m, k)
		}
	}
	return was != (len(m[k]) > 0)
}

func (f *FIB) failover(nhs []*nexthop, start time.Time, cause string, down bool, key, what string) Failover {
	slices.SortFunc(nhs, func(a, b *nexthop) int { return cmp.Compare(a.id, b.id) })
	fo := Failover{Nexthops: len(nhs), Groups: f.relayout(nhs), Took: time.Since(start)}
	c := f.failovers[FailoverKey{Cause: cause, Down: down}]
	c.Count++
	c.Last = fo
	f.failovers[FailoverKey{Cause: cause, Down: down}] = c
	msg := "next hops down: their groups moved to the other members"
	if !down {
		msg = "next hops up again: their groups take them back"
	}
	level := slog.LevelInfo
	if fo.Nexthops == 0 {
		level = slog.LevelDebug // a link or neighbour no route goes through
	}
	f.log.Log(context.Background(), level, msg, key, what, "cause", cause, "nexthops", fo.Nexthops, "groups_written", fo.Groups, "took", fo.Took)
	return fo
}

// FailoverKey is a failover's cause ("session", "bfd", "link", "member") and whether
// next hops went down or came up.
type FailoverKey struct {
	Cause string
	Down  bool
}

// FailoverCount counts failovers of one key, with the last one.
type FailoverCount struct {
	Count uint64
	Last  Failover
}

// Failovers returns the failovers so far by cause and direction.
func (f *FIB) Failovers() map[FailoverKey]FailoverCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.failovers)
}

// GroupMember is one member of a route's group.
type GroupMember struct {
	Nexthop netip.Addr
	// ID is its nexthop id in the dataplane.
	ID uint32
	// Backup says it takes traffic only when no active member is usable.
	Backup bool
	// Down says it is unusable now (its neighbour or link failed).
	Down bool
	// Buckets are how many of the group's buckets it holds now.
	Buckets int
}

// GroupInfo describes a route's next-hop group.
type GroupInfo struct {
	ID      uint32
	State   GroupState
	Members []GroupMember
	// Buckets are the nexthop ids the dataplane holds (dataplane.NexthopGroup.Pick).
	Buckets dataplane.NexthopGroup
}

func (g *group) info(f *FIB) GroupInfo {
	gi := GroupInfo{ID: g.id, State: g.state, Buckets: g.buckets}
	for i, nh := range slices.Concat(g.active, g.backup) {
		m := GroupMember{Nexthop: nh.gw, ID: nh.id, Backup: i >= len(g.active), Down: f.down(nh)}
		for _, id := range g.buckets.Buckets {
			if uint32(id) == nh.id {
				m.Buckets++
			}
		}
		gi.Members = append(gi.Members, m)
	}
	return gi
}

// LookupGroup returns the route a destination matches (longest prefix) and its group.
func (f *FIB) LookupGroup(a netip.Addr) (netip.Prefix, GroupInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, g, ok := f.routes.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
	if !ok {
		return p, GroupInfo{}, false
	}
	return p, g.info(f), true
}
