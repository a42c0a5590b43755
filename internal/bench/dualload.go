package bench

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/table"
)

// UpstreamsLoadOptions say what MeasureUpstreamsLoad measures: a router (fibfleet's
// node, or BIRD 2 or FRR 8.4 into the kernel) taking the same table from one or two
// full-table upstreams (the dual lab: A's paths the better, B's two ASes longer).
type UpstreamsLoadOptions struct {
	NodeBinary string
	Dir        string
	Prefixes   []netip.Prefix
	// Attrs, when set, gives the prefixes real AS paths and communities.
	Attrs *table.Model
	// Router is "node", "bird" or "frr" (lab.DualConfig.Router).
	Router string
	// Upstreams is 1 (B's session up, without a table), 2, 3 or 4 (C and D like B).
	Upstreams int
	// IBGP is how many iBGP peers (0-2) the router sends its table to, as an edge
	// router does to its core; BIRD or FRR as the router (the node's are its fleet:
	// MeasureFleetLoad).
	IBGP int
	// ProfileDir, when set, gets the node's heap profile at the load's end
	// (heap.pprof, after a collection: what the tables hold).
	ProfileDir string
}

// UpstreamsLoad is one load.
type UpstreamsLoad struct {
	// Load is from the last session Established to the forwarding table holding
	// every prefix from every upstream that sends them: the node's dataplane
	// complete for each (its End-of-RIB applied), BIRD's kernel protocol having
	// exported every prefix after every session imported them all, FRR's zebra
	// holding every prefix (as eBGP routes) in the kernel after bgpd received them
	// all from each. With iBGP peers, until each of them holds every prefix too.
	Load time.Duration
	// PeakRSS is the router's processes' peak resident set, summed (bytes): the node,
	// BIRD, or FRR's zebra and bgpd.
	PeakRSS int64
	// CPU is the router's processes' CPU time (user and system) when loaded.
	CPU time.Duration
}

