package fib

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
)

// checkDir compares what a lookup finds through the compressed level with Tbl24 for
// every /24 (every 1 in step): the compression must be exact.
func checkDir(t *testing.T, f *FIB, step uint32) {
	t.Helper()
	for i := uint32(0); i < 1<<24; i += step {
		if got, want := f.v4.dir.entry(i), f.v4.t.Tbl24[i]; got != want {
			t.Fatalf("/24 %#x: the compressed level says %#x, tbl24 %#x", i, got, want)
		}
	}
}

// TestDirEqualsTbl24 churns random routes with roomy pools and with pools too small
// for the table (blocks then fall back to tbl24), checking the compressed level
// against tbl24 after every batch, and that it empties with the table.
func TestDirEqualsTbl24(t *testing.T) {
	for _, pools := range []struct {
		name         string
		lines        int
		wantFallback bool
	}{{"roomy", 1 << 18, false}, {"tiny", 12, true}} {
		t.Run(pools.name, func(t *testing.T) {
			dp := newFakeDPPools(t, 4096, pools.lines)
			f := newFIB(t, dp, &fakeRes{})
			rng := rand.New(rand.NewPCG(7, 8))
			ref := map[netip.Prefix]netip.Addr{}
			fellBack := false
			for round := 0; round < 20; round++ {
				var batch []Update
				for i := 0; i < 200; i++ {
					p := randomPrefix(rng)
					if rng.IntN(3) == 0 {
						batch = append(batch, Update{Prefix: p, Withdraw: true})
						delete(ref, p)
						continue
					}
					gw := netip.AddrFrom4([4]byte{10, 9, 0, byte(1 + rng.IntN(6))})
					batch = append(batch, Update{Prefix: p, Nexthop: gw})
					ref[p] = gw
				}
				if err := f.Apply(batch); err != nil {
					t.Fatal(err)
				}
				checkDir(t, f, 1+uint32(rng.IntN(64)))
				checkAgainstReference(t, f, ref, probes(rng, ref))
				_, _, fb := f.v4.dir.stats()
				fellBack = fellBack || fb > 0
			}
			checkDir(t, f, 1)
			if fellBack != pools.wantFallback {
				t.Errorf("blocks fell back to tbl24: %v, want %v", fellBack, pools.wantFallback)
			}
			var batch []Update
			for p := range ref {
				batch = append(batch, Update{Prefix: p, Withdraw: true})
			}
			if err := f.Apply(batch); err != nil {
				t.Fatal(err)
			}
			for b, e := range dp.tables.Dir {
				if e != 0 {
					t.Fatalf("dir[%d] = %#x after every route was withdrawn", b, e)
				}
			}
			if nodes, lines, fb := f.v4.dir.stats(); nodes != 0 || lines != 0 || fb != 0 {
				t.Fatalf("after withdrawing everything: %d nodes, %d lines, %d fallback blocks in use", nodes, lines, fb)
			}
		})
	}
}

// TestDirGrace: a node and its leaves that a lookup may still be reading are not
// reused before the grace period ends, and are after it.
func TestDirGrace(t *testing.T) {
	f := newFIB(t, newFakeDP(t, 16), &fakeRes{})
	now := time.Unix(1000, 0)
	f.v4.now = func() time.Time { return now }
	block := addr32(ip("198.51.0.0")) >> 16
	node := func() uint32 {
		t.Helper()
		e := f.v4.t.Dir[block]
		if e&dataplane.FIB4Node == 0 || e == dataplane.FIB4Tbl24 {
			t.Fatalf("dir entry %#x is not a node", e)
		}
		return e &^ dataplane.FIB4Node
	}
	apply := func(gw string) {
		t.Helper()
		// Two /24s with different next hops: the /16 needs a node of 4 leaves (1 line).
		if err := f.Apply([]Update{{Prefix: pfx("198.51.1.0/24"), Nexthop: ip("10.0.0.1")}, {Prefix: pfx("198.51.2.0/24"), Nexthop: ip(gw)}}); err != nil {
			t.Fatal(err)
		}
	}
	apply("10.0.0.2")
	n1 := node()
	apply("10.0.0.3")
	if n2 := node(); n2 == n1 {
		t.Fatalf("rebuilt block reuses node line %d at once", n1)
	}
	now = now.Add(groupGrace)
	apply("10.0.0.4")
	if n3 := node(); n3 != n1 {
		t.Errorf("after the grace period: node line %d, want the retired node's line %d", n3, n1)
	}
}

// TestDirChurnWithoutAllocation: a /16 rebuilt at every commit, its old node
// retired and reclaimed after the grace period, costs no allocation once the
// queues have grown: the retired nodes' queue reuses its room (cut from the
// front it was reallocated again and again in a full table's load).
func TestDirChurnWithoutAllocation(t *testing.T) {
	f := newFIB(t, newFakeDP(t, 16), &fakeRes{})
	now := time.Unix(1000, 0)
	f.v4.now = func() time.Time { return now }
	v, slot := f.v4, addr32(ip("198.51.1.0"))>>8
	gw := uint32(1)
	step := func() {
		// Two /24s of the /16 differ: a node of its own, rebuilt at each commit.
		gw = gw%200 + 1
		v.set24(slot, gw)
		v.set24(slot+1, gw+1)
		v.commit()
		now = now.Add(groupGrace / 10) // each node reclaimed ten commits later
	}
	for range 100 {
		step()
	}
	// testing.AllocsPerRun rounds down: one allocation in ten commits reads 0.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 1000 {
		step()
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 10 {
		t.Errorf("1000 commits rebuilding one /16: %d allocations, want none (a few of the runtime's at most)", n)
	}
	if got := len(v.dir.retired); got > 24 {
		t.Errorf("the retired queue holds %d entries, want about the last ten commits' (twice that at most)", got)
	}
}
