package mesh

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cluster"
)

// The mesh's alarm and its last resort. Every node holds the same prefixes once the
// mesh has carried them (each may select other next hops), so each node compares its
// prefix digests with every registered node's. A difference that has stood still on
// both sides for Quiet is an alarm: routes were lost on the way, which should never
// happen (GoBGP lost them towards a mesh peer that came up while routes arrived,
// until patch 1 of third_party/'s set). It is logged and counted. If it lasts
// resendAfter more, the node resends its routes to that node (a soft reset out: the
// whole Adj-RIB-Out, once), the last resort; a node that lacks routes resends what it
// has too (little: iBGP routes are not passed on). A difference a resend does not mend
// (a node that cannot hold some routes) is resent less and less often.
const (
	// Check is how often the digests are compared, at most (a third of the quiet
	// time when that is shorter).
	Check = 10 * time.Second
	// Quiet is how long both sides' digests must stand still to count, by default
	// (cluster.mesh.alarm_after).
	Quiet = 30 * time.Second
	// resendFirst and resendMax bound the wait between resends to one node.
	resendFirst = 5 * time.Minute
	resendMax   = 6 * time.Hour
)

// seen is a node's prefix digests and since when this node sees them unchanged.
type seen struct {
	value string
	since time.Time
}

// peerAlarm is the repair's memory of one peer: since when the alarm is up, the last
// resend and the wait before the next.
type peerAlarm struct {
	alarm time.Time
	last  time.Time
	wait  time.Duration
}

// differ says whether two nodes' prefixes differ and both have stood still for quiet
// (a node still loading moves).
func differ(mine, theirs seen, now time.Time, quiet time.Duration) bool {
	return mine.value != "" && theirs.value != "" && mine.value != theirs.value &&
		now.Sub(mine.since) >= quiet && now.Sub(theirs.since) >= quiet
}

// due says whether to resend to a node whose alarm is up: it has been for
// resendAfter, and the wait since the last resend is over.
func due(r peerAlarm, resendAfter time.Duration, now time.Time) bool {
	return !r.alarm.IsZero() && now.Sub(r.alarm) >= resendAfter &&
		(r.last.IsZero() || now.Sub(r.last) >= r.wait)
}

// Digests is what the watch reads of etcd: the registered nodes and the states they
// applied (their prefix digests among them).
type Digests interface {
	Nodes(ctx context.Context) ([]cluster.NodeInfo, error)
	AppliedStates(ctx context.Context) (map[string]cluster.Applied, error)
}

// Resender is what the watch needs of the BGP speaker.
type Resender interface {
	MeshPeers() []bgp.PeerStatus
	ResendMesh(ctx context.Context, a netip.Addr) error
}

// Watch compares this node's prefixes with its mesh peers', raises the alarm and
// resends as the last resort (see above).
type Watch struct {
	node               string
	quiet, resendAfter time.Duration
	log                *slog.Logger

	seen   map[string]seen
	alarms map[string]peerAlarm

	resends    atomic.Uint64
	mismatches atomic.Int64
}

// NewWatch returns the watch of node's mesh: a difference is an alarm once both
// sides stood still for quiet (0: Quiet), and resendAfter is how long an alarm
// stands before the last resort.
func NewWatch(node string, quiet, resendAfter time.Duration, log *slog.Logger) *Watch {
	if quiet <= 0 {
		quiet = Quiet
	}
	return &Watch{node: node, quiet: quiet, resendAfter: resendAfter, log: log, seen: map[string]seen{}, alarms: map[string]peerAlarm{}}
}

// Every is how often to Check: Check, or a third of the quiet time when that is
// shorter, so that an alarm is raised within about 1.3 times the quiet time.
func (w *Watch) Every() time.Duration {
	return max(min(Check, w.quiet/3), 100*time.Millisecond)
}

// Resends counts the routes resent to mesh peers (the last resort; should stay 0).
func (w *Watch) Resends() uint64 { return w.resends.Load() }

// Mismatches is how many established mesh peers' prefixes differ from this node's,
// still, at the last check (the alarm; should stay 0).
func (w *Watch) Mismatches() int { return int(w.mismatches.Load()) }

// target is a mesh peer to resend to.
type target struct {
	name string
	addr netip.Addr
}

// observe takes one reading (the registered nodes, what they applied, which mesh
// sessions are established, by address) at now, updates the alarms and returns the
// nodes the last resort is due for, and how many alarms are up.
func (w *Watch) observe(now time.Time, nodes []cluster.NodeInfo, applied map[string]cluster.Applied, established map[string]bool) (resend []target, alarms int) {
	for name, a := range applied {
		v := a.Prefixes[0] + "/" + a.Prefixes[1]
		if s, ok := w.seen[name]; !ok || s.value != v {
			w.seen[name] = seen{value: v, since: now}
		}
	}
	mine := w.seen[w.node]
	for _, n := range nodes {
		if n.Name == w.node || !established[n.BGPAddress] {
			continue
		}
		theirs, r := w.seen[n.Name], w.alarms[n.Name]
		if !differ(mine, theirs, now, w.quiet) {
			if mine.value == theirs.value {
				if !r.alarm.IsZero() {
					w.log.Info("this node's prefixes and a mesh peer's agree again", "member", n.Name, "alarm_for", now.Sub(r.alarm).Round(time.Second))
				}
				delete(w.alarms, n.Name) // agreed: a later difference starts afresh
			}
			continue
		}
		alarms++
		if r.alarm.IsZero() {
			r.alarm = now
			w.alarms[n.Name] = r
			w.log.Error("this node's prefixes and a mesh peer's have differed, unchanged, for a while: routes were lost on the way (report it with both nodes' logs)",
				"member", n.Name, "mine", mine.value, "theirs", theirs.value, "still_for", now.Sub(later(mine.since, theirs.since)).Round(time.Second),
				"resend_in", w.resendAfter)
		}
		if due(r, w.resendAfter, now) {
			addr, _ := netip.ParseAddr(n.BGPAddress)
			resend = append(resend, target{n.Name, addr})
		}
	}
	return resend, alarms
}

// resent records a resend to a node at now: the next waits resendFirst, then twice
// as long each time, up to resendMax.
func (w *Watch) resent(name string, now time.Time) {
	r := w.alarms[name]
	if r.last.IsZero() {
		r.wait = resendFirst
	} else {
		r.wait = min(2*r.wait, resendMax)
	}
	r.last = now
	w.alarms[name] = r
	w.resends.Add(1)
}

// Check compares once, and resends where the last resort is due. An etcd error skips
// the check: there is nothing to compare with.
func (w *Watch) Check(ctx context.Context, d Digests, s Resender) {
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	nodes, err := d.Nodes(tctx)
	var applied map[string]cluster.Applied
	if err == nil {
		applied, err = d.AppliedStates(tctx)
	}
	cancel()
	if err != nil {
		return
	}
	established := map[string]bool{}
	for _, p := range s.MeshPeers() {
		established[p.Address.String()] = p.State == "established"
	}
	now := time.Now()
	resend, alarms := w.observe(now, nodes, applied, established)
	w.mismatches.Store(int64(alarms))
	for _, t := range resend {
		w.log.Warn("resending this node's routes to a mesh peer whose prefixes still differ (soft reset out: the last resort)",
			"member", t.name, "peer", t.addr, "alarm_for", now.Sub(w.alarms[t.name].alarm).Round(time.Second))
		if err := s.ResendMesh(ctx, t.addr); err != nil {
			w.log.Error("resend routes to a mesh peer", "peer", t.addr, "err", err)
			continue
		}
		w.resent(t.name, now)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
