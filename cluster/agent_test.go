package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/clustertest"
	"github.com/fibfleet/fibfleet/internal/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func startAgent(t *testing.T, s *cluster.Store, node string, def cache.Policy) (*cluster.Agent, *clustertest.Applier) {
	t.Helper()
	rec := &clustertest.Applier{}
	a, err := cluster.NewAgent(cluster.AgentConfig{Store: s, Node: node, Default: def, Applier: rec, ReportEvery: 100 * time.Millisecond, CheckEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(c); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, rec
}

// TestAgentFollowsFleet: the config's policy until etcd holds one, then the fleet's,
// then the node's override (another node's changes nothing), back to the fleet's when
// the override goes; a flush is applied once and acknowledged; each step reported in
// etcd with the revision of the policy applied.
func TestAgentFollowsFleet(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	def := cache.Policy{Mode: cache.Off}
	a, rec := startAgent(t, s, "r1", def)
	applied := func() cluster.Applied {
		st, err := s.AppliedStates(c)
		if err != nil {
			t.Fatal(err)
		}
		return st["r1"]
	}
	expect := func(what string, p cache.Policy, src cluster.Source, rev int64) {
		t.Helper()
		testutil.Eventually(t, what, func() bool {
			st := a.Status()
			ap := applied()
			return st.Policy == p && st.PolicySource == src && st.PolicyRevision == rev &&
				ap.Policy() == p && ap.PolicySource == string(src) && ap.PolicyRevision == rev && ap.Version == "test"
		})
	}
	expect("the config's policy", def, cluster.FromConfig, 0)

	fleet := cache.Policy{Mode: cache.Auto, MinEntries: 1024, MaxEntries: 8192, TargetHitRate: 0.95}
	frev, err := s.SetPolicy(c, "", fleet, cluster.NoRevision)
	if err != nil {
		t.Fatal(err)
	}
	expect("the fleet's policy", fleet, cluster.FromFleet, frev)

	own := cache.Policy{Mode: cache.Fixed, Entries: [2]int{512, 256}}
	orev, err := s.SetPolicy(c, "r1", own, cluster.NoRevision)
	if err != nil {
		t.Fatal(err)
	}
	expect("the node's override", own, cluster.FromNode, orev)
	if _, err := s.SetPolicy(c, "r2", cache.Policy{Mode: cache.Off}, cluster.NoRevision); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if st := a.Status(); st.Policy != own {
		t.Fatalf("another node's override changed r1's policy to %+v", st.Policy)
	}
	if err := s.DeletePolicy(c, "r1", orev); err != nil {
		t.Fatal(err)
	}
	expect("the fleet's policy after the override went", fleet, cluster.FromFleet, frev)

	e, err := s.Flush(c)
	if err != nil {
		t.Fatal(err)
	}
	acks, miss, err := s.WaitApplied(c, e, []string{"r1"})
	if err != nil || len(acks) != 1 || len(miss) != 0 {
		t.Fatalf("flush %d: acknowledged by %v, missing %v (%v)", e, acks, miss, err)
	}
	// A flush of this node alone: its dataplane runs at the fleet's epoch plus its
	// own; another node's changes nothing here.
	if _, err := s.FlushNode(c, "r2"); err != nil {
		t.Fatal(err)
	}
	ne, err := s.FlushNode(c, "r1")
	if err != nil {
		t.Fatal(err)
	}
	acks, miss, err = s.WaitAppliedFunc(c, []string{"r1"}, func(a cluster.Applied) bool { return a.NodeEpoch >= ne })
	if err != nil || len(acks) != 1 || len(miss) != 0 {
		t.Fatalf("node flush %d: acknowledged by %v, missing %v (%v)", ne, acks, miss, err)
	}
	epochs, policies := rec.Calls()
	if !slices.Equal(epochs, []uint32{0, 1, 2}) {
		t.Errorf("epochs applied %v, want [0 1 2] (the fleet's 1, then 1 + the node's 1)", epochs)
	}
	if want := []cache.Policy{def, fleet, own, fleet}; !slices.Equal(policies, want) {
		t.Errorf("policies applied %+v, want %+v (each once)", policies, want)
	}
	if st := a.Status(); st.Flushes != 2 || st.Epoch != 1 || st.NodeEpoch != 1 || !st.Connected {
		t.Errorf("status %+v: want 2 flushes, epoch 1, node epoch 1, connected", st)
	}
}

// TestAgentSurvivesEtcdRestart: with etcd stopped the agent keeps what it applied and
// says it is disconnected; when etcd is back it reads everything again and applies
// nothing (no flush, no policy), and the epoch's key is untouched; later flushes
// apply as before.
func TestAgentSurvivesEtcdRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := cluster.EmbeddedConfig{Dir: filepath.Join(dir, "data"), Name: "ffrestart", Listen: "unix://" + filepath.Join(dir, "etcd.sock")}
	e, err := cluster.StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := cluster.NewClient(cluster.EtcdConfig{Endpoints: []string{e.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := cluster.NewStore(cli, "lab")
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	fleet := cache.Policy{Mode: cache.Fixed, Entries: [2]int{1024, 0}}
	if _, err := s.SetPolicy(c, "", fleet, cluster.NoRevision); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(c); err != nil {
		t.Fatal(err)
	}
	a, rec := startAgent(t, s, "r1", cache.Policy{Mode: cache.Off})
	testutil.Eventually(t, "the fleet's epoch and policy applied", func() bool {
		st := a.Status()
		return st.Epoch == 1 && st.Policy == fleet
	})
	get := func() *clientv3.GetResponse {
		t.Helper()
		r, err := cli.Get(c, "/fibfleet/lab/epoch")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := get().Kvs[0].ModRevision
	resyncs := a.Status().Resyncs

	e.Close()
	testutil.Eventually(t, "the agent sees etcd gone", func() bool { return !a.Status().Connected })
	if st := a.Status(); st.Epoch != 1 || st.Policy != fleet {
		t.Fatalf("without etcd the agent dropped what it applied: %+v", st)
	}
	e, err = cluster.StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	testutil.Eventually(t, "the agent reconnected and read again", func() bool {
		st := a.Status()
		return st.Connected && st.Resyncs > resyncs
	})
	epochs, policies := rec.Calls()
	if !slices.Equal(epochs, []uint32{1}) || len(policies) != 2 {
		t.Fatalf("after etcd's restart: epochs applied %v, policies %+v; want [1] and the config's then the fleet's only", epochs, policies)
	}
	if after := get().Kvs[0].ModRevision; after != before {
		t.Errorf("the epoch key's revision moved from %d to %d", before, after)
	}
	if _, err := s.Flush(c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a flush after the restart applied", func() bool { return a.Status().Epoch == 2 })
}

func TestAgentRejectsBadConfig(t *testing.T) {
	s, _ := clustertest.Store(t)
	for _, tc := range []cluster.AgentConfig{
		{Store: s, Node: "r1", Default: cache.Policy{Mode: "sometimes"}, Applier: &clustertest.Applier{}},
		{Store: s, Node: "a/b", Default: cache.Policy{Mode: cache.Off}, Applier: &clustertest.Applier{}},
		{Store: s, Node: "r1", Default: cache.Policy{Mode: cache.Off}},
	} {
		if _, err := cluster.NewAgent(tc); err == nil {
			t.Errorf("NewAgent(%s) accepted a bad config", fmt.Sprint(tc.Node, " ", tc.Default.Mode))
		}
	}
}

// TestAgentLeavesTheNodesOwnDefault: a node that applied its config's policy itself
// (before etcd answered) gets no second application of it (auto's controller would
// start over), only the fleet's when there is one.
func TestAgentLeavesTheNodesOwnDefault(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	def := cache.Policy{Mode: cache.Auto, MinEntries: 1024, MaxEntries: 4096}
	rec := &clustertest.Applier{}
	a, err := cluster.NewAgent(cluster.AgentConfig{Store: s, Node: "r1", Default: def, DefaultApplied: true, Applier: rec, ReportEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(actx); close(done) }()
	defer func() { cancel(); <-done }()
	testutil.Eventually(t, "the config's policy reported", func() bool {
		st, err := s.AppliedStates(c)
		return err == nil && st["r1"].PolicySource == string(cluster.FromConfig) && st["r1"].Policy() == def
	})
	if _, policies := rec.Calls(); len(policies) != 0 {
		t.Fatalf("policies applied %+v, want none (the node applied its default)", policies)
	}
	fleet := cache.Policy{Mode: cache.Off}
	if _, err := s.SetPolicy(c, "", fleet, cluster.NoRevision); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the fleet's policy applied", func() bool {
		_, policies := rec.Calls()
		return slices.Equal(policies, []cache.Policy{fleet})
	})
}

// drainer records the drains an agent applies.
type drainer struct {
	mu    sync.Mutex
	calls []bool
}

func (d *drainer) ApplyDrain(drained bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, drained)
	return nil
}

func (d *drainer) Calls() []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// runAgent runs an agent of node cfg.Node until the test ends, with its cache off
// and quick reports and checks.
func runAgent(t *testing.T, cfg cluster.AgentConfig) {
	cfg.Default, cfg.Applier = cache.Policy{Mode: cache.Off}, &clustertest.Applier{}
	cfg.ReportEvery, cfg.CheckEvery = 100*time.Millisecond, 200*time.Millisecond
	a, err := cluster.NewAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(cx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestAgentDrain: a drain written for the node is applied once and reported, another
// node's changes nothing, an undrain puts it back; a node that starts while drained
// starts drained (maintenance outlasts a restart).
func TestAgentDrain(t *testing.T) {
	s, _ := clustertest.Store(t)
	c := ctx(t)
	start := func(d *drainer) { runAgent(t, cluster.AgentConfig{Store: s, Node: "r1", Drainer: d}) }
	reported := func(want bool) func() bool {
		return func() bool {
			st, err := s.AppliedStates(c)
			return err == nil && st["r1"].Drained == want && st["r1"].Node == "r1"
		}
	}
	d := &drainer{}
	start(d)
	testutil.Eventually(t, "r1 reported in service", reported(false))
	if err := s.Drain(c, "r2", true, "other"); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(c, "r1", true, "maintenance"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "r1 reported drained", reported(true))
	if got, err := s.Drained(c); err != nil || got["r1"] != "maintenance" || got["r2"] != "other" || len(got) != 2 {
		t.Errorf("drained nodes %v (%v)", got, err)
	}
	d2 := &drainer{}
	start(d2) // r1 starting again while drained (the first agent still runs: same key)
	testutil.Eventually(t, "a node starting while drained starts drained", func() bool { return slices.Equal(d2.Calls(), []bool{true}) })
	if err := s.Drain(c, "r1", false, ""); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "r1 reported back in service", reported(false))
	testutil.Eventually(t, "the undrain applied", func() bool { return slices.Equal(d.Calls(), []bool{true, false}) })
	if err := s.Drain(c, "bad name!", true, ""); err == nil {
		t.Error("a drain of an invalid node name was accepted")
	}
}
