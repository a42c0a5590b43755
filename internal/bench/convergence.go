package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// Convergence is one full-table run: the node, then BIRD 2 on the same table from the
// same upstream (after the node is done, so they never share the cores).
type Convergence struct {
	Routes int
	// NodeBGP, NodeFIB and NodeKernel: from Established to the peer's End-of-RIB in
	// GoBGP, to the XDP dataplane holding every route before it (as the node measures
	// them), and to every route in the kernel table (kernel sync, polled).
	NodeBGP, NodeFIB, NodeKernel time.Duration
	// NodeLag is how long the dataplane trailed GoBGP: NodeFIB - NodeBGP.
	NodeLag time.Duration
	NodeRSS string
	// BirdImport and BirdKernel: from Established to every route imported, and
	// exported to its kernel table.
	BirdImport, BirdKernel time.Duration
	BirdRSS                string
}

// Ratio is the node's FIB time over BIRD's kernel time: the convergence target.
func (c Convergence) Ratio() float64 { return c.NodeFIB.Seconds() / c.BirdKernel.Seconds() }

// LabTable is a table without the prefixes that overlap the lab's own routes.
func LabTable(all []table.Route) []table.Route {
	var out []table.Route
	for _, r := range all {
		overlaps := false
		for _, s := range append(lab.AllRoutes(), lab.ExtendedNexthopRoute) {
			overlaps = overlaps || r.Prefix.Overlaps(s.Prefix)
		}
		if !overlaps {
			out = append(out, r)
		}
	}
	return out
}

// MeasureConvergence builds the skeleton lab with BIRD announcing routes, times the
// node, calls check (if any) while the lab is up, then times the BIRD baseline. The
// lab is removed before it returns; an error carries the tail of the node's log.
func MeasureConvergence(ctx context.Context, nodeBin, dir string, routes []table.Route, check func(*lab.Skeleton) error) (c Convergence, err error) {
	c.Routes = len(routes)
	sk, err := lab.StartSkeleton(lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, Table: routes})
	if sk != nil {
		defer func() {
			if err != nil {
				if b, rerr := os.ReadFile(sk.NodeLog); rerr == nil {
					err = fmt.Errorf("%w\n--- node log (tail)\n%s", err, b[max(0, len(b)-2000):])
				}
			}
			err = errors.Join(err, sk.Close()) // fails if the node did not shut down cleanly
		}()
	}
	if err != nil {
		return c, err
	}
	// BIRD parses a 40 MB config first.
	if err := lab.WaitFor(ctx, 2*time.Minute, "BIRD to start", func() (bool, error) {
		_, err := sk.Birdc("show", "status")
		return err == nil, err
	}); err != nil {
		return c, err
	}
	total := float64(len(routes) + lab.Routes4())
	var established, fibDone time.Time
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	err = lab.WaitFor(ctx, 5*time.Minute, "the node's FIB and kernel sync", func() (bool, error) {
		m, err := sk.Metrics()
		if err != nil {
			return false, err
		}
		now := time.Now()
		// At least the IPv4 session (the lab's IPv6 session may come up first or not).
		if established.IsZero() && m[`fibfleet_bgp_sessions{state="established"}`] >= 1 {
			established = now
		}
		const peer = `{neighbor="` + lab.UpstreamAddr + `"`
		if !established.IsZero() && fibDone.IsZero() && m[`fibfleet_bgp_load_complete`+peer+`}`] == 1 {
			if got := m[`fibfleet_fib_routes{family="ipv4"}`]; got != total {
				return false, fmt.Errorf("the node reports the dump complete with %v of %v routes in the FIB", got, total)
			}
			fibDone = now
			c.NodeBGP = secs(m[`fibfleet_bgp_load_duration_seconds`+peer+`,stage="bgp"}`])
			c.NodeFIB = secs(m[`fibfleet_bgp_load_duration_seconds`+peer+`,stage="dataplane"}`])
			c.NodeLag = secs(m[`fibfleet_fib_load_lag_seconds`+peer+`}`])
		}
		if !fibDone.IsZero() && m[`fibfleet_fib_kernel_sync_pending`] == 0 && m[`fibfleet_fib_kernel_sync_routes_total{op="installed"}`] >= total {
			c.NodeKernel = now.Sub(established)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return c, err
	}
	c.NodeRSS = PeakRSS(sk.NodePID)
	if check != nil {
		if err := check(sk); err != nil {
			return c, err
		}
	}

	if _, err := sk.Birdc("enable", "baseline"); err != nil {
		return c, err
	}
	var rxEst time.Time
	err = lab.WaitFor(ctx, 5*time.Minute, "BIRD to load the table into its kernel table", func() (bool, error) {
		out, err := birdc(sk.BirdRxSock, "show", "protocols", "upstream")
		if err != nil {
			return false, err
		}
		now := time.Now()
		if rxEst.IsZero() && strings.Contains(out, "Established") {
			rxEst = now
		}
		if rxEst.IsZero() {
			return false, nil
		}
		if c.BirdImport == 0 && birdRoutes(sk.BirdRxSock, "upstream", false) >= len(routes) {
			c.BirdImport = now.Sub(rxEst)
		}
		if c.BirdImport != 0 && birdRoutes(sk.BirdRxSock, "kfib", true) >= len(routes) {
			c.BirdKernel = now.Sub(rxEst)
			return true, nil
		}
		return false, nil
	})
	c.BirdRSS = PeakRSS(sk.BirdRxPID)
	return c, err
}

func birdc(sock string, args ...string) (string, error) {
	out, err := exec.Command("birdc", append([]string{"-s", sock}, args...)...).CombinedOutput()
	if err != nil {
		return "", errors.Join(err, errors.New(string(out)))
	}
	return string(out), nil
}

var birdRoutesRE = regexp.MustCompile(`Routes:\s+(\d+) imported(?:, (\d+) exported)?`)

// birdRoutes reads a protocol's imported (or exported) route count, -1 if unknown.
func birdRoutes(sock, proto string, exported bool) int {
	out, err := birdc(sock, "show", "protocols", "all", proto)
	if err != nil {
		return -1
	}
	m := birdRoutesRE.FindStringSubmatch(out)
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

// PeakRSS reads a process's peak resident set (VmHWM).
func PeakRSS(pid int) string {
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
