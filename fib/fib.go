// Package fib is the userspace master FIB: prefixes -> next-hop groups of BGP next
// hops in a table made for it (bart), compiled into the dataplane's DIR-24-8 arrays
// (v4table.go) and IPv6 tables, with the groups (group.go) and nexthops (refcounted,
// resolved to egress port and MACs) written to the dataplane through a small
// interface, so the package is unit-testable without BPF.
//
// Routes reference group ids and groups nexthop ids, so a neighbour change rewrites
// one nexthop entry and a failure one entry per group, not every route through them.
// Writes are ordered so a lookup never sees a dangling id: a nexthop is written before
// the first group that holds it, a group before the first route that uses it, and
// each is cleared only after the last user is gone; a cleared id is reused only after
// a grace period.
package fib

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/gaissmai/bart"

	"github.com/fibfleet/fibfleet/dataplane"
)

// Dataplane is where the FIB writes; *dataplane.Dataplane implements it.
type Dataplane interface {
	// V4Tables returns the IPv4 FIB arrays the program reads, mapped into this process.
	V4Tables() (dataplane.V4Tables, error)
	// V6Tables returns the IPv6 FIB arrays; SetLong6 and DeleteLong6 keep its routes
	// longer than /48.
	V6Tables() (dataplane.V6Tables, error)
	longStore
	SetNexthop(id uint32, nh dataplane.Nexthop) error
	DeleteNexthop(id uint32) error
	SetGroup(id uint32, g dataplane.NexthopGroup) error
	DeleteGroup(id uint32) error
}

// Resolution is what a Resolver found for a BGP next hop.
type Resolution struct {
	// Nexthop is the dataplane entry; Resolved is false until the neighbour's MAC is known.
	Nexthop dataplane.Nexthop
	// Neighbor is the on-link address whose neighbour entry the nexthop depends on:
	// the next hop itself, or the gateway towards it when it is not on a local link.
	Neighbor netip.Addr
}

// Resolver resolves a BGP next hop against the kernel's routes and neighbours.
// An error means the next hop cannot be resolved now (no route to it); the FIB keeps
// the nexthop unresolved, so its routes pass to the kernel, and retries later.
// Release says that no nexthop depends on a neighbour any more, so the resolver can
// stop keeping it resolved.
type Resolver interface {
	Resolve(gw netip.Addr) (Resolution, error)
	Release(neighbor netip.Addr)
}

// Update is one route change, as the BGP best-path stream delivers it.
type Update struct {
	Prefix  netip.Prefix
	Nexthop netip.Addr
	// Multipath are the next hops of further equal paths (ECMP): the route's flows
	// are shared among them and Nexthop.
	Multipath []netip.Addr
	// Backup, when valid, is the next hop of the best path through another next hop
	// (BGP PIC edge): installed beside the active ones, it carries the traffic as soon
	// as none of them is usable.
	Backup   netip.Addr
	Withdraw bool
	// Blackhole routes the prefix to the discard nexthop, whatever Nexthop says:
	// its traffic is dropped in XDP (RFC 7999), counted as dataplane.DropBlackhole.
	Blackhole bool
}

// discard is a blackholed route's next hop in the master table: the zero Addr, which
// no other route has (a route needs a next hop), keys the one discard nexthop.
var discard netip.Addr

