package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestLab runs `lab up` as a user would (the node binary found beside lab): the lab
// comes up with every node holding the feeder's table, refuses a second lab, forwards
// the traffic generator's datagrams to the sink, answers ctl status through its etcd
// (which ctl finds by itself), and `lab down` leaves nothing behind: no namespaces,
// pins, processes or files.
func TestLab(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	testutil.Need(t, testutil.Have("nsenter"), "needs nsenter (util-linux)")
	build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node") // beside lab
	bins := map[string]string{"lab": build(t, "github.com/fibfleet/fibfleet/cmd/lab", "lab"), "ctl": build(t, "github.com/fibfleet/fibfleet/cmd/ctl", "ctl")}
	// Both find the lab's directory here: ctl its etcd, with no --etcd.
	dir := filepath.Join(t.TempDir(), "lab")
	t.Setenv("FIBFLEET_LAB_DIR", dir)
	t.Setenv("FIBFLEET_ETCD", "")
	run := func(bin string, args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bins[bin], args...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
		}
		return code, out.String(), errOut.String()
	}
	var prefix string
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "lab.log")); err == nil {
				t.Logf("--- lab.log\n%s", b)
			}
		}
		run("lab", "down") // whatever happened above
	})
	code, out, errOut := run("lab", "up", "--table", "5000", "--rate", "500")
	if code != 0 {
		t.Fatalf("lab up: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "loading") || !strings.Contains(errOut, "ready") {
		t.Errorf("lab up showed no progress:\n%s", errOut)
	}
	if !strings.Contains(out, "is up: 3 nodes, each with 5001 routes") || !strings.Contains(out, bins["ctl"]+" status") || !strings.Contains(out, bins["lab"]+" down") {
		t.Errorf("lab up's report does not say what runs and how to look at it (ctl beside lab) and remove it:\n%s", out)
	}
	if code, _, errOut := run("lab", "up"); code != 1 || !strings.Contains(errOut, "a lab is running") {
		t.Errorf("a second lab up: exit %d, %s; want a refusal", code, errOut)
	}
	if code, _, errOut := run("lab", "up", "--nodes", "1"); code != 2 || !strings.Contains(errOut, "--nodes 1: use 2 to 50") {
		t.Errorf("lab up --nodes 1: exit %d, %s; want a usage error", code, errOut)
	}
	var st struct {
		Prefix, Phase, Etcd, Cluster string
		Table                        int
		Nodes                        []struct{ Name string }
		Traffic                      struct {
			Sent     uint64
			Received int
		}
	}
	err := lab.WaitFor(context.Background(), 30*time.Second, "the sink receiving the lab's traffic", func() (bool, error) {
		code, out, errOut := run("lab", "status", "-o", "json")
		if code != 0 {
			return false, nil
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return false, err
		}
		_ = errOut
		// At least a second's worth, nearly all of what was sent (the last datagrams
		// may be on their way).
		return st.Traffic.Received >= 500 && float64(st.Traffic.Received) >= 0.9*float64(st.Traffic.Sent), nil
	})
	if err != nil {
		t.Fatalf("%v: %+v", err, st)
	}
	prefix = st.Prefix
	if st.Phase != "ready" || st.Table != 5000 || len(st.Nodes) != 3 || prefix == "" {
		t.Fatalf("lab status: %+v", st)
	}
	code, out, errOut = run("ctl", "--cluster", st.Cluster, "status", "-o", "json")
	var rows []struct {
		Node      string
		Reachable bool
		Routes    [2]int
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 3 {
		t.Fatalf("ctl status on the lab: exit %d, %s %s", code, out, errOut)
	}
	for _, r := range rows {
		if !r.Reachable || r.Routes[0] != 5001 {
			t.Errorf("ctl status row %+v: want reachable with the table and n1's subnet", r)
		}
	}

	if code, out, errOut := run("lab", "down"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("lab down: exit %d, %s %s", code, out, errOut)
	}
	if b, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(b), prefix+"-") {
		t.Errorf("namespaces left:\n%s", b)
	}
	if pins, _ := filepath.Glob("/sys/fs/bpf/fibfleet/" + prefix + "-*"); len(pins) > 0 {
		t.Errorf("pins left: %v", pins)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the lab's directory is still there (%v)", err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && (strings.Contains(string(b), prefix+"-") || strings.Contains(string(b), dir)) {
			t.Errorf("process %s left: %q", filepath.Dir(p), b)
		}
	}
}
