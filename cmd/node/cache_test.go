package main

import (
	"testing"
	"time"
)

// TestCalibrationWaitsForTheTable: the cost model is measured when a table has
// loaded (forced) or has settled, never while it loads: a full table arriving at
// 8,000 routes a second once called it every 30 s of the load.
func TestCalibrationWaitsForTheTable(t *testing.T) {
	now := time.Now()
	long := now.Add(-time.Hour)
	tick := now.Add(-time.Second)
	cases := []struct {
		name   string
		force  bool
		routes int
		at     int // routes at the last calibration (-1: never)
		prev   int // routes a second ago
		want   bool
	}{
		{"loading, never measured", false, 400_000, -1, 392_000, false},
		{"loading, grown by half since measured", false, 900_000, 600_000, 892_000, false},
		{"loaded (End-of-RIB)", true, 1_170_000, -1, 1_162_000, true},
		{"settled, never measured", false, 1_170_000, -1, 1_169_990, true},
		{"settled, grown by half since measured", false, 900_000, 600_000, 900_010, true},
		{"settled, moved by less than a quarter", false, 1_170_000, 1_000_000, 1_170_000, false},
		{"empty", true, 0, -1, 0, false},
	}
	for _, c := range cases {
		if got := calibrationDue(c.force, c.routes, c.at, long, c.prev, tick, now); got != c.want {
			t.Errorf("%s: due %v, want %v", c.name, got, c.want)
		}
	}
	if calibrationDue(false, 1_170_000, -1, long, 1_170_000, time.Time{}, now) {
		t.Error("due on the first tick, before any rate is known")
	}
	if calibrationDue(false, 900_000, 600_000, now.Add(-10*time.Second), 900_000, tick, now) {
		t.Error("due 10 s after the last calibration (at most every 30 s)")
	}
}
