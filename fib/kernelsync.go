package fib

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// KernelSync mirrors the FIB's routes into a kernel routing table, so that packets XDP
// passes up (TTL expiry, unresolved neighbours, full FIB) follow the same routes.
//
// It runs behind the XDP FIB, not in its path: the kernel takes 17-24 us per route on
// this machine kind, so a full table takes it 20-28 s against ~1.3 s for the compiled FIB.
// Changes are coalesced per prefix (only the latest counts) and written with batched
// netlink (KernelRoutes).
type KernelSync struct {
	table uint32
	log   *slog.Logger

	mu      sync.Mutex
	pending map[netip.Prefix]kernelOp
	// spare is the last batch's map, cleared, taken as the next pending one when it
	// is small (a map does not shrink: one that held a full table's backlog is let
	// go rather than kept for ever).
	spare map[netip.Prefix]kernelOp
	wake  chan struct{}

	// adopted are the routes an earlier process left in the table (proto bgp), by
	// a hash of the route: a change that would write one of them again skips the
	// write. Read at Run's start, dropped by Sweep.
	adopted *routeHashes
	// clean: the start's read found no BGP route in the table, so every one there
	// is this process's and the sync removes what the FIB withdraws; Sweep has
	// nothing to look for (a dump of a full table costs seconds and, through
	// netlink's Route values, hundreds of MB of garbage at the load's end).
	clean atomic.Bool

	// Installed, Removed and Failed count routes written; Pending is the backlog.
	// Adopted counts the routes found at start, Kept those of them a change found
	// already right, Swept those Sweep removed.
	Installed, Removed, Failed atomic.Uint64
	Adopted, Kept, Swept       atomic.Uint64
	Pending                    atomic.Int64
}

// spareRoutes bounds the batch map kept for the next batch. Small, because a map
// is walked (and cleared) at the largest size it held: kept up to 65,536 routes, the
// walks of a mostly empty map were 2.4 of a mesh node's 11 CPU-s of route sync in a
// full-table load of a few hundred routes a batch.
const spareRoutes = 1 << 12

type kernelOp struct {
	del       bool
	blackhole bool
	gw        netip.Addr
	oif       int
}

// NewKernelSync mirrors into routing table tableID (254 is main).
func NewKernelSync(tableID uint32, log *slog.Logger) *KernelSync {
	if log == nil {
		log = slog.Default()
	}
	return &KernelSync{table: tableID, log: log, pending: map[netip.Prefix]kernelOp{}, wake: make(chan struct{}, 1)}
}

