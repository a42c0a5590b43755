package dataplane

import "testing"

// TestStatsSinceCounted: the counts added since a reading, listed by reason with
// the reasons that counted nothing left out.
func TestStatsSinceCounted(t *testing.T) {
	var before, after Stats
	before[Forwarded].Packets, after[Forwarded].Packets = 10, 60
	before[PassNoRoute].Packets, after[PassNoRoute].Packets = 2, 5
	before[PassTTL].Packets, after[PassTTL].Packets = 7, 7
	if got, want := after.Since(before).Counted(), "forwarded 50, no_route 3"; got != want {
		t.Errorf("Since(before).Counted() = %q, want %q", got, want)
	}
	if got := (Stats{}).Counted(); got != "" {
		t.Errorf("no counts: Counted() = %q, want empty", got)
	}
}
