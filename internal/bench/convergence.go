package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
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
	// NodeHeapPeak is the largest Go heap in use the node reported during the load
	// (go_memstats_heap_inuse_bytes, polled every 100 ms).
	NodeHeapPeak float64
	// NodeCPU is the CPU time (user and system) the node had used when the load was
	// done, from its start.
	NodeCPU time.Duration
	// BirdImport and BirdKernel: from Established to every route imported, and
	// exported to its kernel table.
	BirdImport, BirdKernel time.Duration
	BirdRSS                string
	// VRPsAtEstablished is how many VRPs the node's validators had sent when the
	// session came up (ConvergenceOptions.VRPs: loaded before the session, or not).
	VRPsAtEstablished int
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

// ConvergenceOptions vary a convergence run.
type ConvergenceOptions struct {
	// ImportFilter "off" loads the table without the import rules (the A/B
	// baseline); "" with the lab's.
	ImportFilter string
	// NoBird skips the BIRD baseline.
	NoBird bool
	// VRPs, when set, are served by a validator the node validates against (stayrtr
	// in the upstream's namespace, started before the node), with rpki.invalid
	// RPKIInvalid.
	VRPs        []rpki.VRP
	RPKIInvalid string
	// Attrs, when set, gives the table's routes real AS paths and communities
	// (lab.SkeletonConfig.TableAttrs).
	Attrs *table.Model
	// ProfileDir, when set, receives the node's CPU profile of the load's first
	// ProfileSeconds (from Established), its heap profile half way through those
	// and when the load is done.
	ProfileDir     string
	ProfileSeconds int
}

// withSkeleton starts the skeleton with BIRD announcing routes, waits for BIRD to
// start, runs fn and removes the lab; an error carries the tail of the node's log.
func withSkeleton(ctx context.Context, cfg lab.SkeletonConfig, fn func(*lab.Skeleton) error) (err error) {
	sk, err := lab.StartSkeleton(cfg)
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
		return err
	}
	// BIRD parses a 40 MB config first.
	if err := lab.WaitFor(ctx, 2*time.Minute, "BIRD to start", func() (bool, error) {
		_, err := sk.Birdc("show", "status")
		return err == nil, err
	}); err != nil {
		return err
	}
	return fn(sk)
}

// MeasureConvergence builds the skeleton lab with BIRD announcing routes, times the
// node, calls check (if any) while the lab is up, then times the BIRD baseline. The
// lab is removed before it returns; an error carries the tail of the node's log.
func MeasureConvergence(ctx context.Context, nodeBin, dir string, routes []table.Route, opts ConvergenceOptions, check func(*lab.Skeleton) error) (c Convergence, err error) {
	c.Routes = len(routes)
	// The set never changes: stayrtr reads it once (reading 500,000 VRPs every
	// second would cost it most of a core beside the node).
	err = withSkeleton(ctx, lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, Table: routes, TableAttrs: opts.Attrs, ImportFilter: opts.ImportFilter, VRPs: opts.VRPs, RPKIInvalid: opts.RPKIInvalid,
		ValidatorRefresh: time.Hour, Pprof: opts.ProfileDir != ""}, func(sk *lab.Skeleton) error {
		return c.measure(ctx, sk, routes, opts, check)
	})
	return c, err
}

