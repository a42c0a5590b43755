package main

import (
	"testing"
	"time"
)

func TestMismatch(t *testing.T) {
	now := time.Now()
	old, fresh := now.Add(-time.Minute), now.Add(-5*time.Second)
	for _, tc := range []struct {
		what         string
		mine, theirs digestSeen
		want         bool
	}{
		{"equal", digestSeen{"a", old}, digestSeen{"a", old}, false},
		{"differ, both still for a minute", digestSeen{"a", old}, digestSeen{"b", old}, true},
		{"differ, mine moving (loading)", digestSeen{"a", fresh}, digestSeen{"b", old}, false},
		{"differ, theirs moving", digestSeen{"a", old}, digestSeen{"b", fresh}, false},
		{"theirs unknown", digestSeen{"a", old}, digestSeen{}, false},
	} {
		if got := mismatch(tc.mine, tc.theirs, now); got != tc.want {
			t.Errorf("%s: mismatch = %v, want %v", tc.what, got, tc.want)
		}
	}
}

func TestNeedResend(t *testing.T) {
	now := time.Now()
	after := 2 * time.Minute
	for _, tc := range []struct {
		what string
		r    resendState
		want bool
	}{
		{"no alarm", resendState{}, false},
		{"alarm up a minute: wait", resendState{alarm: now.Add(-time.Minute)}, false},
		{"alarm up three minutes: the last resort", resendState{alarm: now.Add(-3 * time.Minute)}, true},
		{"resent a minute ago", resendState{alarm: now.Add(-time.Hour), last: now.Add(-time.Minute), wait: repairFirst}, false},
		{"resent long ago, still differing", resendState{alarm: now.Add(-2 * time.Hour), last: now.Add(-time.Hour), wait: repairFirst}, true},
	} {
		if got := needResend(tc.r, after, now); got != tc.want {
			t.Errorf("%s: needResend = %v, want %v", tc.what, got, tc.want)
		}
	}
	if !needResend(resendState{alarm: now}, 0, now) {
		t.Error("resend_after 0: want a resend as soon as the alarm is up")
	}
}
