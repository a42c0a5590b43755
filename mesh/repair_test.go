package mesh

import (
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
)

func TestDiffer(t *testing.T) {
	now := time.Now()
	old, fresh := now.Add(-time.Minute), now.Add(-5*time.Second)
	for _, tc := range []struct {
		what         string
		mine, theirs seen
		want         bool
	}{
		{"equal", seen{"a", old}, seen{"a", old}, false},
		{"differ, both still for a minute", seen{"a", old}, seen{"b", old}, true},
		{"differ, mine moving (loading)", seen{"a", fresh}, seen{"b", old}, false},
		{"differ, theirs moving", seen{"a", old}, seen{"b", fresh}, false},
		{"theirs unknown", seen{"a", old}, seen{}, false},
	} {
		if got := differ(tc.mine, tc.theirs, now, Quiet); got != tc.want {
			t.Errorf("%s: differ = %v, want %v", tc.what, got, tc.want)
		}
	}
}

func TestDue(t *testing.T) {
	now := time.Now()
	after := 2 * time.Minute
	for _, tc := range []struct {
		what string
		r    peerAlarm
		want bool
	}{
		{"no alarm", peerAlarm{}, false},
		{"alarm up a minute: wait", peerAlarm{alarm: now.Add(-time.Minute)}, false},
		{"alarm up three minutes: the last resort", peerAlarm{alarm: now.Add(-3 * time.Minute)}, true},
		{"resent a minute ago", peerAlarm{alarm: now.Add(-time.Hour), last: now.Add(-time.Minute), wait: resendFirst}, false},
		{"resent long ago, still differing", peerAlarm{alarm: now.Add(-2 * time.Hour), last: now.Add(-time.Hour), wait: resendFirst}, true},
	} {
		if got := due(tc.r, after, now); got != tc.want {
			t.Errorf("%s: due = %v, want %v", tc.what, got, tc.want)
		}
	}
}

// TestObserve walks the watch through a peer that lost routes: no alarm while its
// digest moves, the alarm once both stand still for Quiet, the last resort after
// resendAfter, then again only after a doubling wait, and the alarm cleared when the
// digests agree. A peer whose session is not established is not compared.
func TestObserve(t *testing.T) {
	w := NewWatch("n1", 0, 2*time.Minute, quiet)
	nodes := []cluster.NodeInfo{{Name: "n1", BGPAddress: "10.0.0.1"}, {Name: "n2", BGPAddress: "10.0.0.2"}, {Name: "n3", BGPAddress: "10.0.0.3"}}
	established := map[string]bool{"10.0.0.2": true} // n3's session is down
	applied := func(n1, n2, n3 string) map[string]cluster.Applied {
		a := func(d string) cluster.Applied { return cluster.Applied{Prefixes: [2]string{d, "v6"}} }
		return map[string]cluster.Applied{"n1": a(n1), "n2": a(n2), "n3": a(n3)}
	}
	t0 := time.Now()
	at := func(d time.Duration, n2 string) ([]target, int) {
		return w.observe(t0.Add(d), nodes, applied("full", n2, "other"), established)
	}
	step := func(what string, d time.Duration, n2 string, wantAlarms int, wantResend bool) {
		t.Helper()
		resend, alarms := at(d, n2)
		if alarms != wantAlarms || (len(resend) > 0) != wantResend {
			t.Fatalf("%s (t+%v): %d alarms, resend %v; want %d alarms, resend %v", what, d, alarms, resend, wantAlarms, wantResend)
		}
		if wantResend {
			if resend[0].name != "n2" || resend[0].addr.String() != "10.0.0.2" {
				t.Fatalf("%s: resend to %+v, want n2 at 10.0.0.2", what, resend[0])
			}
			w.resent("n2", t0.Add(d))
		}
	}
	step("n2 loading", 0, "loading-1", 0, false)
	step("n2 still moving", 20*time.Second, "loading-2", 0, false)
	step("n2 stopped short, not yet for Quiet", 40*time.Second, "short", 0, false)
	step("both still for Quiet: the alarm", 40*time.Second+Quiet, "short", 1, false)
	step("the alarm for resendAfter: the last resort", 40*time.Second+Quiet+2*time.Minute, "short", 1, true)
	step("a minute after the resend: wait", 40*time.Second+Quiet+3*time.Minute, "short", 1, false)
	step("resendFirst after it: again", 40*time.Second+Quiet+2*time.Minute+resendFirst, "short", 1, true)
	step("resendFirst after that: the wait doubled", 40*time.Second+Quiet+2*time.Minute+2*resendFirst, "short", 1, false)
	if w.Resends() != 2 {
		t.Errorf("Resends() = %d, want 2", w.Resends())
	}
	step("n2 mended: agree", 40*time.Second+Quiet+2*time.Minute+2*resendFirst+time.Second, "full", 0, false)
	if len(w.alarms) != 0 {
		t.Errorf("alarms left after agreement: %v", w.alarms)
	}
}

// TestAlarmAfter: a shorter quiet time (cluster.mesh.alarm_after) raises the alarm
// once both sides stood still for it, not before, and is checked every third of it;
// the default checks every Check.
func TestAlarmAfter(t *testing.T) {
	w := NewWatch("n1", 3*time.Second, time.Minute, quiet)
	if got := w.Every(); got != time.Second {
		t.Errorf("Every() with a 3 s quiet time = %v, want 1s", got)
	}
	if got := NewWatch("n1", 0, time.Minute, quiet).Every(); got != Check {
		t.Errorf("Every() by default = %v, want %v", got, Check)
	}
	nodes := []cluster.NodeInfo{{Name: "n1", BGPAddress: "10.0.0.1"}, {Name: "n2", BGPAddress: "10.0.0.2"}}
	applied := map[string]cluster.Applied{"n1": {Prefixes: [2]string{"full", "v6"}}, "n2": {Prefixes: [2]string{"short", "v6"}}}
	t0 := time.Now()
	for _, c := range []struct {
		after  time.Duration
		alarms int
	}{{0, 0}, {2900 * time.Millisecond, 0}, {3 * time.Second, 1}} {
		if _, alarms := w.observe(t0.Add(c.after), nodes, applied, map[string]bool{"10.0.0.2": true}); alarms != c.alarms {
			t.Errorf("%v after both stood still: %d alarms, want %d", c.after, alarms, c.alarms)
		}
	}
}
