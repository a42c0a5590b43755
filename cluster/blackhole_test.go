package cluster_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/clustertest"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

type blackholer struct {
	mu   sync.Mutex
	sets [][]netip.Prefix
	fail bool
}

func (b *blackholer) ApplyBlackholes(ps []netip.Prefix) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		return context.DeadlineExceeded
	}
	b.sets = append(b.sets, slices.Clone(ps))
	return nil
}

func (b *blackholer) last() []netip.Prefix {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sets) == 0 {
		return nil
	}
	return b.sets[len(b.sets)-1]
}

// TestAgentBlackholes: a node applies the fleet's blackholes as one set each time it
// changes, reports the revision applied (what ctl waits for), drops one at its
// --until by its own clock, applies the set in force when it starts, and tries a set
// it failed to apply again. Bad prefixes and past times are refused with nothing
// written.
func TestAgentBlackholes(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	p1, p2, p3 := netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("2001:db8::7/128"), netip.MustParsePrefix("203.0.113.0/24")
	if _, err := s.AddBlackhole(c, cluster.Blackhole{Prefix: p3, Reason: "before the node"}); err != nil {
		t.Fatal(err)
	}
	start := func(b *blackholer) { runAgent(t, cluster.AgentConfig{Store: s, Node: "r1", Blackholer: b}) }
	applied := func(rev int64, n int) func() bool {
		return func() bool {
			st, err := s.AppliedStates(c)
			return err == nil && st["r1"].BlackholeRevision >= rev && st["r1"].Blackholes == n
		}
	}
	b := &blackholer{}
	start(b)
	testutil.Eventually(t, "the blackhole written before the node started applied", func() bool { return slices.Equal(b.last(), []netip.Prefix{p3}) })

	rev1, err := s.AddBlackhole(c, cluster.Blackhole{Prefix: p1, Reason: "attack"})
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.AddBlackhole(c, cluster.Blackhole{Prefix: p2, Until: time.Now().Add(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "three blackholes applied and reported", applied(max(rev1, rev2), 3))
	if got := b.last(); !slices.Equal(got, []netip.Prefix{p1, p3, p2}) {
		t.Errorf("applied %v, want [%s %s %s]", got, p1, p3, p2)
	}
	all, err := s.Blackholes(c)
	if err != nil || len(all) != 3 || all[0].Prefix != p1 || all[0].Reason != "attack" || all[0].Revision != rev1 || all[2].Until.IsZero() {
		t.Errorf("Blackholes() = %+v, %v", all, err)
	}
	testutil.Eventually(t, "the one with --until dropped when it expired", func() bool { return slices.Equal(b.last(), []netip.Prefix{p1, p3}) })
	testutil.Eventually(t, "the expiry reported", applied(rev2, 2))

	rev3, err := s.DeleteBlackhole(c, p3)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the deletion applied", applied(rev3, 1))
	if _, err := s.DeleteBlackhole(c, p3); err == nil || !strings.Contains(err.Error(), "no blackhole of") {
		t.Errorf("deleting it again: %v, want no blackhole of", err)
	}

	// A node that fails to apply keeps what it had, reports nothing new, and tries again.
	b.mu.Lock()
	b.fail = true
	b.mu.Unlock()
	rev4, err := s.AddBlackhole(c, cluster.Blackhole{Prefix: p3})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if st, _ := s.AppliedStates(c); st["r1"].BlackholeRevision >= rev4 {
		t.Errorf("a set the node failed to apply was reported applied (revision %d)", st["r1"].BlackholeRevision)
	}
	b.mu.Lock()
	b.fail = false
	b.mu.Unlock()
	testutil.Eventually(t, "the set applied on a retry", applied(rev4, 2))

	for _, bad := range []cluster.Blackhole{
		{Prefix: netip.MustParsePrefix("198.51.100.7/24")},
		{Prefix: netip.MustParsePrefix("0.0.0.0/0")},
		{Prefix: netip.MustParsePrefix("2000::/3")},
		{Prefix: netip.MustParsePrefix("198.51.100.9/32"), Until: time.Now().Add(-time.Minute)},
	} {
		if _, err := s.AddBlackhole(c, bad); err == nil {
			t.Errorf("blackhole %+v accepted", bad)
		}
	}
	// The expired one stays listed (inactive) until its lease's grace is over.
	if all, _ := s.Blackholes(c); len(all) != 3 || all[2].Prefix != p2 || all[2].Active(time.Now()) {
		t.Errorf("blackholes after the refused ones: %+v, want p1, p3 and the expired p2", all)
	}
}