// Stats summarises the table, for metrics.
type Stats struct {
	Routes             int
	Nexthops           int
	UnresolvedNexthops int
	// RecursiveNexthops resolve through another FIB route's next hop (iBGP next hops
	// on another node's link); LocalNexthops are the node's own addresses (routes it
	// originates: the kernel delivers their traffic).
	RecursiveNexthops, LocalNexthops int
	// Refused counts routes the compiled FIB had no room for (no free second-level
	// group): their /24 passes to the kernel until a group frees up.
	Refused uint64
	// KernelSlots is how many /24s pass to the kernel for that reason right now.
	KernelSlots int
	// Groups and GroupsUsed describe the second-level group pool.
	Groups, GroupsUsed int
	// DirNodes and DirLines are the compressed first level's nodes and 64-byte lines
	// in use; DirFallback counts /16 blocks whose lookups read tbl24 because the node
	// pool was full (slower, still correct).
	DirNodes, DirLines, DirFallback int
	// RoutesV4 and RoutesV6 split Routes by family.
	RoutesV4, RoutesV6 int
	// Blackholes are the routes through the discard nexthop.
	Blackholes int
	// NexthopGroups are the next-hop groups in use; GroupStates counts them by
	// state (GroupActive...).
	NexthopGroups int
	GroupStates   [4]int
	// V6Keys are the IPv6 hash's live keys (routes expanded to its lengths) in
	// V6Buckets buckets of five; V6Pending are keys that found no room (their /16
	// passes to the kernel until they are placed); V6Long are routes longer than /48.
	V6Keys, V6Pending, V6Long, V6Buckets int
}

type nexthop struct {
	id   uint32
	gw   netip.Addr
	refs int
	res  Resolution
	// direct: the kernel resolved gw on one of the node's links. Otherwise via, when
	// valid, is the next hop of the FIB route gw resolves through (recursion, one
	// level); local: gw is one of the node's own addresses (a route this node
	// originates), whose traffic the kernel delivers.
	direct bool
	via    netip.Addr
	local  bool
	// drop: the discard nexthop (gw is discard): nothing to resolve.
	drop bool
	// groups hold this nexthop (each holds a reference).
	groups map[*group]struct{}
}

// ErrLocal is what a Resolver returns for one of the node's own addresses.
var ErrLocal = errors.New("fib: the next hop is one of this node's own addresses")

type freedID struct {
	id uint32
	at time.Time
}

// FIB is the master table. Its methods are safe for concurrent use.
type FIB struct {
	dp  Dataplane
	res Resolver
	log *slog.Logger

	mu      sync.Mutex
	routes  bart.Table[*group] // prefix -> its next hops
	v4      *v4Table
	v6      *v6Table
	byGW    map[netip.Addr]*nexthop
	byNeigh map[netip.Addr]map[*nexthop]struct{}
	nhIDs   idPool
	// released are nexthop ids whose last group went in this batch, cleared at commit.
	released []uint32
	groups   map[string]*group // by key (appendKey)
	gids     idPool
	// releasedGroups are group ids whose last route went in this batch, cleared at
	// commit before the released nexthops.
	releasedGroups []uint32
	keyBuf         []byte
	// downNeigh and downLink are the neighbours and links marked down, with the
	// causes that hold: the next hops through them are unusable.
	downNeigh map[netip.Addr]map[string]bool
	// weights are the neighbours' member weights (SetNeighborWeights); absent: 1.
	weights   map[netip.Addr]int
	downLink  map[uint32]map[string]bool
	failovers map[FailoverKey]FailoverCount
	// flaps are each neighbour's recent failures; holdBase and holdWindow the hold
	// down of one that flaps (SetHoldDown).
	flaps                map[netip.Addr][]time.Time
	holdBase, holdWindow time.Duration
	refused              uint64
	// sync, when set, mirrors route changes into a kernel table.
	sync *KernelSync
	// digest is the sum of routeHash over the master table, per family (0: IPv4,
	// 1: IPv6): order-independent and
	// updated in O(1) per change, so nodes can compare tables without a walk.
	digest [2]uint64
	// prefixDigest is the same over the prefixes alone: equal on nodes that hold the
	// same prefixes, whatever next hops each selected (a node prefers its own
	// upstream's path), so it says whether a node lacks routes.
	prefixDigest [2]uint64
	// indirect are the nexthops not resolved on a link (recursive, through a kernel
	// route, or not at all): a route change covering one's next hop marks it dirty,
	// and the batch's end resolves it again.
	indirect map[*nexthop]struct{}
	dirty    map[*nexthop]struct{}
}

