package main

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/rpki"
)

// originValidation follows the configured RPKI validators (package rpki's RTR
// client, one per validator) into one union of their VRPs, which the speaker's
// import filter validates every upstream route against. Each validator's change
// re-checks exactly the routes the VRPs it added or removed cover (bgp's
// ReimportWithin, GoBGP patch 5), not a soft reset of the whole table. A validator
// that goes away keeps its VRPs for rpki.expire, then they leave the union (and the
// routes they covered are checked again).
//
// Start-up: the sessions with upstreams that have import rules wait (held down in
// the speaker) until every validator has sent its first set, or rpki.wait has
// passed: a full table is then validated as it arrives. A set that arrives after the
// table instead checks again the routes it covers (taken as not found until then):
// with a full set, nearly the whole table, 15 s during which invalid routes are
// forwarded (docs/BENCHMARKS.md, "Route origin validation").
type originValidation struct {
	union   *rpki.Union
	speaker *bgp.Speaker
	expire  time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	up      map[string]bool        // connected and in sync
	updated map[string]time.Time   // last End of Data
	expiry  map[string]*time.Timer // running while a validator is away
	// firsts are the validators whose first set is in; ready closes when all are.
	firsts     map[string]bool
	validators int
	ready      chan struct{}
}

func startOriginValidation(ctx context.Context, c RPKIConfig, speaker *bgp.Speaker, log *slog.Logger) *originValidation {
	if len(c.Validators) == 0 {
		return nil
	}
	o := &originValidation{union: rpki.NewUnion(), speaker: speaker, expire: c.Expire, log: log.With("component", "rpki"),
		up: map[string]bool{}, updated: map[string]time.Time{}, expiry: map[string]*time.Timer{},
		firsts: map[string]bool{}, validators: len(c.Validators), ready: make(chan struct{})}
	if o.expire <= 0 {
		o.expire = 2 * time.Hour
	}
	action := map[string]bgp.InvalidAction{"": bgp.InvalidReject, "reject": bgp.InvalidReject, "mark": bgp.InvalidMark, "lower": bgp.InvalidLower}[c.Invalid]
	if err := speaker.SetOriginValidation(ctx, o.union, action, cmp.Or(c.InvalidLocalPref, defaultInvalidLocalPref)); err != nil {
		o.log.Error("route origin validation: give invalid routes their lower preference", "err", err)
	}
	for _, addr := range c.Validators {
		cl := &rpki.Client{Addr: addr, Refresh: c.Refresh, Logger: o.log}
		go cl.Run(ctx, func(u rpki.Update) { o.update(ctx, u) }, func(error) { o.lost(ctx, addr) })
	}
	o.log.Info("route origin validation on", "validators", c.Validators, "invalid", cmp.Or(c.Invalid, "reject"), "sessions_wait", c.wait())
	if c.wait() > 0 {
		go o.release(ctx, c.wait())
	}
	return o
}

// release starts the held upstream sessions once every validator's first set is in,
// or after wait.
func (o *originValidation) release(ctx context.Context, wait time.Duration) {
	start := time.Now()
	select {
	case <-o.ready:
		o.log.Info("every validator's first set is in: upstream sessions start", "after", time.Since(start).Round(time.Millisecond), "vrps", o.union.Len())
	case <-time.After(wait):
		o.mu.Lock()
		missing := o.validators - len(o.firsts)
		o.mu.Unlock()
		o.log.Warn("upstream sessions start before every validator's first set (rpki.wait passed): their routes count as not found until it comes, then what it covers is checked again",
			"validators_missing", missing, "wait", wait)
	case <-ctx.Done():
		return
	}
	if err := o.speaker.ReleaseUpstreams(ctx); err != nil {
		o.log.Error("start the upstream sessions held for the validators", "err", err)
	}
}

// defaultInvalidLocalPref is rpki.invalid_local_pref's default: below BGP's default
// of 100.
const defaultInvalidLocalPref = 50

// update applies a validator's End of Data and checks again what it changed.
func (o *originValidation) update(ctx context.Context, u rpki.Update) {
	changed := o.union.Apply(u)
	o.mu.Lock()
	o.up[u.Source], o.updated[u.Source] = true, time.Now()
	if t := o.expiry[u.Source]; t != nil {
		t.Stop()
		delete(o.expiry, u.Source)
	}
	o.mu.Unlock()
	if u.First || len(u.Added)+len(u.Removed) > 0 {
		o.log.Info("VRPs updated", "validator", u.Source, "first", u.First, "added", len(u.Added), "removed", len(u.Removed), "vrps", o.union.Len(),
			"prefixes_to_check", len(changed))
	}
	if err := o.speaker.ReimportWithin(ctx, changed); err != nil {
		o.log.Error("check again the routes the VRP change covers", "err", err)
	}
	if u.First {
		o.mu.Lock()
		if !o.firsts[u.Source] {
			o.firsts[u.Source] = true
			if len(o.firsts) == o.validators {
				close(o.ready)
			}
		}
		o.mu.Unlock()
	}
}

// lost starts the validator's expiry.
func (o *originValidation) lost(ctx context.Context, source string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.up[source] = false
	if o.expiry[source] != nil {
		return
	}
	o.expiry[source] = time.AfterFunc(o.expire, func() {
		changed := o.union.Drop(source)
		o.log.Warn("a validator away longer than rpki.expire: its VRPs dropped", "validator", source, "prefixes_to_check", len(changed))
		if err := o.speaker.ReimportWithin(ctx, changed); err != nil {
			o.log.Error("check again the routes the dropped VRPs covered", "err", err)
		}
	})
}

// status is each validator's state (up, and its VRPs) for metrics.
func (o *originValidation) status() (up map[string]bool, vrps map[string]int) {
	o.mu.Lock()
	up = maps.Clone(o.up)
	o.mu.Unlock()
	return up, o.union.Sources()
}
