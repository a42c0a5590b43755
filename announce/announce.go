// Package announce decides which of the fleet's prefixes a node announces to its
// upstreams, and when: only while the node can carry their traffic, with a
// hold-down, so that a reload, or one upstream's reset, never withdraws the fleet's
// prefixes from the Internet. It decides only; the node carries out what it says
// (package bgp announces and withdraws), so its rules are tested alone.
//
// A prefix is wanted while the node can forward (its XDP program attached
// everywhere, and at least one upstream's table in the dataplane) and its traffic
// has somewhere to go:
//   - a local destination (Local: served by this node itself), always;
//   - else a route from inside the fleet's AS (an empty AS path: the operator's core
//     over iBGP, or a fleet node) that covers the prefix (shorter) or lies within it
//     (longer, as the components of an aggregate). A route of exactly the prefix
//     does not count: the node's own announcement displaces it from its table.
//
// A wanted prefix is announced at once; one that stops being wanted is withdrawn
// only after it has stayed unwanted for the hold-down. A prefix removed from the
// configuration is withdrawn at once: that is the operator's decision, not a fault.
package announce

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHoldDown is how long an announced prefix stays announced after the node
// stopped being able to carry it.
const DefaultHoldDown = 30 * time.Second

// Prefix is one prefix the fleet originates.
type Prefix struct {
	Prefix netip.Prefix
	// Local: its traffic is for this node itself (a service on it), so it needs no
	// route; else it needs a route from inside the AS (see the package comment).
	Local bool
}

// State is one prefix's decision, for the node's API and metrics.
type State struct {
	Prefix    netip.Prefix `json:"prefix"`
	Local     bool         `json:"local,omitempty"`
	Announced bool         `json:"announced"`
	// Why says what the decision rests on: "announced", or what is missing.
	Why string `json:"why"`
	// WithdrawAt is when an announced prefix that is no longer wanted goes, unless
	// it is wanted again before (zero otherwise).
	WithdrawAt time.Time `json:"withdraw_at,omitzero"`
	// Routes counts the routes from inside the AS that carry its traffic.
	Routes int `json:"routes"`
}

type prefixState struct {
	local     bool
	routes    map[netip.Prefix]bool // routes from inside the AS covering it or within it
	announced bool
	lostAt    time.Time // when it stopped being wanted while announced
}

// Decider holds the decisions. Its methods are safe for concurrent use.
type Decider struct {
	mu         sync.Mutex
	holdDown   time.Duration
	prefixes   map[netip.Prefix]*prefixState
	canForward bool
	whyNot     string // why the node cannot forward
	// removed are announced prefixes taken out of the configuration: withdrawn at
	// the next Decide.
	removed []netip.Prefix
	// routed is set while some prefix needs routes: Observe returns at once
	// otherwise (it runs for every best-path change of a full table).
	routed atomic.Bool
}

// New returns a Decider for prefixes; holdDown 0 means DefaultHoldDown.
func New(prefixes []Prefix, holdDown time.Duration) *Decider {
	d := &Decider{prefixes: map[netip.Prefix]*prefixState{}, whyNot: "not yet known whether the node can forward"}
	d.Configure(prefixes, holdDown)
	return d
}

// Configure replaces the prefixes and the hold-down (a reload): a prefix kept keeps
// its state and its routes; one removed is withdrawn at the next Decide.
func (d *Decider) Configure(prefixes []Prefix, holdDown time.Duration) {
	if holdDown <= 0 {
		holdDown = DefaultHoldDown
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holdDown = holdDown
	keep := map[netip.Prefix]*prefixState{}
	routed := false
	for _, p := range prefixes {
		k := p.Prefix.Masked()
		st := d.prefixes[k]
		if st == nil {
			st = &prefixState{routes: map[netip.Prefix]bool{}}
		}
		st.local = p.Local
		keep[k] = st
		routed = routed || !p.Local
	}
	for k, st := range d.prefixes {
		if _, ok := keep[k]; !ok && st.announced {
			d.removed = append(d.removed, k)
		}
	}
	d.prefixes = keep
	d.routed.Store(routed)
}

// Observe takes one best-path change of the node's table: route is its prefix,
// internal says its AS path is empty, withdraw that the prefix has no path now.
// A route learned from another network never carries a prefix's traffic.
func (d *Decider) Observe(route netip.Prefix, internal, withdraw bool) {
	if !d.routed.Load() || route.Bits() == 0 {
		return // nothing needs routes; a default route proves nothing
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, st := range d.prefixes {
		if st.local || !related(p, route) {
			continue
		}
		if withdraw || !internal {
			delete(st.routes, route)
		} else {
			st.routes[route] = true
		}
	}
}

// related says route covers p (shorter) or lies within it (longer); the same
// prefix is neither.
func related(p, route netip.Prefix) bool {
	switch {
	case route.Bits() < p.Bits():
		return route.Contains(p.Addr())
	case route.Bits() > p.Bits():
		return p.Contains(route.Addr())
	}
	return false
}

// SetCanForward says whether the node can forward now, and if not why.
func (d *Decider) SetCanForward(ok bool, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.canForward, d.whyNot = ok, why
}

// wantedLocked says whether p is wanted now, and if not why.
func (d *Decider) wantedLocked(st *prefixState) (bool, string) {
	switch {
	case !d.canForward:
		return false, "node cannot forward: " + d.whyNot
	case !st.local && len(st.routes) == 0:
		return false, "no route from inside the AS covers it or lies within it"
	}
	return true, "announced"
}

// Decide returns what to announce and what to withdraw now, and marks it done (the
// caller carries it out, and calls Undo for what failed); next is when a hold-down
// ends (zero: none pending).
func (d *Decider) Decide(now time.Time) (announce, withdraw []netip.Prefix, next time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	withdraw, d.removed = d.removed, nil
	for p, st := range d.prefixes {
		ok, _ := d.wantedLocked(st)
		switch {
		case ok:
			st.lostAt = time.Time{}
			if !st.announced {
				st.announced = true
				announce = append(announce, p)
			}
		case !st.announced:
		case st.lostAt.IsZero():
			st.lostAt = now
			fallthrough
		default:
			end := st.lostAt.Add(d.holdDown)
			if !now.Before(end) {
				st.announced, st.lostAt = false, time.Time{}
				withdraw = append(withdraw, p)
			} else if next.IsZero() || end.Before(next) {
				next = end
			}
		}
	}
	sortPrefixes(announce)
	sortPrefixes(withdraw)
	return announce, withdraw, next
}

// Undo records that announcing (or withdrawing) p failed: the next Decide tries
// again.
func (d *Decider) Undo(p netip.Prefix, announced bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.prefixes[p]; st != nil {
		st.announced = !announced
	} else if !announced {
		d.removed = append(d.removed, p)
	}
}

// States reports every prefix's decision.
func (d *Decider) States() []State {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]State, 0, len(d.prefixes))
	for p, st := range d.prefixes {
		_, why := d.wantedLocked(st)
		s := State{Prefix: p, Local: st.local, Announced: st.announced, Why: why, Routes: len(st.routes)}
		if st.announced && !st.lostAt.IsZero() {
			s.WithdrawAt = st.lostAt.Add(d.holdDown)
			s.Why += " (held down)"
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b State) int { return comparePrefix(a.Prefix, b.Prefix) })
	return out
}

func sortPrefixes(ps []netip.Prefix) { slices.SortFunc(ps, comparePrefix) }

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