// New returns an empty FIB that writes to dp and resolves with res.
func New(dp Dataplane, res Resolver, log *slog.Logger) (*FIB, error) {
	if log == nil {
		log = slog.Default()
	}
	t, err := dp.V4Tables()
	if err != nil {
		return nil, err
	}
	if len(t.Tbl24) != 1<<24 || len(t.Gen16) != 1<<16 || len(t.Tbl8)%256 != 0 || t.Groups() >= dataplane.FIB4Kernel {
		return nil, fmt.Errorf("fib: IPv4 tables have the wrong shape (tbl24 %d, tbl8 %d, gen16 %d entries)", len(t.Tbl24), len(t.Tbl8), len(t.Gen16))
	}
	t6, err := dp.V6Tables()
	if err != nil {
		return nil, err
	}
	if len(t6.Dir) != 2<<16 || len(t6.Buckets) != 16<<t6.LogBuckets || t6.LogBuckets < 1 || len(t6.Gen) != 1<<16 {
		return nil, fmt.Errorf("fib: IPv6 tables have the wrong shape (dir %d, buckets %d words, 2^%d buckets, gen %d)", len(t6.Dir), len(t6.Buckets), t6.LogBuckets, len(t6.Gen))
	}
	return &FIB{
		dp: dp, res: res, log: log,
		v4:        newV4Table(t),
		v6:        newV6Table(t6, dp),
		byGW:      map[netip.Addr]*nexthop{},
		byNeigh:   map[netip.Addr]map[*nexthop]struct{}{},
		nhIDs:     idPool{next: 1, max: dataplane.MaxNexthops},
		groups:    map[string]*group{},
		gids:      idPool{next: 1, max: dataplane.MaxGroups},
		downNeigh: map[netip.Addr]map[string]bool{},
		downLink:  map[uint32]map[string]bool{},
		failovers: map[FailoverKey]FailoverCount{},
		flaps:     map[netip.Addr][]time.Time{},
		indirect:  map[*nexthop]struct{}{},
		dirty:     map[*nexthop]struct{}{},
	}, nil
}

// SyncKernel makes the FIB mirror every route change into k from now on (set it before
// the first Apply).
func (f *FIB) SyncKernel(k *KernelSync) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync = k
}

// Apply applies a batch of updates in order. It applies every update it can and
// returns the failures joined. A route the compiled FIB has no room for is not a
// failure: it is counted (Stats.Refused), logged once per batch, and its /24 passes to
// the kernel until room frees up.
func (f *FIB) Apply(batch []Update) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	refused := f.refused
	for _, u := range batch {
		if err := f.apply(u); err != nil {
			errs = append(errs, err)
		}
	}
	if n := f.refused - refused; n > 0 {
		f.log.Warn("IPv4 FIB has no free second-level group: /24s holding longer routes pass to the kernel; raise fib.groups_v4",
			"refused", n, "groups", f.v4.t.Groups(), "kernel_slots", len(f.v4.kernel))
	}
	f.retryKernelSlots()
	f.refreshDirty()
	f.commit()
	return errors.Join(errs...)
}

// commit makes the batch's changes visible to lookups (v4Table.commit), then clears
// the groups and the nexthops the batch let go: only now can no lookup reach their
// ids.
func (f *FIB) commit() {
	f.v4.commit()
	pending := len(f.v6.pending)
	f.v6.commit()
	if n := len(f.v6.pending); n != pending && n == 0 {
		f.log.Info("IPv6 FIB: every key placed; all /16s forward in XDP again")
	} else if n > pending {
		f.log.Warn("IPv6 FIB hash has no room for some keys: their /16s pass to the kernel; raise fib.buckets_v6",
			"pending", n, "buckets", len(f.v6.t.Buckets)/16)
	}
	now := time.Now()
	for _, id := range f.releasedGroups {
		if err := f.dp.DeleteGroup(id); err != nil {
			f.log.Warn("clear next-hop group", "id", id, "err", err)
		}
		// A lookup may still hold the id for a moment: reuse it only after the grace period.
		f.gids.put(id, now)
	}
	f.releasedGroups = f.releasedGroups[:0]
	for _, id := range f.released {
		if err := f.dp.DeleteNexthop(id); err != nil {
			f.log.Warn("clear nexthop", "id", id, "err", err)
		}
		f.nhIDs.put(id, now)
	}
	f.released = f.released[:0]
}

