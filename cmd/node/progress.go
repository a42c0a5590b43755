package main

import (
	"log/slog"
	"math"
	"net/netip"
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
