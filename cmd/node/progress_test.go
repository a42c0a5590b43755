package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
)

func TestLoadProgress(t *testing.T) {
	n := netip.MustParseAddr("192.0.2.2")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newLoadProgress()
	view := func() loadView {
		t.Helper()
		vs := p.snapshot()
		if len(vs) != 1 {
			t.Fatalf("%d views, want 1", len(vs))
		}
		return vs[0]
	}
	est := t0.Add(-2 * time.Second)
	// 2 s into the session, 100k of an expected 1M: 50k/s, 18 s left.
	p.sample([]bgp.Load{{Neighbor: n, Established: est, Received: 100_000, Expected: 1_000_000}}, t0)
	if v := view(); v.Rate != 50_000 || v.ETA != 18*time.Second {
		t.Errorf("first sample: rate %v, eta %v; want 50000/s, 18s", v.Rate, v.ETA)
	}
	// 5 s later, 600k: 100k/s, 4 s left.
	p.sample([]bgp.Load{{Neighbor: n, Established: est, Received: 600_000, Expected: 1_000_000}}, t0.Add(5*time.Second))
	if v := view(); v.Rate != 100_000 || v.ETA != 4*time.Second {
		t.Errorf("second sample: rate %v, eta %v; want 100000/s, 4s", v.Rate, v.ETA)
	}
	// More than expected: no estimate, but the rate goes on.
	p.sample([]bgp.Load{{Neighbor: n, Established: est, Received: 1_100_000, Expected: 1_000_000}}, t0.Add(10*time.Second))
	if v := view(); v.Rate != 100_000 || v.ETA != -1 {
		t.Errorf("past expected: rate %v, eta %v; want 100000/s, unknown", v.Rate, v.ETA)
	}
	// End-of-RIB applied: done, lag measured from GoBGP's End-of-RIB.
	eor := t0.Add(11 * time.Second)
	done := bgp.Load{Neighbor: n, Established: est, Received: 1_150_000, Expected: 1_150_000, EndOfRIB: eor}
	if v, first := p.fibDone(done, eor.Add(300*time.Millisecond)); !first || v.Lag() != 300*time.Millisecond || v.ETA != -1 {
		t.Errorf("done: first %v, lag %v, eta %v; want true, 300ms, unknown", first, v.Lag(), v.ETA)
	}
	// A repeated End-of-RIB in the same session changes nothing.
	if v, first := p.fibDone(done, eor.Add(time.Minute)); first || v.Lag() != 300*time.Millisecond {
		t.Errorf("repeated End-of-RIB: first %v, lag %v; want false, 300ms", first, v.Lag())
	}
	p.sample([]bgp.Load{done}, t0.Add(15*time.Second))
	if v := view(); v.FIBDone.IsZero() || v.ETA != -1 {
		t.Errorf("after the dump: %+v, want done and no ETA", v)
	}
	// A new session starts over: not done, rate from its own start.
	est2 := t0.Add(19 * time.Second)
	p.sample([]bgp.Load{{Neighbor: n, Established: est2, Received: 10_000, Expected: 1_150_000}}, t0.Add(20*time.Second))
	if v := view(); !v.FIBDone.IsZero() || v.Rate != 10_000 || v.ETA != 114*time.Second {
		t.Errorf("new session: done %v, rate %v, eta %v; want not done, 10000/s, 114s", v.FIBDone, v.Rate, v.ETA)
	}
	// A session that is down has no ETA.
	p.sample([]bgp.Load{{Neighbor: n, Expected: 1_150_000}}, t0.Add(25*time.Second))
	if v := view(); v.ETA != -1 {
		t.Errorf("session down: eta %v, want unknown", v.ETA)
	}
}

// TestReadiness: ready once an upstream's table is in the dataplane and none in
// session is loading; mesh peers do not count; no upstream: ready.
func TestReadiness(t *testing.T) {
	up1, up2, mesh := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("10.0.0.2")
	est := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meshSet := map[netip.Addr]bool{mesh: true}
	doneSet := map[netip.Addr]bool{}
	done := func(l bgp.Load) bool { return doneSet[l.Neighbor] }
	down := func(a netip.Addr) bgp.Load { return bgp.Load{Neighbor: a} }
	loading := func(a netip.Addr) bgp.Load {
		return bgp.Load{Neighbor: a, Established: est, Received: 500, Expected: 1000}
	}
	for _, c := range []struct {
		name  string
		loads []bgp.Load
		done  []netip.Addr
		ready bool
		why   string
	}{
		{"no upstream, a mesh peer loading", []bgp.Load{loading(mesh)}, nil, true, "no upstream neighbours configured"},
		{"upstreams down", []bgp.Load{down(up1), down(up2)}, nil, false, "no upstream session has delivered its table yet (2 configured"},
		{"one loading", []bgp.Load{loading(up1), down(up2)}, nil, false, "loading the table of 192.0.2.1 (500 of 1000 prefixes)"},
		{"one loaded, one down", []bgp.Load{loading(up1), down(up2), loading(mesh)}, []netip.Addr{up1}, true, "holding the tables of 1 of 2 upstreams"},
		{"one loaded, one loading", []bgp.Load{loading(up1), loading(up2)}, []netip.Addr{up1}, false, "loading the table of 198.51.100.1"},
	} {
		clear(doneSet)
		for _, a := range c.done {
			doneSet[a] = true
		}
		ok, why := readiness(c.loads, done, meshSet)
		if ok != c.ready || !strings.HasPrefix(why, c.why) {
			t.Errorf("%s: ready %v, %q; want %v, %q", c.name, ok, why, c.ready, c.why)
		}
	}
}
