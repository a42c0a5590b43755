package main

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bfd"
	"github.com/fibfleet/fibfleet/fib"
)

// bfdSessions keeps a BFD session with each neighbour whose configuration asks for
// one. A session going down marks the neighbour down in the FIB at once (its groups
// move to their other members); when the neighbour went silent (the detection time
// expired), it then resets its BGP session, which BGP would otherwise hold for its
// hold time. Up again, the neighbour is usable again.
type bfdSessions struct {
	log   *slog.Logger
	table *fib.FIB
	reset func(ctx context.Context, a netip.Addr, why string) error

	mu      sync.Mutex
	srv     *bfd.Server
	running map[netip.Addr]bfd.Peer
}

func newBFDSessions(table *fib.FIB, reset func(context.Context, netip.Addr, string) error, log *slog.Logger) *bfdSessions {
	return &bfdSessions{log: log.With("component", "bfd"), table: table, reset: reset, running: map[netip.Addr]bfd.Peer{}}
}

func (b *bfdSessions) changed(ev bfd.Event) {
	if ev.State == bfd.Down {
		b.table.SetNeighborDown(ev.Peer, true, "bfd")
		if ev.Diag != bfd.DiagDetectionExpired {
			// The neighbour said its session is down: its BGP decides about its own
			// session (BIRD's "bfd on" ends it). A reset from here would restart its
			// BGP, which starts a new BFD session (Down, no discriminator), which
			// would take this one down again: a loop.
			return
		}
		// The neighbour went silent. After the FIB: the session's end withdraws the
		// neighbour's routes, which takes a while with a full table.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := b.reset(ctx, ev.Peer, "BFD session down ("+ev.Diag.String()+")"); err != nil {
				b.log.Warn("reset the BGP session after BFD went down", "neighbor", ev.Peer, "err", err)
			}
		}()
		return
	}
	b.table.SetNeighborDown(ev.Peer, false, "bfd")
}

// set makes the sessions those of the configured neighbours: starts the new ones,
// stops those gone, restarts those whose settings changed.
func (b *bfdSessions) set(neighbors []NeighborConfig) error {
	want := map[netip.Addr]bfd.Peer{}
	for _, n := range neighbors {
		a, err := netip.ParseAddr(n.Address)
		if err != nil {
			continue // the configuration's check said so
		}
		if p, err := n.bfdPeer(a, ""); err == nil && p != nil {
			want[a] = *p
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil && len(want) > 0 {
		srv, err := bfd.Listen(b.log, b.changed)
		if err != nil {
			return err
		}
		b.srv = srv
	}
	var errs []error
	for a, p := range b.running {
		if w, ok := want[a]; !ok || w != p {
			b.srv.Remove(a)
			delete(b.running, a)
			// A session removed says nothing about the neighbour any more.
			b.table.SetNeighborDown(a, false, "bfd")
		}
	}
	for a, p := range want {
		if _, ok := b.running[a]; ok {
			continue
		}
		if err := b.srv.Add(p); err != nil {
			errs = append(errs, err)
			continue
		}
		b.running[a] = p
		b.log.Info("BFD session configured", "neighbor", a, "interval", p.MinTx, "multiplier", p.Multiplier)
	}
	return errors.Join(errs...)
}

// sessions reports every session.
func (b *bfdSessions) sessions() []bfd.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return nil
	}
	return b.srv.Sessions()
}

func (b *bfdSessions) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
	}
}
