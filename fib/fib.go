// Package fib is the userspace master FIB: prefixes -> nexthop ids, and nexthops
// (refcounted, resolved to egress port and MACs) written to the dataplane through a
// small interface, so the package is unit-testable without BPF.
//
// Routes reference nexthop ids, so a neighbour change rewrites one nexthop entry, not
// every route through it. Writes are ordered so a lookup never sees a dangling id: a
// nexthop is written before the first route that uses it and cleared only after the
// last such route is gone.
package fib

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	"github.com/fibfleet/fibfleet/dataplane"
)

// Dataplane is where the FIB writes; *dataplane.Dataplane implements it.
type Dataplane interface {
	SetRoute(p netip.Prefix, nexthopID uint32) error
	DeleteRoute(p netip.Prefix) error
	SetNexthop(id uint32, nh dataplane.Nexthop) error
	DeleteNexthop(id uint32) error
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
	Prefix   netip.Prefix
	Nexthop  netip.Addr
	Withdraw bool
}

// Stats summarises the table, for metrics.
type Stats struct {
	Routes             int
	Nexthops           int
	UnresolvedNexthops int
	// Refused counts route writes the dataplane refused (FIB full, ...): packets to
	// such routes pass to the kernel.
	Refused uint64
}

type nexthop struct {
	id   uint32
	gw   netip.Addr
	refs int
	res  Resolution
}

// FIB is the master table. Its methods are safe for concurrent use.
type FIB struct {
	dp  Dataplane
	res Resolver
	log *slog.Logger

	mu      sync.Mutex
	routes  map[netip.Prefix]netip.Addr // prefix -> BGP next hop
	byGW    map[netip.Addr]*nexthop
	byNeigh map[netip.Addr]map[*nexthop]struct{}
	freeIDs []uint32
	nextID  uint32
	refused uint64
}

// New returns an empty FIB that writes to dp and resolves with res.
func New(dp Dataplane, res Resolver, log *slog.Logger) *FIB {
	if log == nil {
		log = slog.Default()
	}
	return &FIB{
		dp: dp, res: res, log: log,
		routes:  map[netip.Prefix]netip.Addr{},
		byGW:    map[netip.Addr]*nexthop{},
		byNeigh: map[netip.Addr]map[*nexthop]struct{}{},
		nextID:  1,
	}
}

// Apply applies a batch of updates in order. It applies every update it can and
// returns the failures joined; a failed route is left out of the dataplane (its
// packets pass to the kernel) and counted as refused.
func (f *FIB) Apply(batch []Update) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, u := range batch {
		if err := f.apply(u); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *FIB) apply(u Update) error {
	p := u.Prefix.Masked()
	if !p.Addr().Is4() {
		return fmt.Errorf("fib: %s: only IPv4 is forwarded so far", p)
	}
	old, had := f.routes[p]
	if u.Withdraw {
		if !had {
			return nil
		}
		delete(f.routes, p)
		err := f.dp.DeleteRoute(p)
		f.release(old)
		return err
	}
	if !u.Nexthop.IsValid() {
		return fmt.Errorf("fib: route %s has no next hop", p)
	}
	if had && old == u.Nexthop {
		return nil
	}
	nh, err := f.acquire(u.Nexthop)
	if err != nil {
		f.refused++
		return err
	}
	if err := f.dp.SetRoute(p, nh.id); err != nil {
		f.refused++
		f.release(u.Nexthop) // an old route stays as it was, in both tables
		return err
	}
	f.routes[p] = u.Nexthop
	if had {
		f.release(old)
	}
	return nil
}

