package main

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
)

// loadView is what the node reports about one neighbour's initial dump.
type loadView struct {
	bgp.Load
	// Rate is prefixes received per second over the last progress interval.
	Rate float64
	// ETA is the time left at Rate until Expected; -1 when unknown (no expected size,
	// nothing arriving, or more received than expected).
	ETA time.Duration
	// FIBDone is when every change the dump caused was in the dataplane: when the
	// node applied the End-of-RIB event, which follows them in the stream. Zero until then.
	FIBDone time.Time
}

// Lag is how long the dataplane trailed GoBGP at the end of the dump: from GoBGP
// processing the End-of-RIB to the dataplane holding everything before it.
func (v loadView) Lag() time.Duration { return v.FIBDone.Sub(v.EndOfRIB) }

// loadProgress follows each neighbour's initial dump: the speaker counts prefixes,
// this turns successive counts into rates and ETAs (sampled by the progress ticker)
// and records when the dataplane caught up with each End-of-RIB.
type loadProgress struct {
	mu    sync.Mutex
	views map[netip.Addr]*loadView
	at    time.Time // last sample
}

func newLoadProgress() *loadProgress {
	return &loadProgress{views: map[netip.Addr]*loadView{}}
}

// sample updates rates and ETAs from the speaker's counts at now.
func (p *loadProgress) sample(loads []bgp.Load, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dt := now.Sub(p.at).Seconds()
	p.at = now
	for _, l := range loads {
		v := p.views[l.Neighbor]
		if v == nil {
			v = &loadView{}
			p.views[l.Neighbor] = v
		}
		prev, d := v.Load, dt
		if !l.Established.Equal(prev.Established) {
			// A new session: its dump starts from zero, and its FIB is not done yet.
			prev.Received, v.FIBDone = 0, time.Time{}
			if since := now.Sub(l.Established).Seconds(); since < d || d <= 0 {
				d = since
			}
		}
		v.Load = l
		v.Rate, v.ETA = 0, -1
		if d > 0 && l.Received >= prev.Received {
			v.Rate = float64(l.Received-prev.Received) / d
		}
		if loading(l) && l.Expected > l.Received && v.Rate > 0 {
			v.ETA = time.Duration(float64(l.Expected-l.Received) / v.Rate * float64(time.Second))
		}
	}
}

func loading(l bgp.Load) bool { return !l.Established.IsZero() && l.EndOfRIB.IsZero() }

// fibDone records that the dataplane holds a neighbour's whole dump, returning its
// view; first is false when this session's dump was already done (a repeated
// End-of-RIB changes nothing).
func (p *loadProgress) fibDone(l bgp.Load, now time.Time) (v loadView, first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pv := p.views[l.Neighbor]
	if pv == nil {
		pv = &loadView{}
		p.views[l.Neighbor] = pv
	}
	if !pv.FIBDone.IsZero() && pv.Established.Equal(l.Established) {
		return *pv, false
	}
	pv.Load, pv.FIBDone, pv.Rate, pv.ETA = l, now, 0, -1
	return *pv, true
}

// snapshot returns every neighbour's view.
func (p *loadProgress) snapshot() []loadView {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]loadView, 0, len(p.views))
	for _, v := range p.views {
		out = append(out, *v)
	}
	return out
}

// logLoading logs every dump in progress: one line per neighbour per interval.
func logLoading(log *slog.Logger, views []loadView) {
	for _, v := range views {
		if !loading(v.Load) {
			continue
		}
		args := []any{"neighbor", v.Neighbor, "received", v.Received, "prefixes_per_second", math.Round(v.Rate)}
		if v.Expected > 0 {
			args = append(args, "expected", v.Expected)
		}
		if v.ETA >= 0 {
			args = append(args, "eta", v.ETA.Round(time.Second))
		}
		log.Info("BGP initial load", args...)
	}
}

// doneWith reports whether the dataplane holds the whole dump of l's current session.
func (p *loadProgress) doneWith(l bgp.Load) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.views[l.Neighbor]
	return v != nil && !v.FIBDone.IsZero() && v.Established.Equal(l.Established) && !l.Established.IsZero()
}

// readiness says whether the node is ready to carry traffic (GET /readyz, and so a
// rolling update's pace): it holds the table of at least one upstream, and no
// upstream in session is still loading. A node with no upstream configured is ready
// once it runs. Mesh peers do not count: the fleet's other nodes are not what makes
// this node's table whole. why says what it waits for, naming neighbours.
func readiness(loads []bgp.Load, done func(bgp.Load) bool, mesh map[netip.Addr]bool) (ready bool, why string) {
	var upstreams, complete int
	var waiting []string
	for _, l := range loads {
		if mesh[l.Neighbor] {
			continue
		}
		upstreams++
		switch {
		case done(l):
			complete++
		case !l.Established.IsZero():
			waiting = append(waiting, fmt.Sprintf("%s (%d of %d prefixes)", l.Neighbor, l.Received, l.Expected))
		}
	}
	slices.Sort(waiting)
	switch {
	case upstreams == 0:
		return true, "no upstream neighbours configured"
	case len(waiting) > 0:
		return false, "loading the table of " + strings.Join(waiting, ", ")
	case complete == 0:
		return false, fmt.Sprintf("no upstream session has delivered its table yet (%d configured, none established and loaded)", upstreams)
	}
	return true, fmt.Sprintf("holding the tables of %d of %d upstreams", complete, upstreams)
}
