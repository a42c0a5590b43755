package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
)

// TestUndeliverableEgress runs the node with a veth egress (r2) whose peer, sink2's
// end, has neither an XDP program nor GRO: the kernel drops every frame the program
// redirects there (and veth counts none of them in its own statistics). The node
// must say so when it starts, count the drops in /metrics beside its forwarded
// counter, and ctl top and ctl status must show them, while sink2 receives nothing. node -check
// probes the same kernel and interfaces without attaching, and names a missing
// interface in one line with its own exit status.
func TestUndeliverableEgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	nodeBin := build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	ctlBin := build(t, "github.com/fibfleet/fibfleet/cmd/ctl", "ctl")
	sk := startSkeleton(t, lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, BareSink2: true})
	r2 := sk.If("r2")

	// node -check, in the router's namespace: everything there (r2's peer is a
	// warning at start, not a missing feature); then a missing interface.
	conf := filepath.Join(dir, "node.yaml")
	out, err := sk.Router.Exec(nodeBin, "-check", "-config", conf)
	if err != nil || !strings.Contains(out, "everything the dataplane needs is there") {
		t.Errorf("node -check: %v\n%s", err, out)
	}
	missing := sk.If("zz")
	cmd := exec.Command("nsenter", "--net=/proc/"+fmt.Sprint(sk.NodePID)+"/ns/net", nodeBin, "-check", "-config", conf, "-interfaces", missing)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	wantLine := "fibfleet-node: interface " + missing + " does not exist in this network namespace: check the interfaces list in the configuration"
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(b), wantLine) {
		t.Errorf("node -check with interface %s: %v, want exit status 3 and %q:\n%s", missing, err, wantLine, b)
	}
	if lines := strings.Count(strings.TrimSpace(string(b)), "\n"); lines != 1 { // the config line, then the one line
		t.Errorf("node -check with a missing interface printed %d lines after the config's, want 1:\n%s", lines, b)
	}

	err = lab.WaitFor(ctx, 60*time.Second, "the route to 203.0.113.0/24 through sink2, resolved", func() (bool, error) {
		m, err := sk.Metrics()
		return err == nil && m[`fibfleet_fib_nexthops{state="resolved"}`] == lab.ResolvedNexthops, err
	})
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(sk.NodeLog)
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]string{}
	for _, l := range strings.Split(string(log), "\n") {
		for _, i := range []string{sk.If("r0"), sk.If("r1"), r2, sk.If("r3")} {
			if strings.Contains(l, "will be dropped by the kernel") && strings.Contains(l, "interface="+i+" ") {
				warned[i] = l
			}
		}
	}
	// r0's and r3's peers (src, upstream) run no XDP either: frames forwarded there
	// would be lost too, and the node says so; sink1's end runs an XDP program.
	if warned[r2] == "" {
		t.Errorf("no warning at start that %s cannot take redirected frames", r2)
	}
	if l := warned[sk.If("r1")]; l != "" {
		t.Errorf("warned about %s, whose peer runs XDP: %s", sk.If("r1"), l)
	}
	t.Logf("warning: %s", warned[r2])

	// A counter of this test's own namespace (the host's): it must see none of the
	// router namespace's drops, though the tracepoints fire for every namespace.
	hostMon, err := dataplane.OpenXmitMonitor()
	if err != nil {
		t.Fatal(err)
	}
	defer hostMon.Close()

	sink2, err := sk.Listen(sk.Sink2)
	if err != nil {
		t.Fatal(err)
	}
	// Traffic to sink2 for as long as the checks take.
	dst := netip.MustParseAddr("203.0.113.7")
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sctx.Err() == nil {
			if err := sk.Send(dst, 50); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); wg.Wait() })

	errMetric := `fibfleet_xdp_egress_frames_total{interface="` + r2 + `",result="dropped"}`
	var first map[string]float64
	err = lab.WaitFor(ctx, 20*time.Second, "the frames r2's driver dropped in /metrics", func() (bool, error) {
		var err error
		first, err = sk.Metrics()
		return err == nil && first[errMetric] >= 100, err
	})
	if err != nil {
		var xdp []string
		for k, v := range first {
			if strings.HasPrefix(k, "fibfleet_xdp_") && v != 0 {
				xdp = append(xdp, fmt.Sprintf("%s %v", k, v))
			}
		}
		t.Fatalf("%v: %s = %v; the node's XDP metrics:\n%s", err, errMetric, first[errMetric], strings.Join(xdp, "\n"))
	}
	forwarded := func(m map[string]float64) float64 {
		var n float64
		for k, v := range m {
			if strings.HasPrefix(k, "fibfleet_xdp_packets_total{") && strings.Contains(k, `action="redirect"`) {
				n += v
			}
		}
		return n
	}
	var later map[string]float64
	err = lab.WaitFor(ctx, 20*time.Second, "forwarded and dropped both rising", func() (bool, error) {
		var err error
		later, err = sk.Metrics()
		return err == nil && forwarded(later) > forwarded(first) && later[errMetric] > first[errMetric], err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forwarded %v -> %v, %s %v -> %v", forwarded(first), forwarded(later), errMetric, first[errMetric], later[errMetric])
	if later[errMetric] > forwarded(later) {
		t.Errorf("more frames dropped (%v) than forwarded (%v)", later[errMetric], forwarded(later))
	}
	if sent := later[`fibfleet_xdp_egress_frames_total{interface="`+r2+`",result="sent"}`]; sent != 0 {
		t.Errorf("%v frames counted sent through %s, whose peer takes none", sent, r2)
	}
	if hs, err := hostMon.Stats(); err != nil || len(hs) != 0 {
		t.Errorf("the host namespace's counter saw %v (%v), want nothing: another namespace's drops counted", hs, err)
	}
	if mode := later[`fibfleet_xdp_attached{driver="veth",interface="`+r2+`",mode="native"}`]; mode != 1 {
		t.Errorf("fibfleet_xdp_attached for %s, native, veth: %v, want 1", r2, mode)
	}
	if n := sink2.Count(dst); n != 0 {
		t.Errorf("sink2 received %d datagrams through a peer without XDP or GRO; the test's premise is wrong", n)
	}

	// ctl top and ctl status, in the router's namespace, through the node's etcd.
	etcd := "unix://" + filepath.Join(dir, "etcd", "etcd.sock")
	out, err = sk.Router.Exec(ctlBin, "--etcd", etcd, "top", "--interval", "500ms", "--count", "2", "-o", "json")
	if err != nil {
		t.Fatalf("ctl top: %v\n%s", err, out)
	}
	type topRow struct {
		Node      string  `json:"node"`
		Forwarded float64 `json:"forwarded"`
		TxDropped float64 `json:"tx_dropped"`
	}
	var rows []topRow
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r topRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("ctl top -o json: %v: %q", err, l)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 || rows[len(rows)-1].Node != sk.NodeName || rows[len(rows)-1].TxDropped <= 0 || rows[len(rows)-1].Forwarded <= 0 {
		t.Errorf("ctl top: %+v, want %s forwarding, with frames dropped per second", rows, sk.NodeName)
	}
	out, err = sk.Router.Exec(ctlBin, "--etcd", etcd, "top", "--interval", "500ms", "--count", "1")
	if err != nil || !strings.Contains(out, "TXDROP/s") {
		t.Errorf("ctl top's table has no TXDROP/s column: %v\n%s", err, out)
	}
	t.Logf("ctl top:\n%s", out)
	out, err = sk.Router.Exec(ctlBin, "--etcd", etcd, "status", "-o", "json")
	if err != nil {
		t.Fatalf("ctl status: %v\n%s", err, out)
	}
	var st []struct {
		Node      string `json:"node"`
		TxDropped uint64 `json:"tx_dropped"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st) != 1 || st[0].TxDropped < uint64(later[errMetric]) {
		t.Errorf("ctl status: %v %+v, want tx_dropped at least %v", err, st, later[errMetric])
	}
}
