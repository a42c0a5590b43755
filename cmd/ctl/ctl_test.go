package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/clustertest"
	"github.com/fibfleet/fibfleet/internal/testutil"
	"gopkg.in/yaml.v3"
)

// fleet starts a real (embedded) etcd with two nodes n1 and n2 on it, each registered
// and running an agent, and returns the etcd endpoint, a store and the nodes.
func fleet(t *testing.T) (string, *cluster.Store, map[string]*clustertest.Applier) {
	t.Helper()
	endpoint, _ := clustertest.Etcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var store *cluster.Store
	nodes := map[string]*clustertest.Applier{}
	for _, name := range []string{"n1", "n2"} {
		cli, err := cluster.NewClient(cluster.EtcdConfig{Endpoints: []string{endpoint}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		s, err := cluster.NewStore(cli, "lab")
		if err != nil {
			t.Fatal(err)
		}
		store = s
		n := &clustertest.Applier{}
		nodes[name] = n
		a, err := cluster.NewAgent(cluster.AgentConfig{Store: s, Node: name, Default: cache.Policy{Mode: cache.Auto, MinEntries: 1024, MaxEntries: 65536},
			Applier: n, ReportEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); a.Run(ctx) }()
		reg, err := s.Register(ctx, cluster.NodeInfo{Name: name, Version: "test"}, 5*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Close(context.Background()) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := store.AppliedStates(ctx)
		if err == nil && len(st) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes did not report: %v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return endpoint, store, nodes
}

// ctl runs a command line and returns its exit status, standard output and error.
func ctl(endpoint string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := execute(append([]string{"--etcd", endpoint, "--cluster", "lab"}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, s)
	}
}

// TestCacheCommands: set (fleet, node, dry run, clear), get, flush --wait against a
// real etcd and two nodes' agents, JSON and YAML output checked field by field.
func TestCacheCommands(t *testing.T) {
	ep, store, nodes := fleet(t)
	ctx := context.Background()

	code, out, errOut := ctl(ep, "cache", "set", "--mode", "fixed", "--entries-v4", "512", "-o", "json")
	if code != 0 {
		t.Fatalf("cache set: exit %d: %s", code, errOut)
	}
	var set struct {
		Target   string
		Revision int64
		Policy   policyView
	}
	decodeJSON(t, out, &set)
	fixed := cache.Policy{Mode: cache.Fixed, Entries: [2]int{512, 0}}
	if set.Target != "fleet's policy" || set.Revision == 0 || set.Policy != view(fixed) {
		t.Fatalf("cache set printed %+v", set)
	}
	testutil.Eventually(t, "both nodes applied the fleet's policy", func() bool {
		p1, _ := nodes["n1"].Last()
		p2, _ := nodes["n2"].Last()
		return p1 == fixed && p2 == fixed
	})
	// Only the fields given change.
	if code, _, errOut := ctl(ep, "cache", "set", "--entries-v6", "256"); code != 0 {
		t.Fatalf("cache set --entries-v6: exit %d: %s", code, errOut)
	}
	fixed.Entries[1] = 256
	if v, err := store.StoredPolicy(ctx, ""); err != nil || v.Policy != fixed {
		t.Fatalf("fleet policy %+v (%v), want %+v", v.Policy, err, fixed)
	}

	// A dry run of an override for n1: n1 would change, n2 not; nothing written.
	testutil.Eventually(t, "both nodes reported the fleet's policy", func() bool {
		st, err := store.AppliedStates(ctx)
		return err == nil && st["n1"].Policy() == fixed && st["n2"].Policy() == fixed
	})
	rev0, _ := store.Revision(ctx)
	code, out, errOut = ctl(ep, "cache", "set", "--node", "n1", "--mode", "off", "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errOut)
	}
	var dry struct {
		DryRun bool `json:"dry_run"`
		Nodes  []dryRunRow
	}
	decodeJSON(t, out, &dry)
	if !dry.DryRun || len(dry.Nodes) != 2 {
		t.Fatalf("dry run printed %+v", dry)
	}
	for _, r := range dry.Nodes {
		wantChange := r.Node == "n1"
		if r.Changes != wantChange || r.NowFrom != "fleet" || wantChange && (r.After.Mode != "off" || r.From != "node") {
			t.Errorf("dry run for %s: %+v", r.Node, r)
		}
	}
	if rev, _ := store.Revision(ctx); rev != rev0 {
		t.Fatalf("a dry run moved etcd from revision %d to %d", rev0, rev)
	}

	if code, _, errOut := ctl(ep, "cache", "set", "--node", "n1", "--mode", "off"); code != 0 {
		t.Fatalf("override: exit %d: %s", code, errOut)
	}
	testutil.Eventually(t, "n1 applied its override, n2 still the fleet's", func() bool {
		p1, _ := nodes["n1"].Last()
		p2, _ := nodes["n2"].Last()
		return p1.Mode == cache.Off && p2 == fixed
	})
	code, out, _ = ctl(ep, "cache", "get", "-o", "yaml")
	var got struct {
		Fleet     policyView
		Overrides map[string]struct{ Policy policyView }
		Nodes     []struct {
			Node, Source string
			Policy       policyView
		}
	}
	// YAML carries JSON's field names: decode it, then read it as JSON.
	var y any
	if err := yaml.Unmarshal([]byte(out), &y); code != 0 || err != nil {
		t.Fatalf("cache get -o yaml: exit %d, %v:\n%s", code, err, out)
	}
	b, _ := json.Marshal(y)
	decodeJSON(t, string(b), &got)
	if got.Fleet != view(fixed) || got.Overrides["n1"].Policy.Mode != "off" || len(got.Nodes) != 2 {
		t.Fatalf("cache get: %+v", got)
	}
	testutil.Eventually(t, "the applied states report the override", func() bool {
		_, out, _ := ctl(ep, "cache", "get", "--node", "n1", "-o", "json")
		var g cacheGet
		return json.Unmarshal([]byte(out), &g) == nil && len(g.Nodes) == 1 && g.Nodes[0].Source == "node" && g.Nodes[0].Policy.Mode == "off"
	})
	if code, _, errOut := ctl(ep, "cache", "set", "--node", "n1", "--clear"); code != 0 {
		t.Fatalf("clear: exit %d: %s", code, errOut)
	}
	testutil.Eventually(t, "n1 back on the fleet's policy", func() bool { p, _ := nodes["n1"].Last(); return p == fixed })

	code, out, errOut = ctl(ep, "cache", "flush", "--wait", "-o", "json")
	if code != 0 {
		t.Fatalf("flush --wait: exit %d: %s", code, errOut)
	}
	var fl flushResult
	decodeJSON(t, out, &fl)
	if fl.Epoch != 1 || !fl.Waited || len(fl.Applied) != 2 || len(fl.Missing) != 0 {
		t.Fatalf("flush --wait printed %+v", fl)
	}
	code, out, errOut = ctl(ep, "cache", "flush", "--node", "n2", "--wait", "-o", "json")
	if code != 0 {
		t.Fatalf("flush --node --wait: exit %d: %s", code, errOut)
	}
	decodeJSON(t, out, &fl)
	if fl.Epoch != 1 || fl.Node != "n2" || len(fl.Applied) != 1 || fl.Applied[0].Node != "n2" {
		t.Fatalf("flush --node n2 printed %+v", fl)
	}
	if _, e1 := nodes["n1"].Last(); e1 != 1 {
		t.Errorf("n1's dataplane epoch %d, want 1 (the fleet's only)", e1)
	}
	if _, e2 := nodes["n2"].Last(); e2 != 2 {
		t.Errorf("n2's dataplane epoch %d, want 2 (the fleet's 1 and its own 1)", e2)
	}

	// A registered node that never applies: --wait names it and fails.
	reg, err := store.Register(ctx, cluster.NodeInfo{Name: "n3"}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	code, out, errOut = ctl(ep, "--timeout", "1s", "cache", "flush", "--wait", "-o", "json")
	decodeJSON(t, out, &fl)
	if code != exitFailed || len(fl.Missing) != 1 || fl.Missing[0] != "n3" || !strings.Contains(errOut, "did not apply epoch 2") {
		t.Fatalf("flush --wait with a silent node: exit %d, %+v, %s", code, fl, errOut)
	}
}

// TestBadCommandLines: each wrong command line exits non-zero, says what is wrong,
// and leaves etcd as it was (its revision unchanged).
func TestBadCommandLines(t *testing.T) {
	ep, store, _ := fleet(t)
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cache", "set", "--mode", "sometimes"}, 2, `--mode "sometimes": use off, fixed or auto`},
		{[]string{"cache", "set", "--mode", "fixed", "--entries-v4", "1000"}, 2, "cache.entries_v4 1000: use a power of two"},
		{[]string{"cache", "set", "--mode", "fixed", "--entries-v4", "1048576"}, 2, "from 4 to 262144"},
		{[]string{"cache", "set", "--mode", "auto", "--min", "4096", "--max", "1024"}, 2, "cache.min_entries 4096 is above cache.max_entries 1024"},
		{[]string{"cache", "set", "--mode", "auto", "--min", "1024", "--max", "4096", "--target-hit-rate", "1.5"}, 2, "cache.target_hit_rate 1.5"},
		{[]string{"cache", "set", "--max", "4096"}, 2, `cache.mode "": use off, fixed or auto`},
		{[]string{"cache", "set", "--node", "ghost", "--mode", "off"}, 2, `--node "ghost": no such node in fleet "lab" (known: n1, n2)`},
		{[]string{"cache", "set"}, 2, "give a field to change"},
		{[]string{"cache", "set", "--clear", "--mode", "off"}, 2, "--clear removes the policy: it takes no --mode"},
		{[]string{"cache", "set", "--clear"}, 2, "there is no fleet's policy to clear"},
		{[]string{"cache", "set", "--entries-v4", "many"}, 2, `invalid argument "many"`},
		{[]string{"cache", "get", "--node", "ghost"}, 2, `no such node`},
		{[]string{"cache", "flush", "--node", "ghost"}, 2, `no such node`},
		{[]string{"cache", "flush", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"lookup", "300.1.1.1"}, 2, `"300.1.1.1" is not an IP address`},
		{[]string{"lookup", "fe80::1%eth0"}, 2, "is not an IP address"},
		{[]string{"lookup"}, 2, "give an IP address"},
		{[]string{"lookup", "1.1.1.1", "2.2.2.2"}, 2, "not 2 arguments"},
		{[]string{"lookup", "1.1.1.1", "--node", "ghost"}, 2, `no node of that name is registered`},
		{[]string{"lookup", "1.1.1.1", "--flow", "tcp:1:2"}, 2, "--flow and --from go together"},
		{[]string{"lookup", "1.1.1.1", "--flow", "tcp:1", "--from", "192.0.2.1"}, 2, "write proto:sport:dport"},
		{[]string{"lookup", "1.1.1.1", "--flow", "tcp:1:70000", "--from", "192.0.2.1"}, 2, `dport "70000" is not a number from 0 to 65535`},
		{[]string{"lookup", "1.1.1.1", "--flow", "sctp:1:2", "--from", "192.0.2.1"}, 2, `proto "sctp" is not a number`},
		{[]string{"lookup", "1.1.1.1", "--flow", "udp:1:2", "--from", "2001:db8::1"}, 2, "of the destination's family"},
		{[]string{"-o", "xml", "status"}, 2, `-o "xml": use table, json or yaml`},
		{[]string{"--timeout", "0s", "status"}, 2, "--timeout 0s: use a positive duration"},
		{[]string{"--cluster", "a/b", "status"}, 2, "--cluster"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"top", "--interval", "1ms"}, 2, "--interval 1ms: use at least 100ms"},
		{[]string{"blackhole", "add", "198.51.100.7/24"}, 2, "has host bits set: write 198.51.100.0/24"},
		{[]string{"blackhole", "add", "0.0.0.0/0"}, 2, "shorter than /8"},
		{[]string{"blackhole", "add", "example.com"}, 2, "give an address (198.51.100.7) or a prefix"},
		{[]string{"blackhole", "add", "198.51.100.7", "--until", "yesterday"}, 2, `--until "yesterday": give a duration`},
		{[]string{"blackhole", "add", "198.51.100.7", "--until", "-5m"}, 2, "give a positive duration"},
		{[]string{"blackhole", "add", "198.51.100.7", "--until", "2001-01-01T00:00:00Z"}, 1, "that is in the past"},
		{[]string{"blackhole", "del", "198.51.100.7"}, 1, "no blackhole of 198.51.100.7/32"},
		{[]string{"blackhole", "list", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--etcd", "10.0.0.1:2379", "status"}, 2, "write a URL starting with http://"},
		{[]string{"--etcd", "http://10.0.0.1:2379", "status"}, 2, `--etcd "http://10.0.0.1:2379" is plain HTTP off this host: whoever reaches it can change the fleet's policy, drains and blackholes without credentials; use https:// with --etcd-ca, --etcd-cert and --etcd-key, or give --etcd-insecure`},
		// Said insecure, it is only a server that does not answer.
		{[]string{"--etcd", "http://192.0.2.1:2379", "--etcd-insecure", "--timeout", "1s", "status"}, 1, "etcd does not answer"},
		{[]string{"--etcd", "http://127.0.0.1:1", "--timeout", "2s", "cache", "set", "--mode", "off"}, 1, "etcd does not answer"},
	} {
		before, err := store.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		args := append([]string{"--cluster", "lab"}, tc.args...)
		if !slices.Contains(tc.args, "--etcd") {
			args = append([]string{"--etcd", ep}, args...)
		}
		code := execute(args, strings.NewReader(""), &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("ctl %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, errOut.String(), tc.code, tc.want)
		}
		if after, err := store.Revision(ctx); err != nil || after != before {
			t.Errorf("ctl %s: etcd moved from revision %d to %d (%v)", strings.Join(tc.args, " "), before, after, err)
		}
	}
}