// routeChanged queues a route's new state; FIB calls it under its lock.
func (k *KernelSync) routeChanged(p netip.Prefix, gw netip.Addr, res Resolution, withdrawn bool) {
	op := kernelOp{del: withdrawn, blackhole: !withdrawn && res.Nexthop.Drop}
	if !withdrawn && !op.blackhole {
		// The kernel wants an on-link gateway: the neighbour the next hop resolves
		// through (itself when connected), on its interface.
		op.gw = gw
		if res.Neighbor.IsValid() {
			op.gw = res.Neighbor
			if res.Nexthop.VLAN == 0 { // for a VLAN, Ifindex is the parent's: let the kernel find the device
				op.oif = int(res.Nexthop.Ifindex)
			}
		}
	}
	k.mu.Lock()
	k.pending[p] = op
	k.Pending.Store(int64(len(k.pending)))
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Run writes queued changes until ctx ends. It first reads the routes an earlier
// process left in the table: a restart adopts them (nothing flushed, nothing written
// again that is already right) and Sweep removes what is no longer in the FIB.
func (k *KernelSync) Run(ctx context.Context) error {
	kr, err := NewKernelRoutes(k.table)
	if err != nil {
		return err
	}
	defer kr.Close()
	if err := k.adopt(); err != nil {
		k.log.Warn("kernel route sync: could not read the routes left by an earlier process; every route is written again", "err", err)
	}
	var warned time.Time
	var refused uint64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.wake:
		}
		k.mu.Lock()
		batch := k.pending
		if k.spare != nil {
			k.pending, k.spare = k.spare, nil
		} else {
			k.pending = make(map[netip.Prefix]kernelOp, len(batch)/4)
		}
		k.mu.Unlock()
		start, failedBefore := time.Now(), kr.Failed
		var firstErr error
		note := func(err error) {
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
		var added, removed uint64
		k.mu.Lock()
		adopted := k.adopted
		k.mu.Unlock()
		for p, op := range batch {
			if !op.del && adopted != nil {
				k.mu.Lock()
				// Sweep may have dropped the set since: k.adopted, not adopted.
				found := k.adopted.take(kernelRouteHash(p, op))
				k.mu.Unlock()
				if found {
					k.Kept.Add(1)
					continue
				}
			}
			switch {
			case op.del:
				note(kr.Delete(p))
				removed++
			case op.blackhole:
				note(kr.ReplaceBlackhole(p))
				added++
			default:
				note(kr.Replace(p, op.gw, op.oif))
				added++
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		note(kr.Flush())
		if len(batch) <= spareRoutes {
			clear(batch)
			k.mu.Lock()
			k.spare = batch
			k.mu.Unlock()
		}
		failed := kr.Failed - failedBefore
		k.Failed.Add(failed)
		k.Installed.Add(added)
		k.Removed.Add(removed)
		k.mu.Lock()
		k.Pending.Store(int64(len(k.pending)))
		k.mu.Unlock()
		// At most one warning every 10 s, with the refusals since the last: while a
		// next hop is unresolved (a recursive one before its route arrives) every
		// batch fails, and the routes are queued again once it resolves.
		refused += failed
		if firstErr != nil && time.Since(warned) >= 10*time.Second {
			k.log.Warn("kernel route sync: routes refused by the kernel (they are queued again when their next hop resolves)", "refused", refused, "err", firstErr)
			warned, refused = time.Now(), 0
		}
		if len(batch) > 10000 {
			k.log.Info("kernel route sync", "routes", len(batch), "took", time.Since(start).Round(time.Millisecond))
		}
	}
}

// adopt reads the table's BGP routes (an earlier process's) into k.adopted.
func (k *KernelSync) adopt() error {
	var hashes []uint64
	err := k.eachRoute(func(p netip.Prefix, op kernelOp) { hashes = append(hashes, kernelRouteHash(p, op)) })
	set := newRouteHashes(hashes)
	k.mu.Lock()
	k.adopted = set
	k.mu.Unlock()
	k.Adopted.Store(uint64(set.len()))
	k.clean.Store(err == nil && set.len() == 0)
	if set.len() > 0 {
		k.log.Info("kernel route sync: adopted the routes an earlier process left; the same routes are not written again", "routes", set.len(), "table", k.table)
	}
	return err
}

// routeHashes is the set of adopted route hashes: read once, then only taken, so
// a sorted slice (8 bytes a route) and a bit a route for those taken. A map held a
// full table's in 29-38 MB (24 to 32 bytes a route) through a restart's whole load,
// where the heap peaks.
type routeHashes struct {
	sorted []uint64
	taken  []uint64 // bit i: sorted[i] taken
}

func newRouteHashes(h []uint64) *routeHashes {
	slices.Sort(h)
	h = slices.Compact(h)
	if cap(h) > len(h)+len(h)/8 {
		h = slices.Clone(h) // appends left up to a quarter unused
	}
	return &routeHashes{sorted: h, taken: make([]uint64, (len(h)+63)/64)}
}

// take reports whether h is in the set and not yet taken, and takes it: a route
// adopted is skipped once; written again after, it is this process's.
func (r *routeHashes) take(h uint64) bool {
	if r == nil {
		return false
	}
	i, ok := slices.BinarySearch(r.sorted, h)
	if !ok || r.taken[i/64]&(1<<(i%64)) != 0 {
		return false
	}
	r.taken[i/64] |= 1 << (i % 64)
	return true
}

func (r *routeHashes) len() int { return len(r.sorted) }

// eachRoute calls fn for every BGP route (proto bgp, as KernelRoutes writes them) of
// the table, both families.
func (k *KernelSync) eachRoute(fn func(netip.Prefix, kernelOp)) error {
	filter := &netlink.Route{Table: int(k.table), Protocol: rtprotBGP}
	var errs []error
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		err := netlink.RouteListFilteredIter(family, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL, func(r netlink.Route) bool {
			if r.Dst == nil {
				return true
			}
			a, ok := netip.AddrFromSlice(r.Dst.IP)
			if !ok {
				return true
			}
			ones, _ := r.Dst.Mask.Size()
			if family == netlink.FAMILY_V4 {
				a = a.Unmap()
			}
			op := kernelOp{blackhole: r.Type == unix.RTN_BLACKHOLE, oif: r.LinkIndex}
			if gw, ok := netip.AddrFromSlice(r.Gw); ok {
				op.gw = gw.Unmap()
			} else if v, ok := r.Via.(*netlink.Via); ok {
				op.gw, _ = netip.AddrFromSlice(v.Addr)
			}
			if op.blackhole {
				op.oif = 0
			}
			fn(netip.PrefixFrom(a, ones), op)
			return true
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// kernelRouteHash identifies a route as the kernel holds it (FNV-1a): the adopted set
// keeps 8 bytes a route, not the route.
func kernelRouteHash(p netip.Prefix, op kernelOp) uint64 {
	var buf [2*17 + 9 + 32]byte // two addresses and a prefix length; a zone's name, mostly none
	b, _ := p.AppendBinary(buf[:0])
	b, _ = op.gw.AppendBinary(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(op.oif))
	var bh byte
	if op.blackhole {
		bh = 1
	}
	return fnv64a(fnvOffset64, append(b, bh))
}

// SweepKernel removes from the kernel sync's table the BGP routes whose prefix has
// no route in the FIB
// (an earlier process's, withdrawn while the node restarted), and forgets the adopted
// set. Call it once the FIB is complete (after a restart's swap). It returns how
// many it queued for removal.
func (f *FIB) SweepKernel() (int, error) {
	f.mu.Lock()
	k := f.sync
	f.mu.Unlock()
	if k == nil {
		return 0, nil
	}
	if k.clean.Load() {
		return 0, nil
	}
	// Read the table without the FIB's lock (a dump of a full table takes seconds),
	// then check the candidates under it: a route the FIB gained since is kept, and
	// one it gains after is queued after the removal (the latest change wins).
	var stale []netip.Prefix
	err := k.eachRoute(func(p netip.Prefix, _ kernelOp) {
		if !f.hasRoute(p) {
			stale = append(stale, p)
		}
	})
	f.mu.Lock()
	k.mu.Lock()
	n := 0
	for _, p := range stale {
		if _, ok := f.routes.Get(p); ok {
			continue
		}
		if _, queued := k.pending[p]; queued {
			continue
		}
		k.pending[p] = kernelOp{del: true}
		n++
	}
	k.adopted = nil
	k.Pending.Store(int64(len(k.pending)))
	k.mu.Unlock()
	f.mu.Unlock()
	k.Swept.Add(uint64(n))
	if n > 0 {
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (f *FIB) hasRoute(p netip.Prefix) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.routes.Get(p)
	return ok
}
