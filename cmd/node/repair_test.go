package main

import (
	"testing"
	"time"
)

func TestNeedResend(t *testing.T) {
	now := time.Now()
	old, fresh := now.Add(-time.Minute), now.Add(-5*time.Second)
	for _, tc := range []struct {
		what         string
		mine, theirs digestSeen
		r            resendState
		want         bool
	}{
		{"equal", digestSeen{"a", old}, digestSeen{"a", old}, resendState{}, false},
		{"differ, both still for a minute", digestSeen{"a", old}, digestSeen{"b", old}, resendState{}, true},
		{"differ, mine moving (loading)", digestSeen{"a", fresh}, digestSeen{"b", old}, resendState{}, false},
		{"differ, theirs moving", digestSeen{"a", old}, digestSeen{"b", fresh}, resendState{}, false},
		{"differ, resent a minute ago", digestSeen{"a", old}, digestSeen{"b", old}, resendState{last: old, wait: repairFirst}, false},
		{"differ, resent long ago", digestSeen{"a", old}, digestSeen{"b", old}, resendState{last: now.Add(-time.Hour), wait: repairFirst}, true},
		{"theirs unknown", digestSeen{"a", old}, digestSeen{}, resendState{}, false},
	} {
		if got := needResend(tc.mine, tc.theirs, tc.r, now); got != tc.want {
			t.Errorf("%s: needResend = %v, want %v", tc.what, got, tc.want)
		}
	}
}