func (f *FIB) apply(u Update) error {
	p := u.Prefix.Masked()
	if !p.IsValid() || p.Addr().Is4In6() {
		return fmt.Errorf("fib: %s: not an IPv4 or IPv6 prefix", u.Prefix)
	}
	old, had := f.routes.Get(p)
	if u.Withdraw {
		if !had {
			return nil
		}
		f.routes.Delete(p)
		f.digest[family(p)] -= groupHash(p, old)
		f.prefixDigest[family(p)] -= prefixHash(p)
		f.withdraw(p)
		f.touch(p)
		if f.sync != nil && !old.primary().local {
			f.sync.routeChanged(p, old.primary().gw, Resolution{}, true)
		}
		f.releaseGroup(old)
		return nil
	}
	if !u.Blackhole && !u.Nexthop.IsValid() {
		return fmt.Errorf("fib: route %s has no next hop", p)
	}
	active, backup := members(u)
	// The key once per update (a full table is a million of them), in the reused
	// buffer acquireGroup reads.
	f.keyBuf = appendKey(f.keyBuf[:0], active, backup)
	if had && string(f.keyBuf) == old.key {
		return nil
	}
	g, err := f.acquireGroup(active, backup)
	if err != nil {
		return err
	}
	f.routes.Insert(p, g)
	if had {
		f.digest[family(p)] -= groupHash(p, old)
	} else {
		f.prefixDigest[family(p)] += prefixHash(p)
	}
	f.digest[family(p)] += groupHash(p, g)
	if p.Addr().Is6() {
		if err := f.v6.set(p, g.id); err != nil {
			// Nothing changed in the dataplane: put the master table back.
			f.digest[family(p)] -= groupHash(p, g)
			if had {
				f.routes.Insert(p, old)
				f.digest[family(p)] += groupHash(p, old)
			} else {
				f.routes.Delete(p)
				f.prefixDigest[family(p)] -= prefixHash(p)
			}
			f.releaseGroup(g)
			return err
		}
	} else if err := f.v4.add(p, g.id); errors.Is(err, errGroupsFull) {
		f.refused++
	}
	f.touch(p)
	if nh := g.primary(); f.sync != nil && !(had && old.primary() == nh) {
		// Routes this node originates (local next hops) are the kernel's own
		// connected routes: never mirrored, never deleted. The kernel holds the
		// primary next hop alone: only a change of it is mirrored.
		switch {
		case !nh.local:
			f.sync.routeChanged(p, nh.gw, nh.res, false)
		case had && !old.primary().local:
			f.sync.routeChanged(p, old.primary().gw, Resolution{}, true)
		}
	}
	if had {
		f.releaseGroup(old)
	}
	return nil
}

// touch marks the indirect nexthops whose next hop p covers: their resolution
// through the FIB may have changed.
func (f *FIB) touch(p netip.Prefix) {
	for nh := range f.indirect {
		if p.Contains(nh.gw.WithZone("")) {
			f.dirty[nh] = struct{}{}
		}
	}
}

// refreshDirty resolves the marked nexthops again.
func (f *FIB) refreshDirty() {
	for nh := range f.dirty {
		delete(f.dirty, nh)
		if f.byGW[nh.gw] == nh {
			f.refresh(nh)
		}
	}
}

