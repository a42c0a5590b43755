package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// TestFullTableBGP has BIRD 2 send the whole real 2026 table to the node over eBGP and
// checks that every prefix is in the XDP dataplane (looked up through the node's pinned
// maps by the BPF probe), timing Established -> FIB complete, the kernel sync behind
// it, and the node's peak RSS.
func TestFullTableBGP(t *testing.T) {
	need(t, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	need(t, have("bird") && have("birdc"), "needs BIRD 2 (make test installs bird2)")
	ctx := context.Background()
	all, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	var routes []table.Route
	for _, r := range all {
		overlaps := false
		for _, s := range lab.AllRoutes() {
			overlaps = overlaps || r.Prefix.Overlaps(s.Prefix)
		}
		if !overlaps {
			routes = append(routes, r)
		}
	}
	total := len(routes) + len(lab.AllRoutes())
	dir := t.TempDir()
	sk, err := lab.StartSkeleton(lab.SkeletonConfig{NodeBinary: build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node"), Dir: dir, Table: routes})
	if sk != nil {
		t.Cleanup(func() {
			if t.Failed() {
				for _, f := range []string{sk.NodeLog, sk.BirdLog} {
					if b, err := os.ReadFile(f); err == nil {
						t.Logf("--- %s (last 3000 bytes)\n%s", f, b[max(0, len(b)-3000):])
					}
				}
			}
			sk.Close()
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	metric := func(m map[string]float64, k string) float64 { return m[k] }
	// BIRD parses a 40 MB config first; fail early if it is not up within 2 minutes.
	if err := lab.WaitFor(ctx, 2*time.Minute, "BIRD to start", func() (bool, error) {
		_, err := sk.Birdc("show", "status")
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	var established, complete time.Time
	start := time.Now()
	err = lab.WaitFor(ctx, 5*time.Minute, fmt.Sprintf("%d routes in the FIB", total), func() (bool, error) {
		m, err := sk.Metrics()
		if err != nil {
			return false, err
		}
		if established.IsZero() && metric(m, `fibfleet_bgp_sessions{state="established"}`) == 1 {
			established = time.Now()
		}
		if !established.IsZero() && metric(m, `fibfleet_fib_routes{family="ipv4"}`) == float64(total) {
			complete = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BGP Established %v after the node started; FIB complete (%d routes) %v after Established",
		established.Sub(start).Round(time.Millisecond), total, complete.Sub(established).Round(time.Millisecond))

	probe, err := dataplane.NewPinnedProbe("", sk.NodeName, len(routes)+1)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.1")} // via 10.11.1.2, like the table
	for _, r := range routes {
		b := r.Prefix.Addr().As4()
		x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		x |= rng.Uint32() & uint32(uint64(1)<<(32-r.Prefix.Bits())-1)
		addrs = append(addrs, addrOf(x))
	}
	out := make([]uint32, len(addrs))
	if _, err := probe.Lookup(dataplane.MechFIB4, addrs, out); err != nil {
		t.Fatal(err)
	}
	if out[0] == 0 {
		t.Fatal("198.51.100.1 has no route in the dataplane")
	}
	bad := 0
	for i, id := range out {
		if id != out[0] {
			if bad++; bad <= 5 {
				t.Errorf("%s: dataplane answers %#x, want nexthop %d (10.11.1.2)", addrs[i], id, out[0])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d table prefixes wrong in the dataplane", bad, len(routes))
	}
	t.Logf("every one of the %d table prefixes answers nexthop %d in the dataplane", len(routes), out[0])

	if err := lab.WaitFor(ctx, 5*time.Minute, "kernel sync", func() (bool, error) {
		m, err := sk.Metrics()
		return err == nil && m[`fibfleet_fib_kernel_sync_pending`] == 0 && m[`fibfleet_fib_kernel_sync_routes_total{op="installed"}`] >= float64(total), err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel sync complete %v after Established", time.Since(established).Round(time.Millisecond))
	t.Logf("node peak RSS: %s", peakRSS(sk.NodePID))

	// The baseline in the same run: BIRD 2 receiving the same table from the same
	// upstream and installing it into its kernel table.
	if _, err := sk.Birdc("enable", "baseline"); err != nil {
		t.Fatal(err)
	}
	routesRE := regexp.MustCompile(`Routes:\s+(\d+) imported(?:, (\d+) exported)?`)
	count := func(proto string, exported bool) int {
		out, err := run("birdc", "-s", sk.BirdRxSock, "show", "protocols", "all", proto)
		if err != nil {
			return -1
		}
		m := routesRE.FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		v := m[1]
		if exported {
			v = m[2]
		}
		n, _ := strconv.Atoi(v)
		return n
	}
	var rxEst, rxBGP time.Time
	err = lab.WaitFor(ctx, 5*time.Minute, "BIRD to load the table into its kernel table", func() (bool, error) {
		out, err := run("birdc", "-s", sk.BirdRxSock, "show", "protocols", "upstream")
		if err != nil {
			return false, err
		}
		if rxEst.IsZero() && strings.Contains(out, "Established") {
			rxEst = time.Now()
		}
		if !rxEst.IsZero() && rxBGP.IsZero() && count("upstream", false) >= len(routes) {
			rxBGP = time.Now()
		}
		return !rxBGP.IsZero() && count("kfib", true) >= len(routes), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rxKernel := time.Now()
	t.Logf("baseline BIRD 2: all %d routes imported %v after Established, in its kernel table %v after; peak RSS %s",
		len(routes), rxBGP.Sub(rxEst).Round(time.Millisecond), rxKernel.Sub(rxEst).Round(time.Millisecond), peakRSS(sk.BirdRxPID))
	t.Logf("fibfleet FIB complete / BIRD kernel complete = %.2fx", complete.Sub(established).Seconds()/rxKernel.Sub(rxEst).Seconds())
}

func peakRSS(pid int) string {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, "VmHWM") {
			return strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	return "unknown"
}

func run(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return string(out), err
}
