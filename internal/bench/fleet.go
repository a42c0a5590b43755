package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/lab"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// benchNode is one in-process node of the flush benchmark: its own etcd client and
// agent, its own memberlist instance, and a BPF map that its applier writes the epoch
// to, as the node's dataplane does; it records when each epoch was applied.
type benchNode struct {
	name    string
	cli     *clientv3.Client
	agent   *cluster.Agent
	members *cluster.Members
	epoch   *ebpf.Map

	stop func()

	mu      sync.Mutex
	applied map[uint32]time.Time
}

func (n *benchNode) ApplyEpoch(e uint32) error {
	if err := n.epoch.Put(uint32(0), e); err != nil {
		return err
	}
	n.mu.Lock()
	n.applied[e] = time.Now()
	n.mu.Unlock()
	return nil
}

func (n *benchNode) ApplyPolicy(cache.Policy) error { return nil }
func (n *benchNode) Report(a *cluster.Applied)      { a.Version = "bench" }

func (n *benchNode) appliedAt(e uint32) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.applied[e]
	return t, ok
}

// FlushResult is a flush benchmark's measurements, one per flush.
type FlushResult struct {
	Nodes int
	// Applied is, per flush, from the flush's call (a read and a compare-and-swap
	// write to etcd) until the last node wrote the new epoch to its BPF map.
	Applied []time.Duration
	// Acked is, per flush, until the last node's report of it was read back from
	// etcd (what ctl cache flush --wait waits for).
	Acked []time.Duration
}

// Percentile returns the p-th percentile (0-100) of ds, nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// MeasureFlush runs nodes in-process nodes against the etcd at endpoints and flushes
// the fleet flushes times, one after the other, each waited for.
func MeasureFlush(ctx context.Context, endpoints []string, nodes, flushes int) (res FlushResult, err error) {
	res.Nodes = nodes
	var ns []*benchNode
	defer func() {
		for _, n := range ns {
			n.close()
		}
	}()
	clusterName := fmt.Sprintf("bench%d", time.Now().UnixNano())
	var seed string
	for i := 0; i < nodes; i++ {
		n, err := startBenchNode(ctx, endpoints, clusterName, fmt.Sprintf("b%02d", i), seed)
		if err != nil {
			return res, err
		}
		ns = append(ns, n)
		if seed == "" {
			seed = n.members.Addr()
		}
	}
	admin, err := cluster.NewClient(cluster.EtcdConfig{Endpoints: endpoints})
	if err != nil {
		return res, err
	}
	defer admin.Close()
	store, err := cluster.NewStore(admin, clusterName)
	if err != nil {
		return res, err
	}
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.name
	}
	// Every agent has read etcd and reported once before the first flush.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, miss, err := store.WaitApplied(wctx, 0, names)
	cancel()
	if err != nil || len(miss) > 0 {
		return res, fmt.Errorf("bench nodes not reporting: %v (%v)", miss, err)
	}
	for i := 0; i < flushes; i++ {
		start := time.Now()
		e, err := store.Flush(ctx)
		if err != nil {
			return res, err
		}
		waitStart := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		acks, miss, err := store.WaitApplied(wctx, e, names)
		cancel()
		if err != nil || len(miss) > 0 {
			return res, fmt.Errorf("flush %d not acknowledged by %v (%v)", e, miss, err)
		}
		var last time.Time
		for _, n := range ns {
			t, ok := n.appliedAt(e)
			if !ok {
				return res, fmt.Errorf("node %s acknowledged epoch %d without applying it", n.name, e)
			}
			if t.After(last) {
				last = t
			}
		}
		res.Applied = append(res.Applied, last.Sub(start))
		res.Acked = append(res.Acked, waitStart.Sub(start)+acks[len(acks)-1].After)
	}
	return res, nil
}

func startBenchNode(ctx context.Context, endpoints []string, clusterName, name, seed string) (*benchNode, error) {
	n := &benchNode{name: name, applied: map[uint32]time.Time{}}
	var err error
	if n.epoch, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("a BPF map for the epoch (root needed): %w", err)
	}
	if n.members, err = cluster.StartMembers(cluster.MembersConfig{Name: name, BindAddress: "127.0.0.1:0", Meta: cluster.Meta{Version: "bench"},
		Logger: quietLogger()}); err != nil {
		n.close()
		return nil, err
	}
	if seed != "" {
		if _, err := n.members.Join([]string{seed}); err != nil {
			n.close()
			return nil, err
		}
	}
	if n.cli, err = cluster.NewClient(cluster.EtcdConfig{Endpoints: endpoints}); err != nil {
		n.close()
		return nil, err
	}
	store, err := cluster.NewStore(n.cli, clusterName)
	if err != nil {
		n.close()
		return nil, err
	}
	if n.agent, err = cluster.NewAgent(cluster.AgentConfig{Store: store, Node: name, Default: cache.Policy{Mode: cache.Off}, Applier: n,
		Logger: quietLogger(), ReportEvery: time.Hour}); err != nil {
		n.close()
		return nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { n.agent.Run(actx); close(done) }()
	n.stop = func() { cancel(); <-done }
	return n, nil
}

