package fib

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
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
	wake    chan struct{}

	// Installed, Removed and Failed count routes written; Pending is the backlog.
	Installed, Removed, Failed atomic.Uint64
	Pending                    atomic.Int64
}

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

// Run writes queued changes until ctx ends.
func (k *KernelSync) Run(ctx context.Context) error {
	kr, err := NewKernelRoutes(k.table)
	if err != nil {
		return err
	}
	defer kr.Close()
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
		k.pending = make(map[netip.Prefix]kernelOp, len(batch)/4)
		k.mu.Unlock()
		start, failedBefore := time.Now(), kr.Failed
		var firstErr error
		note := func(err error) {
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
		var added, removed uint64
		for p, op := range batch {
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
