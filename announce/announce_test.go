package announce

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

var (
	t0     = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	local  = netip.MustParsePrefix("198.19.10.0/24")
	routed = netip.MustParsePrefix("198.19.20.0/24")
)

func decide(t *testing.T, d *Decider, at time.Time, wantA, wantW []netip.Prefix) time.Time {
	t.Helper()
	a, w, next := d.Decide(at)
	if !slices.Equal(a, wantA) || !slices.Equal(w, wantW) {
		t.Fatalf("at +%v: announce %v withdraw %v, want announce %v withdraw %v", at.Sub(t0), a, w, wantA, wantW)
	}
	return next
}

func TestDecide(t *testing.T) {
	d := New([]Prefix{{Prefix: local, Local: true}, {Prefix: routed}}, 30*time.Second)
	// Nothing before the node can forward.
	decide(t, d, t0, nil, nil)
	d.SetCanForward(true, "")
	decide(t, d, t0, []netip.Prefix{local}, nil)

	// Routes that do not count: external, the same prefix, elsewhere, the default.
	d.Observe(netip.MustParsePrefix("198.19.0.0/16"), false, false)
	d.Observe(routed, true, false)
	d.Observe(netip.MustParsePrefix("198.20.0.0/16"), true, false)
	d.Observe(netip.MustParsePrefix("0.0.0.0/0"), true, false)
	decide(t, d, t0, nil, nil)

	// An internal route within it (a component) carries it.
	comp := netip.MustParsePrefix("198.19.20.128/25")
	d.Observe(comp, true, false)
	decide(t, d, t0, []netip.Prefix{routed}, nil)
	// The component goes: withdrawn only after the hold-down, and back in time keeps it.
	d.Observe(comp, false, true)
	next := decide(t, d, t0.Add(time.Second), nil, nil)
	if want := t0.Add(31 * time.Second); !next.Equal(want) {
		t.Fatalf("hold-down ends at %v, want %v", next, want)
	}
	decide(t, d, t0.Add(20*time.Second), nil, nil)
	if st := d.States()[1]; !st.Announced || st.WithdrawAt.IsZero() {
		t.Fatalf("held-down prefix state %+v: want announced with a withdrawal time", st)
	}
	cover := netip.MustParsePrefix("198.19.0.0/16")
	d.Observe(cover, true, false) // a covering internal route arrives
	decide(t, d, t0.Add(40*time.Second), nil, nil)
	// The covering route's path turns external: not carried any more.
	d.Observe(cover, false, false)
	decide(t, d, t0.Add(41*time.Second), nil, nil)
	decide(t, d, t0.Add(70*time.Second), nil, nil)
	decide(t, d, t0.Add(71*time.Second), nil, []netip.Prefix{routed})

	// The node stops forwarding: the local prefix stays for the hold-down, then goes.
	d.SetCanForward(false, "XDP detached from eth0")
	decide(t, d, t0.Add(100*time.Second), nil, nil)
	if st := d.States()[0]; st.Why != "node cannot forward: XDP detached from eth0 (held down)" {
		t.Fatalf("why = %q", st.Why)
	}
	d.SetCanForward(true, "") // back within the hold-down: never withdrawn
	decide(t, d, t0.Add(110*time.Second), nil, nil)
	d.SetCanForward(false, "no upstream's table")
	decide(t, d, t0.Add(120*time.Second), nil, nil)
	decide(t, d, t0.Add(150*time.Second), nil, []netip.Prefix{local})
	d.SetCanForward(true, "")
	decide(t, d, t0.Add(151*time.Second), []netip.Prefix{local}, nil)
}

func TestConfigure(t *testing.T) {
	d := New([]Prefix{{Prefix: local, Local: true}}, 0)
	d.SetCanForward(true, "")
	decide(t, d, t0, []netip.Prefix{local}, nil)
	// Kept: nothing happens; the hold-down changes.
	d.Configure([]Prefix{{Prefix: local, Local: true}, {Prefix: routed}}, 5*time.Second)
	decide(t, d, t0, nil, nil)
	d.SetCanForward(false, "x")
	decide(t, d, t0, nil, nil)
	decide(t, d, t0.Add(5*time.Second), nil, []netip.Prefix{local})
	d.SetCanForward(true, "")
	decide(t, d, t0.Add(6*time.Second), []netip.Prefix{local}, nil)
	// Removed from the configuration: withdrawn at once.
	d.Configure([]Prefix{{Prefix: routed}}, 0)
	decide(t, d, t0.Add(7*time.Second), nil, []netip.Prefix{local})
	// A failed announcement is tried again.
	d.Observe(netip.MustParsePrefix("198.19.20.0/26"), true, false)
	decide(t, d, t0.Add(8*time.Second), []netip.Prefix{routed}, nil)
	d.Undo(routed, true)
	decide(t, d, t0.Add(9*time.Second), []netip.Prefix{routed}, nil)
	if got := len(d.States()); got != 1 {
		t.Fatalf("%d states, want 1", got)
	}
}
