package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Blackhole is a destination the fleet drops (ctl blackhole add): every node drops
// its traffic in XDP and announces it with BLACKHOLE to the upstreams that take
// blackholes, until Until (zero: until deleted).
type Blackhole struct {
	Prefix netip.Prefix `json:"prefix"`
	Until  time.Time    `json:"until,omitzero"`
	Reason string       `json:"reason,omitempty"`
	Added  time.Time    `json:"added"`
	// Revision is the etcd revision that wrote it (filled in on reads).
	Revision int64 `json:"-"`
}

// Active says whether the blackhole is in force at t.
func (b Blackhole) Active(t time.Time) bool { return b.Until.IsZero() || t.Before(b.Until) }

type blackholeDoc struct {
	Schema int `json:"schema"`
	Blackhole
}

// blackholeGrace is how long etcd keeps a blackhole's key after its Until (a lease
// deletes it then): the nodes stop dropping at Until by their own clocks; the key
// stays a while so that `ctl blackhole list` shows what just expired.
const blackholeGrace = 10 * time.Minute

func (s *Store) blackholePrefix() string { return s.prefix + "blackhole/" }

func (s *Store) blackholeKey(p netip.Prefix) string { return s.blackholePrefix() + p.String() }

// CheckBlackhole says what is wrong with a prefix to blackhole.
func CheckBlackhole(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return fmt.Errorf("cluster: blackhole: not a prefix")
	case p != p.Masked():
		return fmt.Errorf("cluster: blackhole %s has host bits set: write %s", p, p.Masked())
	case p.Addr().Is4In6():
		return fmt.Errorf("cluster: blackhole %s: write the IPv4 prefix itself", p)
	case p.Addr().Is4() && p.Bits() < 8, p.Addr().Is6() && p.Bits() < 16:
		return fmt.Errorf("cluster: blackhole %s is shorter than /8 (IPv4) or /16 (IPv6): that drops a large part of the Internet; blackhole the attacked addresses", p)
	}
	return nil
}