// withdraw removes p (already gone from the master table) from the compiled FIB.
func (f *FIB) withdraw(p netip.Prefix) {
	if p.Addr().Is6() {
		if err := f.v6.del(p); err != nil {
			f.log.Warn("withdraw IPv6 route", "prefix", p, "err", err)
		}
		return
	}
	repl, g, ok := f.routes.LookupPrefixLPM(p)
	var replID uint32
	if ok {
		replID = g.id
	}
	f.v4.del(p, repl, replID, ok)
	if p.Bits() > 24 {
		slot := addr32(p.Addr()) >> 8
		if f.v4.kernel[slot] && len(f.longRoutes(slot)) == 0 {
			f.v4.leaveKernel(slot)
		}
	}
}

// longRoutes lists the master routes longer than /24 inside a /24.
func (f *FIB) longRoutes(slot uint32) []longRoute {
	p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(slot >> 16), byte(slot >> 8), byte(slot), 0}), 24)
	var out []longRoute
	for q, g := range f.routes.Subnets(p) {
		if q.Bits() > 24 {
			out = append(out, longRoute{p: q, nh: g.id})
		}
	}
	return out
}

// retryKernelSlots gives /24s in kernel mode a group again when groups have freed up.
func (f *FIB) retryKernelSlots() {
	if len(f.v4.kernel) == 0 || f.v4.freeGroups() == 0 {
		return
	}
	for slot := range f.v4.kernel {
		if !f.v4.rebuild(slot, f.longRoutes(slot)) {
			return
		}
	}
	f.log.Info("IPv4 FIB groups freed up: /24s forward in XDP again", "kernel_slots", len(f.v4.kernel))
}

// acquire returns the nexthop for gw, creating, resolving and writing it if new; a
// group holds each reference.
func (f *FIB) acquire(gw netip.Addr) (*nexthop, error) {
	if nh, ok := f.byGW[gw]; ok {
		nh.refs++
		return nh, nil
	}
	id, ok := f.nhIDs.get()
	if !ok {
		return nil, fmt.Errorf("fib: out of nexthop ids (%d next hops in use)", len(f.byGW))
	}
	nh := &nexthop{id: id, gw: gw, refs: 1, groups: map[*group]struct{}{}}
	if gw == discard {
		nh.drop, nh.direct = true, true
		nh.res.Nexthop.Drop = true
	} else {
		r, err := f.resolve(gw)
		if err != nil {
			f.log.Warn("next hop unresolved; its routes pass to the kernel until it resolves", "nexthop", gw, "err", err)
		}
		nh.res, nh.direct, nh.via, nh.local = r.res, r.direct, r.via, r.local
	}
	if err := f.dp.SetNexthop(id, nh.res.Nexthop); err != nil {
		f.nhIDs.put(id, time.Time{}) // never published: reusable at once
		return nil, fmt.Errorf("fib: write nexthop %s: %w", gw, err)
	}
	f.byGW[gw] = nh
	f.index(nh)
	if !nh.direct {
		f.indirect[nh] = struct{}{}
	}
	return nh, nil
}

// resolution is where a next hop leads.
type resolution struct {
	res    Resolution
	direct bool
	via    netip.Addr
	local  bool
}