func (c *Convergence) measure(ctx context.Context, sk *lab.Skeleton, routes []table.Route, opts ConvergenceOptions, check func(*lab.Skeleton) error) error {
	total := float64(len(routes) + lab.Routes4())
	var established, fibDone time.Time
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	err := lab.WaitFor(ctx, 5*time.Minute, "the node's FIB and kernel sync", func() (bool, error) {
		m, err := sk.Metrics()
		if err != nil {
			return false, err
		}
		now := time.Now()
		c.NodeHeapPeak = max(c.NodeHeapPeak, m[`go_memstats_heap_inuse_bytes`])
		// At least the IPv4 session (the lab's IPv6 session may come up first or not).
		if established.IsZero() && m[`fibfleet_bgp_sessions{state="established"}`] >= 1 {
			established = now
			c.VRPsAtEstablished = int(m[`fibfleet_rpki_vrps{validator="`+lab.ValidatorAddr+`"}`])
			if opts.ProfileDir != "" {
				secs := cmp.Or(opts.ProfileSeconds, 30)
				go profile(sk.Router, opts.ProfileDir, "cpu", secs)
				// The heap in the middle of the load: what queues while it runs.
				time.AfterFunc(time.Duration(secs)*time.Second/2, func() { profile(sk.Router, opts.ProfileDir, "heap-mid", 0) })
			}
		}
		const peer = `{neighbor="` + lab.UpstreamAddr + `"`
		if !established.IsZero() && fibDone.IsZero() && m[`fibfleet_bgp_load_complete`+peer+`}`] == 1 {
			if got := m[`fibfleet_fib_routes{family="ipv4"}`]; got != total {
				return false, fmt.Errorf("the node reports the dump complete with %v of %v routes in the FIB", got, total)
			}
			fibDone = now
			c.NodeCPU = secs(m[`process_cpu_seconds_total`])
			if opts.ProfileDir != "" {
				profile(sk.Router, opts.ProfileDir, "heap", 0)
			}
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
		return err
	}
	c.NodeRSS = PeakRSS(sk.NodePID)
	if check != nil {
		if err := check(sk); err != nil {
			return err
		}
	}
	if opts.NoBird {
		return nil
	}

	if _, err := sk.Birdc("enable", "baseline"); err != nil {
		return err
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
	return err
}

// profile saves one of the node's Go profiles into dir (cpu: over seconds), from its
// HTTP address in router's namespace.
func profile(router *lab.Netns, dir, kind string, seconds int) {
	saveProfile(func(path string, timeout time.Duration) ([]byte, error) {
		return router.HTTPGetWithin(lab.MetricsAddr, path, timeout)
	}, dir, kind, seconds)
}

// saveProfile saves one of a node's Go profiles, fetched with get, into dir as
// name.pprof: with seconds, its CPU over them; else its heap after a collection. A
// failure is logged, not returned: the measurement stands without it.
func saveProfile(get func(path string, timeout time.Duration) ([]byte, error), dir, name string, seconds int) {
	path := "/debug/pprof/heap?gc=1"
	if seconds > 0 {
		path = fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds)
	}
	b, err := get(path, time.Duration(seconds+30)*time.Second)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".pprof"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile %s: %v\n", name, err)
	}
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

// peakRSSBytes is a process's peak resident set (VmHWM) in bytes, 0 when unknown.
func peakRSSBytes(pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// PeakRSS reads a process's peak resident set (VmHWM), as the kernel writes it.
func PeakRSS(pid int) string {
	if b := peakRSSBytes(pid); b > 0 {
		return fmt.Sprintf("%d kB", b>>10)
	}
	return "unknown"
}

// PolicyChange is how long a policy change on a loaded table took to reach the
// dataplane: an import rule that refuses the upstream's whole table (deny_asns: its
// AS), then the rule taken back.
type PolicyChange struct {
	Routes int
	// Refuse: from the new configuration written to the FIB holding none of the
	// upstream's IPv4 routes; Accept: from the old one written back to the FIB
	// holding them all again. Both go through a reload, a soft reset in (GoBGP runs
	// the neighbour's Adj-RIB-In through import again) and the FIB.
	Refuse, Accept time.Duration
	// Kept says the session stayed up throughout (its established time unchanged).
	Kept bool
}

// MeasurePolicyChange loads routes from BIRD into the node (run with -config-dir),
// then changes its IPv4 upstream's import policy and back, as an operator would,
// through a ConfigMap-style swap.
func MeasurePolicyChange(ctx context.Context, nodeBin, dir string, routes []table.Route) (pc PolicyChange, err error) {
	pc.Routes = len(routes)
	err = withSkeleton(ctx, lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, Table: routes, ConfigDir: true}, func(sk *lab.Skeleton) error {
		total := float64(len(routes) + lab.Routes4())
		fib := func() (float64, error) {
			m, err := sk.Metrics()
			return m[`fibfleet_fib_routes{family="ipv4"}`], err
		}
		if err := lab.WaitFor(ctx, 5*time.Minute, "the table in the FIB", func() (bool, error) {
			n, err := fib()
			return n == total, err
		}); err != nil {
			return err
		}
		up, err := established(sk)
		if err != nil {
			return err
		}
		// The upstream's routes all carry its AS: denying it refuses them all; the
		// IPv4 route of the lab's IPv6 session stays.
		deny := strings.Replace(sk.NodeConfigYAML, "import: "+lab.LabImport, "import: "+strings.TrimSuffix(lab.LabImport, "}")+fmt.Sprintf(", deny_asns: [%d]}", lab.UpstreamASN), 1)
		if deny == sk.NodeConfigYAML {
			return errors.New("bench: the skeleton's configuration has no import rules to change")
		}
		step := func(body string, want float64) (time.Duration, error) {
			start := time.Now()
			if err := sk.WriteConfig(body); err != nil {
				return 0, err
			}
			err := lab.WaitFor(ctx, 5*time.Minute, fmt.Sprintf("%v IPv4 routes in the FIB", want), func() (bool, error) {
				n, err := fib()
				return n == want, err
			})
			return time.Since(start), err
		}
		if pc.Refuse, err = step(deny, 1); err != nil {
			return err
		}
		if pc.Accept, err = step(sk.NodeConfigYAML, total); err != nil {
			return err
		}
		after, err := established(sk)
		pc.Kept = err == nil && after.Equal(up)
		return err
	})
	return pc, err
}

// established is when the IPv4 upstream's session came up, from the node's API.
func established(sk *lab.Skeleton) (time.Time, error) {
	b, err := sk.Get("/api/v1/status")
	if err != nil {
		return time.Time{}, err
	}
	var st nodeapi.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return time.Time{}, err
	}
	for _, s := range st.Sessions {
		if s.Neighbor.String() == lab.UpstreamAddr && s.State == "established" {
			return s.Established, nil
		}
	}
	return time.Time{}, fmt.Errorf("bench: no established session with %s", lab.UpstreamAddr)
}