// MeasureUpstreamsLoad builds the dual lab and waits until the router holds the table
// from every upstream.
func MeasureUpstreamsLoad(o UpstreamsLoadOptions) (UpstreamsLoad, error) {
	var r UpstreamsLoad
	if o.Upstreams < 1 || o.Upstreams > 4 {
		return r, fmt.Errorf("bench: %d upstreams: the dual lab has 1 to 4", o.Upstreams)
	}
	cfg := lab.DualConfig{NodeBinary: o.NodeBinary, Dir: o.Dir, Prefixes: o.Prefixes, Attrs: o.Attrs, PrependB: 2,
		Router: o.Router, OnlyA: o.Upstreams == 1, More: max(o.Upstreams-2, 0), IBGP: o.IBGP}
	if o.ProfileDir != "" {
		cfg.NodeExtra = "pprof: true\n"
	}
	d, err := lab.StartDual(cfg)
	if d != nil {
		defer d.Close()
	}
	if err != nil {
		return r, err
	}
	n := len(o.Prefixes)
	ups := lab.DualUpstreams(cfg)[:o.Upstreams]
	deadline := time.Now().Add(20 * time.Minute)
	var est time.Time
	for {
		var ok bool
		var err error
		if est.IsZero() {
			est, err = dualEstablished(d, o.Router, ups)
		} else if ok, err = dualHolds(d, o.Router, ups, n); ok {
			if ok, err = ibgpHolds(d, lab.DualIBGPPeers(cfg), n); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("bench: the %s router did not hold %d prefixes from %d upstreams within 20 minutes (last error: %v)", o.Router, n, o.Upstreams, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.Load = time.Since(est)
	for _, pid := range d.RouterPIDs {
		r.PeakRSS += peakRSSBytes(pid)
		r.CPU += cpuTime(pid)
	}
	if o.ProfileDir != "" && (o.Router == "" || o.Router == "node") {
		profile(d.Router, o.ProfileDir, "heap", 0) // after the CPU read: its collection is not the load's
	}
	return r, nil
}

var birdExported = regexp.MustCompile(`Routes:\s+\d+ imported, (\d+) exported`)

// dualEstablished is when the last of the router's sessions with ups came up: the
// node's own times from its API; BIRD's and FRR's as first seen (polled every
// 100 ms). Zero while one is not up.
func dualEstablished(d *lab.Dual, router string, ups []string) (time.Time, error) {
	switch router {
	case "bird":
		for i := range ups {
			out, err := d.Birdc("router", "show", "protocols", string(rune('a'+i)))
			if err != nil || !strings.Contains(out, "Established") {
				return time.Time{}, err
			}
		}
	case "frr":
		out, err := d.Vtysh("show bgp ipv4 unicast summary json")
		if err != nil {
			return time.Time{}, err
		}
		var s struct {
			Peers map[string]struct {
				State string `json:"state"`
			} `json:"peers"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			return time.Time{}, fmt.Errorf("vtysh's summary: %w: %s", err, out)
		}
		for _, a := range ups {
			if s.Peers[a].State != "Established" {
				return time.Time{}, nil
			}
		}
	default:
		b, err := d.Get("/api/v1/status")
		if err != nil {
			return time.Time{}, err
		}
		var st nodeapi.Status
		if err := json.Unmarshal(b, &st); err != nil {
			return time.Time{}, err
		}
		var last time.Time
		for _, a := range ups {
			i := slices.IndexFunc(st.Sessions, func(s nodeapi.Session) bool {
				return s.Neighbor.String() == a && s.State == "established"
			})
			if i < 0 {
				return time.Time{}, nil
			}
			if t := st.Sessions[i].Established; t.After(last) {
				last = t
			}
		}
		return last, nil
	}
	return time.Now(), nil
}

// dualHolds says whether the dual lab's router holds n prefixes from each of ups in
// its forwarding table.
func dualHolds(d *lab.Dual, router string, ups []string, n int) (bool, error) {
	switch router {
	case "bird":
		for i := range ups {
			out, err := d.Birdc("router", "show", "protocols", "all", string(rune('a'+i)))
			m := birdImported.FindStringSubmatch(out)
			if err != nil || m == nil {
				return false, fmt.Errorf("birdc: %v: %s", err, out)
			}
			if got, _ := strconv.Atoi(m[1]); got < n {
				return false, nil
			}
		}
		out, err := d.Birdc("router", "show", "protocols", "all", "kernel4")
		m := birdExported.FindStringSubmatch(out)
		if err != nil || m == nil {
			return false, fmt.Errorf("birdc: %v: %s", err, out)
		}
		got, _ := strconv.Atoi(m[1])
		return got >= n, nil
	case "frr":
		got, err := d.FRRReceived()
		if err != nil {
			return false, err
		}
		for _, a := range ups {
			if got[a] < n {
				return false, nil
			}
		}
		out, err := d.Vtysh("show ip route summary json")
		if err != nil {
			return false, err
		}
		// The eBGP routes zebra installed (the total counts the connected ones too).
		type byType struct {
			Type string `json:"type"`
			FIB  int    `json:"fib"`
		}
		var s struct {
			Routes []byType `json:"routes"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			return false, fmt.Errorf("vtysh's route summary: %w: %s", err, out)
		}
		i := slices.IndexFunc(s.Routes, func(r byType) bool { return r.Type == "ebgp" })
		return i >= 0 && s.Routes[i].FIB >= n, nil
	default:
		m, err := d.Metrics()
		if err != nil {
			return false, err
		}
		for _, a := range ups {
			if m[`fibfleet_bgp_load_complete{neighbor="`+a+`"}`] != 1 {
				return false, nil
			}
		}
		return true, nil
	}
}

// ibgpHolds says whether each of the dual lab's iBGP peers holds n prefixes.
func ibgpHolds(d *lab.Dual, peers []string, n int) (bool, error) {
	for _, p := range peers {
		out, err := d.Birdc(p, "show", "protocols", "all", "edge")
		m := birdImported.FindStringSubmatch(out)
		if err != nil || m == nil {
			return false, fmt.Errorf("birdc: %v: %s", err, out)
		}
		if got, _ := strconv.Atoi(m[1]); got < n {
			return false, nil
		}
	}
	return true, nil
}

// cpuTime is a process's CPU time so far (user and system), from /proc/<pid>/stat.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces: count the
	// fields after its closing one. utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	// The kernel counts in clock ticks, 100 a second on Linux's every architecture
	// but alpha (USER_HZ).
	return time.Duration(ut+st) * (time.Second / 100)
}