// resolve finds where a next hop leads: on one of the node's links (the kernel says
// so), else through the FIB's own longest route covering it (one level: that route's
// next hop must be on a link; an iBGP route's next hop is the upstream's address on
// another node's link, and that node announces the link's subnet with itself as next
// hop), else through a kernel route, else nowhere yet. The node's own addresses are
// local: their traffic is the kernel's.
func (f *FIB) resolve(gw netip.Addr) (resolution, error) {
	r, err := f.res.Resolve(gw)
	switch {
	case errors.Is(err, ErrLocal):
		return resolution{local: true}, nil
	case err == nil && r.Neighbor == gw.WithZone(""):
		return resolution{res: r, direct: true}, nil
	}
	plain := gw.WithZone("")
	if p, g, ok := f.routes.LookupPrefixLPM(netip.PrefixFrom(plain, plain.BitLen())); ok && g.primary().gw != gw {
		gw2 := g.primary().gw
		if nh2 := f.byGW[gw2]; nh2 != nil && nh2.direct {
			return resolution{res: nh2.res, via: gw2}, nil
		}
		if err == nil {
			return resolution{res: r}, nil
		}
		return resolution{}, fmt.Errorf("next hop %s: its route %s goes via %s, which is not on a link (recursion goes one level)", gw, p, gw2)
	}
	return resolution{res: r}, err
}

func (f *FIB) index(nh *nexthop) {
	if !nh.res.Neighbor.IsValid() {
		return
	}
	set := f.byNeigh[nh.res.Neighbor]
	if set == nil {
		set = map[*nexthop]struct{}{}
		f.byNeigh[nh.res.Neighbor] = set
	}
	set[nh] = struct{}{}
}

func (f *FIB) unindex(nh *nexthop) {
	if set := f.byNeigh[nh.res.Neighbor]; set != nil {
		delete(set, nh)
		if len(set) == 0 {
			delete(f.byNeigh, nh.res.Neighbor)
		}
	}
}

// release drops a group's reference; the last one clears the nexthop after its
// groups are gone.
func (f *FIB) release(gw netip.Addr) {
	nh := f.byGW[gw]
	if nh == nil {
		return
	}
	nh.refs--
	if nh.refs > 0 {
		return
	}
	f.unindex(nh)
	if n := nh.res.Neighbor; n.IsValid() && f.byNeigh[n] == nil {
		f.res.Release(n)
	}
	delete(f.indirect, nh)
	delete(f.dirty, nh)
	delete(f.byGW, gw)
	f.released = append(f.released, nh.id)
}

// NeighborChanged re-resolves the nexthops that depend on one neighbour and rewrites
// those whose entry changed: one write per nexthop, whatever the number of routes.
func (f *FIB) NeighborChanged(neigh netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshAll(slices.Collect(maps.Keys(f.byNeigh[neigh])))
}

// RefreshAll re-resolves every nexthop (after a link change, for example).
func (f *FIB) RefreshAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshAll(slices.Collect(maps.Values(f.byGW)))
}

// refreshAll refreshes nexthops, those on a link first: a recursive one copies the
// resolution of the one it goes through.
func (f *FIB) refreshAll(nhs []*nexthop) {
	slices.SortFunc(nhs, func(a, b *nexthop) int {
		switch {
		case a.direct == b.direct:
			return 0
		case a.direct:
			return -1
		}
		return 1
	})
	for _, nh := range nhs {
		f.refresh(nh)
	}
}

// RetryUnresolved re-resolves the nexthops that are not resolved yet, and gives /24s
// that passed to the kernel for want of a group one when groups have freed up.
func (f *FIB) RetryUnresolved() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retryKernelSlots()
	f.commit()
	for _, nh := range f.byGW {
		if !nh.res.Nexthop.Resolved && !nh.local && !nh.drop {
			f.refresh(nh)
		}
	}
}