// acquire returns the nexthop for gw, creating, resolving and writing it if new.
func (f *FIB) acquire(gw netip.Addr) (*nexthop, error) {
	if nh, ok := f.byGW[gw]; ok {
		nh.refs++
		return nh, nil
	}
	var id uint32
	if n := len(f.freeIDs); n > 0 {
		id, f.freeIDs = f.freeIDs[n-1], f.freeIDs[:n-1]
	} else {
		if f.nextID >= dataplane.MaxNexthops {
			return nil, fmt.Errorf("fib: out of nexthop ids (%d next hops in use)", len(f.byGW))
		}
		id = f.nextID
		f.nextID++
	}
	nh := &nexthop{id: id, gw: gw, refs: 1}
	res, err := f.res.Resolve(gw)
	if err != nil {
		f.log.Warn("next hop unresolved; its routes pass to the kernel until it resolves", "nexthop", gw, "err", err)
	}
	nh.res = res
	if err := f.dp.SetNexthop(id, nh.res.Nexthop); err != nil {
		f.freeIDs = append(f.freeIDs, id)
		return nil, fmt.Errorf("fib: write nexthop %s: %w", gw, err)
	}
	f.byGW[gw] = nh
	f.index(nh)
	return nh, nil
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

// release drops a reference; the last one clears the nexthop after its routes are gone.
func (f *FIB) release(gw netip.Addr) {
	nh := f.byGW[gw]
	if nh == nil {
		return
	}
	nh.refs--
	if nh.refs > 0 {
		return
	}
	if err := f.dp.DeleteNexthop(nh.id); err != nil {
		f.log.Warn("clear nexthop", "nexthop", gw, "err", err)
	}
	f.unindex(nh)
	if n := nh.res.Neighbor; n.IsValid() && f.byNeigh[n] == nil {
		f.res.Release(n)
	}
	delete(f.byGW, gw)
	f.freeIDs = append(f.freeIDs, nh.id)
}

// NeighborChanged re-resolves the nexthops that depend on one neighbour and rewrites
// those whose entry changed: one write per nexthop, whatever the number of routes.
func (f *FIB) NeighborChanged(neigh netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for nh := range f.byNeigh[neigh] {
		f.refresh(nh)
	}
}

// RefreshAll re-resolves every nexthop (after a link change, for example).
func (f *FIB) RefreshAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, nh := range f.byGW {
		f.refresh(nh)
	}
}

// RetryUnresolved re-resolves the nexthops that are not resolved yet.
func (f *FIB) RetryUnresolved() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, nh := range f.byGW {
		if !nh.res.Nexthop.Resolved {
			f.refresh(nh)
		}
	}
}

func (f *FIB) refresh(nh *nexthop) {
	r, err := f.res.Resolve(nh.gw)
	if err != nil {
		f.log.Debug("next hop still unresolved", "nexthop", nh.gw, "err", err)
	}
	if sameResolution(r, nh.res) {
		return
	}
	if err := f.dp.SetNexthop(nh.id, r.Nexthop); err != nil {
		f.log.Warn("rewrite nexthop", "nexthop", nh.gw, "err", err)
		return
	}
	f.log.Info("nexthop changed", "nexthop", nh.gw, "id", nh.id, "resolved", r.Nexthop.Resolved,
		"ifindex", r.Nexthop.Ifindex, "mac", r.Nexthop.DstMAC.String())
	f.unindex(nh)
	nh.res = r
	f.index(nh)
}

func sameResolution(a, b Resolution) bool {
	x, y := a.Nexthop, b.Nexthop
	return a.Neighbor == b.Neighbor && x.Ifindex == y.Ifindex && x.MTU == y.MTU && x.VLAN == y.VLAN && x.Resolved == y.Resolved &&
		slices.Equal(x.SrcMAC, y.SrcMAC) && slices.Equal(x.DstMAC, y.DstMAC)
}

// Lookup returns the route a destination matches (longest prefix) and its next hop.
func (f *FIB) Lookup(a netip.Addr) (netip.Prefix, netip.Addr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for bits := a.BitLen(); bits >= 0; bits-- {
		p, _ := a.Prefix(bits)
		if gw, ok := f.routes[p]; ok {
			return p, gw, true
		}
	}
	return netip.Prefix{}, netip.Addr{}, false
}

// Stats returns the table's counts.
func (f *FIB) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Stats{Routes: len(f.routes), Nexthops: len(f.byGW), Refused: f.refused}
	for _, nh := range f.byGW {
		if !nh.res.Nexthop.Resolved {
			s.UnresolvedNexthops++
		}
	}
	return s
}