func (n *benchNode) close() {
	if n.stop != nil {
		n.stop()
	}
	if n.cli != nil {
		n.cli.Close()
	}
	if n.members != nil {
		_ = n.members.Shutdown()
	}
	if n.epoch != nil {
		n.epoch.Close()
	}
}

// MeasureDetection starts members in-process gossip members (loopback) with a
// profile, crashes one (no leave) and measures until every other member marks it
// dead; crashes times, with a fresh fleet each time.
func MeasureDetection(profile string, members, crashes int) ([]time.Duration, error) {
	if members < 2 {
		return nil, errors.New("bench: failure detection needs at least 2 members")
	}
	var out []time.Duration
	for c := 0; c < crashes; c++ {
		d, err := detectOnce(profile, members, c)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

func detectOnce(profile string, members, round int) (time.Duration, error) {
	var ms []*cluster.Members
	defer func() {
		for _, m := range ms {
			_ = m.Shutdown()
		}
	}()
	for i := 0; i < members; i++ {
		m, err := cluster.StartMembers(cluster.MembersConfig{Name: fmt.Sprintf("d%d-%d", round, i), BindAddress: "127.0.0.1:0", Profile: profile, Logger: quietLogger()})
		if err != nil {
			return 0, err
		}
		ms = append(ms, m)
		if i > 0 {
			if _, err := m.Join([]string{ms[0].Addr()}); err != nil {
				return 0, err
			}
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		all := true
		for _, m := range ms {
			all = all && m.Alive() == members
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.New("bench: gossip members did not all see each other within 30 s")
		}
	}
	// A few probe rounds with everyone alive, as in a running fleet.
	time.Sleep(2 * time.Second)
	victim, name := ms[len(ms)-1], fmt.Sprintf("d%d-%d", round, members-1)
	start := time.Now()
	if err := victim.Shutdown(); err != nil {
		return 0, err
	}
	ms = ms[:len(ms)-1]
	defer func() { _ = victim.Shutdown() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		all := true
		for _, m := range ms {
			seen := false
			for _, v := range m.View() {
				seen = seen || v.Name == name && v.State == cluster.Dead
			}
			all = all && seen
		}
		if all {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bench: %s not marked dead by every member within 60 s", name)
		}
	}
}

// quietLogger keeps in-process benchmark nodes' logs to warnings and errors.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// KillResult is, per SIGKILL of a real node, how long the slower of the others took
// to mark it dead, and to remove its iBGP session.
type KillResult struct {
	Dead, Unpeered []time.Duration
}

// MeasureKill runs a fleet of three real node processes (the lab's, with a 3-member
// etcd of processes and BIRD), then kills n3 with SIGKILL kills times, restarting it
// and waiting for the fleet to form again in between. As root.
func MeasureKill(nodeBin, etcdBin, dir string, kills int) (res KillResult, err error) {
	fl, err := lab.StartFleet(lab.FleetConfig{NodeBinary: nodeBin, EtcdBinary: etcdBin, Dir: dir})
	if fl != nil {
		defer func() { err = errors.Join(err, fl.Close()) }()
	}
	if err != nil {
		return res, err
	}
	// BIRD's routes and the subnets n1 announces (lab.FleetRoutes: 3 IPv4, 2 IPv6).
	const routes4, routes6 = 4, 3
	if err := fl.WaitFormed(2*time.Minute, routes4, routes6); err != nil {
		return res, err
	}
	n3 := fl.Nodes[2]
	for k := 0; k < kills; k++ {
		dead, unpeered, err := fl.KillWatch(n3, 30*time.Second)
		if err != nil {
			return res, fmt.Errorf("kill %d: %w", k+1, err)
		}
		res.Dead = append(res.Dead, max(dead[fl.Nodes[0].Name], dead[fl.Nodes[1].Name]))
		res.Unpeered = append(res.Unpeered, max(unpeered[fl.Nodes[0].Name], unpeered[fl.Nodes[1].Name]))
		if err := fl.StartNode(n3); err != nil {
			return res, err
		}
		if err := fl.WaitFormed(2*time.Minute, routes4, routes6); err != nil {
			return res, fmt.Errorf("after kill %d: %w", k+1, err)
		}
	}
	return res, nil
}
