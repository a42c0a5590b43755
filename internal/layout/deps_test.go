package layout

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/fibfleet/fibfleet/"

// goCmd runs the go command at the module's root and returns its output.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go %s: %s", strings.Join(args, " "), msg)
	}
	return string(out)
}

// TestProductDeps: the product binaries (node, ctl, kubesetup) link no study or test
// code, the packages that reason about the fleet without touching BPF (cluster,
// cache, ctl, kubesetup) link neither cilium/ebpf nor the BPF objects, and only the
// chart's hook jobs (kubesetup) link the Kubernetes client.
func TestProductDeps(t *testing.T) {
	for _, c := range []struct {
		pkgs      []string
		forbidden []string
	}{
		{[]string{"./cmd/node", "./cmd/ctl", "./cmd/kubesetup"}, []string{module + "internal/lab", module + "internal/bench", module + "internal/table",
			module + "internal/testutil", module + "internal/clustertest", module + "internal/verifier", module + "internal/e2e"}},
		{[]string{"./cluster", "./cache", "./cmd/ctl", "./cmd/kubesetup"}, []string{"github.com/cilium/ebpf", module + "dataplane"}},
		{[]string{"./cmd/node", "./cmd/ctl"}, []string{"k8s.io/client-go"}},
	} {
		for _, pkg := range c.pkgs {
			deps := strings.Fields(goCmd(t, "list", "-deps", pkg))
			if len(deps) < 5 {
				t.Fatalf("go list -deps %s listed %d packages: %v", pkg, len(deps), deps)
			}
			for _, d := range deps {
				for _, f := range c.forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s links %s", pkg, d)
					}
				}
			}
		}
	}
}

// TestNodeSymbols: the node binary embeds no study program (the traffic generator,
// the IPv6 trie candidates), and does embed the programs it runs.
func TestNodeSymbols(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "node")
	goCmd(t, "build", "-o", bin, "./cmd/node")
	syms := goCmd(t, "tool", "nm", bin)
	for _, bad := range []string{"pktgen", "Pktgen", "v6cand", "V6cand", "bench.", "lab."} {
		if strings.Contains(syms, bad) {
			t.Errorf("the node binary has %s symbols", bad)
		}
	}
	for _, good := range []string{"loadXdpfwd", "loadFib6probe", "loadXmitmon"} {
		if !strings.Contains(syms, good) {
			t.Errorf("the node binary has no %s: is the check looking at the right binary?", good)
		}
	}
}
