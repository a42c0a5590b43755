package kernels

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testutil"
)

// vmPackages are the packages whose tests run on every kernel: they need BPF and
// bpffs only (no namespaces, no veth: the virtual machine has no ip command).
var vmPackages = []string{"dataplane"}

// TestKernelMatrix runs the dataplane's tests (program loads, BPF_PROG_TEST_RUN packet
// tests, the verifier budget) on this machine's kernel and, under qemu, on Debian 12's
// 6.1 and 6.12, and prints the verifier's counts per program and kernel.
func TestKernelMatrix(t *testing.T) {
	for _, tool := range []string{"qemu-system-x86_64", "cpio", "apt-get", "apt-cache", "dpkg-deb"} {
		testutil.Need(t, testutil.Have(tool), tool+" is missing (make kernels installs qemu-system-x86 and cpio)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	work := t.TempDir()
	tests := map[string]string{}
	for _, pkg := range vmPackages {
		tests[pkg] = filepath.Join(work, pkg+".test")
		goBuild(t, "test", "-c", "-o", tests[pkg], "./"+pkg)
	}
	init := filepath.Join(work, "init")
	goBuild(t, "build", "-o", init, "./internal/kernels/vminit")
	initrd := filepath.Join(work, "initrd.cpio")
	if err := Initramfs(ctx, initrd, init, tests, []string{"-test.v", "-test.count=1", "-test.timeout=10m"}); err != nil {
		t.Fatal(err)
	}

	cacheDir := os.Getenv("FIBFLEET_KERNEL_CACHE")
	if cacheDir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cacheDir = filepath.Join(c, "fibfleet", "kernels")
	}
	f := &Fetcher{Dir: cacheDir}
	images := map[string]string{}
	for _, k := range Debian12 {
		vmlinuz, pkg, err := f.Fetch(ctx, k)
		testutil.Need(t, err == nil, fmt.Sprintf("cannot fetch Debian's %s kernel: %v", k.Name, err))
		t.Logf("kernel %s: %s", k.Name, pkg)
		images[k.Name] = vmlinuz
	}

	var mu sync.Mutex
	counts := map[string]map[string]string{} // program -> kernel -> processed instructions
	record := func(kernel, console string) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range verifierLine.FindAllStringSubmatch(console, -1) {
			if counts[m[1]] == nil {
				counts[m[1]] = map[string]string{}
			}
			counts[m[1]][kernel] = m[2]
		}
	}
	kernels := []string{"host"}
	t.Run("kernels", func(t *testing.T) {
		t.Run("host", func(t *testing.T) {
			t.Parallel()
			testutil.Need(t, os.Geteuid() == 0, "needs root to run the dataplane's tests on this machine's kernel")
			for _, pkg := range vmPackages {
				cmd := exec.CommandContext(ctx, tests[pkg], "-test.v", "-test.count=1")
				cmd.Dir = filepath.Join("..", "..", pkg)
				out, err := cmd.CombinedOutput()
				record("host", string(out))
				if err != nil {
					t.Errorf("%s's tests fail on this machine's kernel: %v\n%s", pkg, err, failures(string(out)))
				}
			}
		})
		for _, k := range Debian12 {
			kernels = append(kernels, k.Name)
			t.Run(k.Name, func(t *testing.T) {
				t.Parallel()
				log := filepath.Join(work, "console-"+k.Name+".log")
				console, err := os.Create(log)
				if err != nil {
					t.Fatal(err)
				}
				defer console.Close()
				start := time.Now()
				bctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
				defer cancel()
				res, err := Boot(bctx, images[k.Name], initrd, 2048, console)
				out, _ := os.ReadFile(log)
				record(k.Name, string(out))
				if err != nil {
					t.Fatalf("%v\n%s", err, tail(string(out), 60))
				}
				t.Logf("booted %s and ran the tests in %v", res.Release, time.Since(start).Round(time.Second))
				if res.SetupError != "" {
					t.Fatalf("the virtual machine's init failed: %s\n%s", res.SetupError, tail(string(out), 60))
				}
				if !res.Done {
					t.Fatalf("the virtual machine stopped before its init was done\n%s", tail(string(out), 60))
				}
				// What a kernel lacks, as an operator would read it (TestFeatures).
				for _, l := range strings.Split(string(out), "\n") {
					if strings.Contains(l, "missing: [") {
						t.Logf("%s: %s", k.Name, strings.TrimSpace(l))
					}
				}
				if !strings.HasPrefix(res.Release, k.Name+".") {
					t.Errorf("booted %q, want a %s kernel", res.Release, k.Name)
				}
				for _, pkg := range vmPackages {
					if code, ok := res.Exit[pkg]; !ok || code != 0 {
						t.Errorf("%s's tests fail on %s (exit %d, ran %v)\n%s", pkg, res.Release, code, ok, failures(string(out)))
					}
				}
			})
		}
	})
	// The verifier's counts per program and kernel, for docs/BENCHMARKS.md.
	progs := make([]string, 0, len(counts))
	for p := range counts {
		progs = append(progs, p)
	}
	slices.Sort(progs)
	var tb strings.Builder
	fmt.Fprintf(&tb, "\n| program | %s |\n|---|%s\n", strings.Join(kernels, " | "), strings.Repeat("---|", len(kernels)))
	for _, p := range progs {
		row := []string{p}
		for _, k := range kernels {
			row = append(row, counts[p][k])
		}
		fmt.Fprintf(&tb, "| %s |\n", strings.Join(row, " | "))
	}
	t.Logf("processed instructions per program and kernel:%s", tb.String())
	if len(progs) == 0 && !t.Failed() {
		t.Error("no kernel reported the verifier's counts (TestVerifierBudget did not run)")
	}
}

var verifierLine = regexp.MustCompile(`verifier: (\S+) (\d+) \(budget`)

func goBuild(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the initramfs has no C library
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// failures keeps the lines of a test log that say what failed.
func failures(log string) string {
	var keep []string
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.Contains(l, "--- FAIL") || strings.Contains(l, "panic:") || strings.HasPrefix(strings.TrimSpace(l), "FAIL") {
			keep = append(keep, lines[max(0, i-15):i+1]...)
		}
	}
	if len(keep) == 0 {
		return tail(log, 40)
	}
	return strings.Join(keep, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
