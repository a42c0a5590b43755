package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/clustertest"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestPolicyPrecedenceAndCAS: no policy, then the fleet's, then a node's override
// (only for that node); writes against a stale revision and invalid policies change
// nothing.
func TestPolicyPrecedenceAndCAS(t *testing.T) {
	s, cli := clustertest.Store(t)
	c := ctx(t)
	if _, _, err := s.PolicyInForce(c, "r1"); !errors.Is(err, cluster.ErrNoPolicy) {
		t.Fatalf("empty etcd: %v, want cluster.ErrNoPolicy", err)
	}
	fleet := cache.Policy{Mode: cache.Auto, MinEntries: 1024, MaxEntries: 65536}
	rev, err := s.SetPolicy(c, "", fleet, cluster.NoRevision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(c, "", fleet, cluster.NoRevision); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("create over an existing policy: %v, want ErrConflict", err)
	}
	override := cache.Policy{Mode: cache.Fixed, Entries: [2]int{512, 0}}
	if _, err := s.SetPolicy(c, "r2", override, cluster.NoRevision); err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]struct {
		p   cache.Policy
		src cluster.Source
	}{"r1": {fleet, cluster.FromFleet}, "r2": {override, cluster.FromNode}} {
		p, src, err := s.PolicyInForce(c, node)
		if err != nil || p != want.p || src != want.src {
			t.Errorf("%s: %+v from %s (%v), want %+v from %s", node, p, src, err, want.p, want.src)
		}
	}

	// A write with the revision read succeeds once; the second, with the same (now
	// stale) revision, fails and leaves the first's value.
	off := cache.Policy{Mode: cache.Off}
	if _, err := s.SetPolicy(c, "", off, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(c, "", fleet, rev); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("write at a stale revision: %v, want ErrConflict", err)
	}
	if v, _ := s.StoredPolicy(c, ""); v.Policy != off {
		t.Fatalf("after a failed compare-and-swap the fleet policy is %+v, want %+v", v.Policy, off)
	}

	// Invalid policies and names: an error saying what to do, etcd untouched.
	before, err := cli.Get(c, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		node string
		p    cache.Policy
		want string
	}{
		{"", cache.Policy{Mode: "sometimes"}, "use off, fixed or auto"},
		{"", cache.Policy{Mode: cache.Fixed, Entries: [2]int{1000, 0}}, "power of two"},
		{"r1", cache.Policy{Mode: cache.Auto, MinEntries: 4096, MaxEntries: 1024}, "above cache.max_entries"},
		{"bad/name", off, "node name"},
	} {
		if _, err := s.SetPolicy(c, tc.node, tc.p, cluster.AnyRevision); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v for %q: %v, want an error saying %q", tc.p, tc.node, err, tc.want)
		}
	}
	after, err := cli.Get(c, "/")
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.Revision != before.Header.Revision {
		t.Errorf("refused writes moved etcd's revision from %d to %d", before.Header.Revision, after.Header.Revision)
	}

	// A value of another schema is refused on read, saying so.
	if _, err := cli.Put(c, "/fibfleet/lab/policy", `{"schema":2,"mode":"auto"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StoredPolicy(c, ""); err == nil || !strings.Contains(err.Error(), "schema 2") {
		t.Errorf("a schema 2 value: %v, want an error naming the schema", err)
	}
}

// TestFlushConcurrent: flushes from two clients at once, each a compare-and-swap
// increment: none lost.
func TestFlushConcurrent(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	if e, _, err := s.Epoch(c); err != nil || e != 0 {
		t.Fatalf("epoch before any flush: %d (%v), want 0", e, err)
	}
	var wg sync.WaitGroup
	seen := make(chan uint32, 40)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				e, err := s.Flush(c)
				if err != nil {
					t.Error(err)
					return
				}
				seen <- e
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := map[uint32]bool{}
	for e := range seen {
		if got[e] {
			t.Errorf("epoch %d returned by two flushes", e)
		}
		got[e] = true
	}
	if e, _, _ := s.Epoch(c); e != 40 || len(got) != 40 {
		t.Fatalf("after 40 flushes: epoch %d, %d distinct, want 40 and 40", e, len(got))
	}
}

// TestRegisterLease: a registered node is listed while its lease lives; Close revokes
// it at once, and a node whose keep-alive stops (a crashed process) goes when its
// lease expires.
func TestRegisterLease(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	r1, err := s.Register(c, cluster.NodeInfo{Name: "r1", ASN: 65000, APIAddress: "127.0.0.1:9464", Version: "test"}, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Register(c, cluster.NodeInfo{Name: "r2"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func() string {
		t.Helper()
		ns, err := s.Nodes(c)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return strings.Join(out, ",")
	}
	time.Sleep(3 * time.Second) // longer than both leases: kept alive
	if got := names(); got != "r1,r2" {
		t.Fatalf("registered nodes %q, want r1,r2 (kept alive past their ttl)", got)
	}
	ns, _ := s.Nodes(c)
	if ns[0].ASN != 65000 || ns[0].APIAddress != "127.0.0.1:9464" || ns[0].Schema != cluster.Schema {
		t.Errorf("r1 registered as %+v", ns[0])
	}
	if err := r1.Close(c); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "r2" {
		t.Fatalf("after r1 left: %q, want r2", got)
	}
	// r2 crashes: its keep-alive stops, the lease is not revoked.
	r2.Crash()
	deadline := time.Now().Add(10 * time.Second)
	for names() != "" {
		if time.Now().After(deadline) {
			t.Fatal("r2 is still registered 10 s after its keep-alive stopped (ttl 1 s)")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := s.Register(c, cluster.NodeInfo{Name: "../x"}, time.Second, nil); err == nil {
		t.Error("a node name with a slash was registered")
	}
}

// TestAppliedAndWait: applied states round-trip; WaitApplied returns who reported an
// epoch (already, or while it waits) and who did not by the deadline.
func TestAppliedAndWait(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	a := cluster.Applied{Node: "r1", Epoch: 1, Entries: [2]int{2048, 0},
		Digests: [2]string{"0123456789abcdef", "fedcba9876543210"}, Routes: [2]int{1168945, 279855}, Version: "test", At: time.Now().UTC().Truncate(time.Second)}
	a.SetPolicy(cache.Policy{Mode: cache.Auto, MinEntries: 1024, MaxEntries: 4096, TargetHitRate: 0.9}, cluster.FromNode, 7)
	if err := s.ReportApplied(c, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.AppliedStates(c)
	if err != nil {
		t.Fatal(err)
	}
	a.Schema = cluster.Schema
	if len(got) != 1 || got["r1"] != a {
		t.Fatalf("applied states %+v, want r1's %+v", got, a)
	}
	if p := got["r1"].Policy(); p.TargetHitRate != 0.9 || p.MaxEntries != 4096 {
		t.Errorf("policy read back %+v", p)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = s.ReportApplied(c, cluster.Applied{Node: "r2", Epoch: 2})
		_ = s.ReportApplied(c, cluster.Applied{Node: "r3", Epoch: 0}) // not yet
	}()
	wctx, cancel := context.WithTimeout(c, 2*time.Second)
	defer cancel()
	acks, miss, err := s.WaitApplied(wctx, 1, []string{"r1", "r2", "r3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 2 || acks[0].Node != "r1" || acks[1].Node != "r2" || acks[1].After < 150*time.Millisecond {
		t.Errorf("acknowledgements %+v, want r1 at once and r2 after about 200ms", acks)
	}
	if len(miss) != 1 || miss[0] != "r3" {
		t.Errorf("missing %v, want [r3]", miss)
	}
}

// TestRegistrationComesBack: a lease lost under a live node (revoked here, as an
// expiry during a long etcd outage would) is granted again and the key put back.
func TestRegistrationComesBack(t *testing.T) {
	s, cli := clustertest.Store(t)
	c := ctx(t)
	r, err := s.Register(c, cluster.NodeInfo{Name: "r1"}, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(c)
	lease := r.Lease()
	if _, err := cli.Revoke(c, lease); err != nil {
		t.Fatal(err)
	}
	if ns, _ := s.Nodes(c); len(ns) != 0 {
		t.Fatalf("after the revoke: %d nodes registered", len(ns))
	}
	testutil.Eventually(t, "registered again", func() bool {
		ns, err := s.Nodes(c)
		return err == nil && len(ns) == 1 && r.Registered()
	})
	if r.Lease() == lease {
		t.Error("registered again under the revoked lease")
	}
}
