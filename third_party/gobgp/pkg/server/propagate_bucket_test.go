package server

import (
	"testing"
)

// TestPropagateBucketAllocatesNothing: picking a path's propagation bucket, done for
// every path propagated, builds no string (it built the family's name and the
// prefix's text into one).
func TestPropagateBucketAllocatesNothing(t *testing.T) {
	d := newSharedData()
	p := makePath(t, "192.0.2.0/24", "10.0.0.1", 0)
	q := makePath(t, "192.0.2.0/24", "10.0.0.2", 0)
	if d.propagateBucket(p) != d.propagateBucket(q) {
		t.Error("two paths of one destination in two buckets")
	}
	if allocs := testing.AllocsPerRun(100, func() { d.propagateBucket(p) }); allocs != 0 {
		t.Errorf("picking a bucket costs %.0f allocations", allocs)
	}
}