func (f *FIB) refresh(nh *nexthop) {
	if nh.drop {
		return // nothing to resolve
	}
	rr, err := f.resolve(nh.gw)
	if err != nil {
		f.log.Debug("next hop still unresolved", "nexthop", nh.gw, "err", err)
	}
	r := rr.res
	nh.direct, nh.via, nh.local = rr.direct, rr.via, rr.local
	if nh.direct {
		delete(f.indirect, nh)
	} else {
		f.indirect[nh] = struct{}{}
	}
	if sameResolution(r, nh.res) {
		return
	}
	if err := f.dp.SetNexthop(nh.id, r.Nexthop); err != nil {
		f.log.Warn("rewrite nexthop", "nexthop", nh.gw, "err", err)
		return
	}
	f.log.Info("nexthop changed", "nexthop", nh.gw, "id", nh.id, "resolved", r.Nexthop.Resolved, "via", nh.via,
		"ifindex", r.Nexthop.Ifindex, "mac", r.Nexthop.DstMAC.String())
	moved := r.Neighbor != nh.res.Neighbor || r.Nexthop.Ifindex != nh.res.Nexthop.Ifindex || r.Nexthop.VLAN != nh.res.Nexthop.VLAN
	f.unindex(nh)
	was := f.usable(nh)
	nh.res = r
	f.index(nh)
	if f.usable(nh) != was {
		// Resolved or not any more, or through a neighbour or link whose state
		// differs: its groups' traffic moves.
		f.relayout([]*nexthop{nh})
	}
	if moved && f.sync != nil && !nh.local {
		f.resync(nh)
	}
	if nh.direct {
		// Recursive nexthops through this one copy its resolution.
		for dep := range f.indirect {
			if dep.via == nh.gw {
				f.refresh(dep)
			}
		}
	}
}

// resync queues the kernel copies of every route through a nexthop again: the path
// they go by in the kernel (the neighbour, the interface) moved. A walk of the table,
// for a rare event (a recursive next hop's route changed, or it resolved at last).
func (f *FIB) resync(nh *nexthop) {
	for p, g := range f.routes.All() {
		if g.primary() == nh {
			f.sync.routeChanged(p, nh.gw, nh.res, false)
		}
	}
}

func sameResolution(a, b Resolution) bool {
	x, y := a.Nexthop, b.Nexthop
	return a.Neighbor == b.Neighbor && x.Ifindex == y.Ifindex && x.MTU == y.MTU && x.VLAN == y.VLAN && x.Resolved == y.Resolved &&
		slices.Equal(x.SrcMAC, y.SrcMAC) && slices.Equal(x.DstMAC, y.DstMAC)
}

// Lookup returns the route a destination matches (longest prefix) and its primary
// next hop (the first active one), which is not valid for a blackholed route.
func (f *FIB) Lookup(a netip.Addr) (netip.Prefix, netip.Addr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, g, ok := f.routes.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
	if !ok {
		return p, netip.Addr{}, false
	}
	return p, g.primary().gw, true
}

// Route returns the primary next hop the table holds for exactly this prefix (not
// valid for a blackholed route).
func (f *FIB) Route(p netip.Prefix) (netip.Addr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.routes.Get(p.Masked())
	if !ok {
		return netip.Addr{}, false
	}
	return g.primary().gw, true
}

// routeHash hashes one route (prefix and selected BGP next hop; nothing node-specific
// such as ifindex or MACs) with FNV-1a and a final avalanche, so that the sum of the
// hashes of a table is a good order-independent digest.
func routeHash(p netip.Prefix, gw netip.Addr) uint64 {
	gw = gw.WithZone("") // a link-local next hop's interface name is the node's own
	var buf [2 * 17]byte
	b, _ := p.AppendBinary(buf[:0])
	b, _ = gw.AppendBinary(b)
	x := fnv64a(fnvOffset64, b)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// FNV-1a, as hash/fnv's New64a computes it, without the hash.Hash interface: the
// bytes hashed stay on the stack (through the interface they escaped, two
// allocations a route: 105 MB of a four-table load's garbage).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnv64a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// Digest is an order-independent hash of the table (prefix -> selected BGP next hop),
// as 16 hex digits: equal tables have equal digests on every node.
func (f *FIB) Digest() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%016x", f.digest[0]+f.digest[1])
}

// Digests are the digests of the IPv4 and the IPv6 routes alone.
func (f *FIB) Digests() (v4, v6 string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%016x", f.digest[0]), fmt.Sprintf("%016x", f.digest[1])
}