// AddBlackhole writes a blackhole (replacing one of the same prefix) and returns
// the revision that wrote it: a node that reports BlackholeRevision at or after it
// has applied it.
func (s *Store) AddBlackhole(ctx context.Context, b Blackhole) (int64, error) {
	if err := CheckBlackhole(b.Prefix); err != nil {
		return 0, err
	}
	now := time.Now().UTC()
	if !b.Until.IsZero() && !b.Until.After(now) {
		return 0, fmt.Errorf("cluster: blackhole %s until %s: that is in the past", b.Prefix, b.Until.Format(time.RFC3339))
	}
	b.Added = now
	v, err := json.Marshal(blackholeDoc{Schema: Schema, Blackhole: b})
	if err != nil {
		return 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var opts []clientv3.OpOption
	if !b.Until.IsZero() {
		l, err := s.cli.Grant(tctx, int64((b.Until.Sub(now)+blackholeGrace)/time.Second))
		if err != nil {
			return 0, fmt.Errorf("cluster: grant the blackhole's lease (is etcd reachable?): %w", err)
		}
		opts = append(opts, clientv3.WithLease(l.ID))
	}
	resp, err := s.cli.Put(tctx, s.blackholeKey(b.Prefix), string(v), opts...)
	if err != nil {
		return 0, fmt.Errorf("cluster: write the blackhole of %s (is etcd reachable?): %w", b.Prefix, err)
	}
	return resp.Header.Revision, nil
}

// DeleteBlackhole removes a blackhole and returns the revision that removed it.
func (s *Store) DeleteBlackhole(ctx context.Context, p netip.Prefix) (int64, error) {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := s.cli.Delete(tctx, s.blackholeKey(p.Masked()))
	if err != nil {
		return 0, fmt.Errorf("cluster: delete the blackhole of %s (is etcd reachable?): %w", p, err)
	}
	if resp.Deleted == 0 {
		return 0, fmt.Errorf("cluster: no blackhole of %s (ctl blackhole list shows them)", p)
	}
	return resp.Header.Revision, nil
}

// Blackholes lists the blackholes in etcd (expired ones included until etcd drops
// them), by prefix.
func (s *Store) Blackholes(ctx context.Context) ([]Blackhole, error) {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := s.cli.Get(tctx, s.blackholePrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read the blackholes (is etcd reachable?): %w", err)
	}
	out := make([]Blackhole, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		b, err := decodeBlackhole(kv.Value, kv.ModRevision, string(kv.Key))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	sortBlackholes(out)
	return out, nil
}

func decodeBlackhole(v []byte, rev int64, key string) (Blackhole, error) {
	var d blackholeDoc
	if err := decode(v, &d, key); err != nil {
		return Blackhole{}, err
	}
	if err := CheckBlackhole(d.Prefix); err != nil {
		return Blackhole{}, fmt.Errorf("cluster: %s: %w", key, err)
	}
	d.Revision = rev
	return d.Blackhole, nil
}

func sortBlackholes(bs []Blackhole) {
	slices.SortFunc(bs, func(a, b Blackhole) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
}

// Blackholer drops what the fleet blackholes (ctl blackhole): it is given the
// whole set in force each time it changes.
type Blackholer interface {
	ApplyBlackholes(prefixes []netip.Prefix) error
}

// blackholeState is what the agent knows of the fleet's blackholes: every key as
// read, and the revision of the last change read.
type blackholeState struct {
	all map[netip.Prefix]Blackhole
	rev int64
}

// readBlackholes fills the state from a range read at one revision.
func (a *Agent) readBlackholes(kvs []*mvccpb.KeyValue, rev int64) {
	all := map[netip.Prefix]Blackhole{}
	for _, kv := range kvs {
		b, err := decodeBlackhole(kv.Value, kv.ModRevision, string(kv.Key))
		if err != nil {
			a.log.Error("a blackhole in etcd is unreadable: ignored (delete it with ctl blackhole del, or add it again)", "err", err)
			continue
		}
		all[b.Prefix] = b
	}
	a.mu.Lock()
	a.bh = blackholeState{all: all, rev: rev}
	a.mu.Unlock()
}

// blackholeEvents applies a watch response's changes to the state.
func (a *Agent) blackholeEvents(resp clientv3.WatchResponse) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range resp.Events {
		key := string(ev.Kv.Key)
		p, err := netip.ParsePrefix(strings.TrimPrefix(key, a.cfg.Store.blackholePrefix()))
		if ev.Type == clientv3.EventTypeDelete {
			if err == nil {
				delete(a.bh.all, p)
			}
		} else if b, err := decodeBlackhole(ev.Kv.Value, ev.Kv.ModRevision, key); err != nil {
			a.log.Error("a blackhole in etcd is unreadable: ignored (delete it with ctl blackhole del, or add it again)", "err", err)
		} else {
			a.bh.all[b.Prefix] = b
		}
		a.bh.rev = max(a.bh.rev, ev.Kv.ModRevision)
	}
}

// applyBlackholes gives the Blackholer the set in force now when it differs from
// the one applied, and returns when the next one expires (zero: none will).
func (a *Agent) applyBlackholes() time.Time {
	if a.cfg.Blackholer == nil {
		return time.Time{}
	}
	now := time.Now()
	a.mu.Lock()
	var active []netip.Prefix
	var next time.Time
	for p, b := range a.bh.all {
		if !b.Active(now) {
			continue
		}
		active = append(active, p)
		if !b.Until.IsZero() && (next.IsZero() || b.Until.Before(next)) {
			next = b.Until
		}
	}
	rev, applied, appliedRev := a.bh.rev, a.status.Blackholes, a.status.BlackholeRevision
	a.mu.Unlock()
	slices.SortFunc(active, func(x, y netip.Prefix) int {
		if c := x.Addr().Compare(y.Addr()); c != 0 {
			return c
		}
		return x.Bits() - y.Bits()
	})
	if slices.Equal(active, applied) {
		if rev != appliedRev {
			a.mu.Lock()
			a.status.BlackholeRevision = rev
			a.mu.Unlock()
		}
		return next
	}
	if err := a.cfg.Blackholer.ApplyBlackholes(active); err != nil {
		a.log.Error("apply the fleet's blackholes", "blackholes", len(active), "err", err)
		return next
	}
	a.mu.Lock()
	a.status.Blackholes, a.status.BlackholeRevision = active, rev
	a.mu.Unlock()
	a.log.Info("blackholes applied", "blackholes", len(active), "revision", rev)
	return next
}