// groupHash hashes a route with its active next hops (the backup is each node's own
// choice, so not part of the table nodes compare): with one, routeHash.
func groupHash(p netip.Prefix, g *group) uint64 {
	var h uint64
	for _, nh := range g.active {
		h += routeHash(p, nh.gw)
	}
	return h
}

// prefixHash hashes a prefix alone (routeHash without a next hop).
func prefixHash(p netip.Prefix) uint64 { return routeHash(p, netip.Addr{}) }

// PrefixDigests are order-independent hashes of the IPv4 and the IPv6 prefixes alone:
// nodes holding the same prefixes have equal ones, whatever next hops they selected.
func (f *FIB) PrefixDigests() (v4, v6 string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%016x", f.prefixDigest[0]), fmt.Sprintf("%016x", f.prefixDigest[1])
}

func family(p netip.Prefix) int {
	if p.Addr().Is6() {
		return 1
	}
	return 0
}

// SingleGroupID returns the dataplane id of the group of one next hop alone (no
// backup) if a route uses it: what lookups answer for such routes.
func (f *FIB) SingleGroupID(gw netip.Addr) (uint32, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.groups[string(appendKey(nil, []netip.Addr{gw}, netip.Addr{}))]
	if !ok {
		return 0, false
	}
	return g.id, true
}

// Stats returns the table's counts.
func (f *FIB) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Stats{Routes: f.routes.Size(), Nexthops: len(f.byGW), Refused: f.refused,
		KernelSlots: len(f.v4.kernel), Groups: f.v4.t.Groups(), GroupsUsed: f.v4.groupsInUse()}
	s.DirNodes, s.DirLines, s.DirFallback = f.v4.dir.stats()
	s.RoutesV4, s.RoutesV6 = f.routes.Size4(), f.routes.Size6()
	s.V6Keys, s.V6Pending, s.V6Long, s.V6Buckets = f.v6.stats()
	for _, nh := range f.byGW {
		switch {
		case nh.local:
			s.LocalNexthops++
		case nh.drop:
		case !nh.res.Nexthop.Resolved:
			s.UnresolvedNexthops++
		}
		if nh.via.IsValid() {
			s.RecursiveNexthops++
		}
	}
	s.NexthopGroups = len(f.groups)
	for _, g := range f.groups {
		s.GroupStates[g.state]++
		if g.primary().drop {
			s.Blackholes += g.refs
		}
	}
	return s
}

// SampleDestinations returns n destinations of one family inside the table's routes:
// routes chosen uniformly (reservoir sampling over a walk of the table, under the
// lock: call it rarely, as the cost model's calibration does), then addresses chosen
// uniformly inside each. Empty when the family has no routes.
func (f *FIB) SampleDestinations(v6 bool, n int, rng *rand.Rand) []netip.Addr {
	const perRoute = 16
	k := max(1, n/perRoute)
	pick := make([]netip.Prefix, 0, k)
	f.mu.Lock()
	all := f.routes.All4
	if v6 {
		all = f.routes.All6
	}
	i := 0
	for p := range all() {
		if len(pick) < k {
			pick = append(pick, p)
		} else if j := rng.IntN(i + 1); j < k {
			pick[j] = p
		}
		i++
	}
	f.mu.Unlock()
	if len(pick) == 0 {
		return nil
	}
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = RandomIn(pick[rng.IntN(len(pick))], rng)
	}
	return out
}

// RandomIn is a uniformly random address inside p: for samples of a table's
// destinations (the cost calibration, traffic generators).
func RandomIn(p netip.Prefix, rng *rand.Rand) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := range b {
		// The bits of byte i that are host bits.
		host := byte(0xff)
		if fixed := p.Bits() - 8*i; fixed >= 8 {
			host = 0
		} else if fixed > 0 {
			host = 0xff >> fixed
		}
		b[i] |= byte(rng.Uint32()) & host
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
