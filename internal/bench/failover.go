package bench

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
)

// FailoverOptions say what MeasureFailover measures: a router (fibfleet's node, or
// BIRD 2 or FRR 8.4 with the kernel forwarding) between two upstreams that announce the same
// prefixes, A's paths the better ones, while flows run through it to A; then A fails.
type FailoverOptions struct {
	NodeBinary string
	Dir        string
	Prefixes   []netip.Prefix
	// Router is "node", "bird" or "frr" (lab.DualConfig.Router).
	Router string
	// Cause is how A fails: "link" (A's end of the link goes down: the router's end
	// loses its carrier) or "silent" (A drops everything it receives: forwarding, BGP
	// and BFD stop, the link stays up; both routers run BFD, 300 ms x 3, to tell).
	// (A's BIRD stopping is no forwarding failure: A still delivers.)
	Cause string
	// Flows go to as many destinations, one in each of as many random prefixes, at
	// Rate datagrams per second in all.
	Flows, Rate int
	Log         func(format string, args ...any)
}

// FailoverResult is one failover.
type FailoverResult struct {
	// Load is from the start to both tables in place and every flow through A.
	Load time.Duration
	// Outage is the longest any flow went without a datagram getting through after
	// A failed (its resolution: the flow's interval, Flows/Rate).
	Outage time.Duration
	// Lost is how many datagrams never arrived, of Sent.
	Lost, Sent int
	// PeakRSS is the router's processes' peak resident set, summed (bytes): the node,
	// BIRD, or FRR's zebra, bgpd and bfdd.
	PeakRSS int64
}

// MeasureFailover builds the lab, loads the tables, runs the flows and fails A.
func MeasureFailover(o FailoverOptions) (FailoverResult, error) {
	var r FailoverResult
	start := time.Now()
	cfg := lab.DualConfig{NodeBinary: o.NodeBinary, Dir: o.Dir, Prefixes: o.Prefixes, PrependB: 2, Router: o.Router}
	if o.Cause == "silent" {
		cfg.BFD = 300 * time.Millisecond
	}
	d, err := lab.StartDual(cfg)
	if d != nil {
		defer d.Close()
	}
	if err != nil {
		return r, err
	}
	flows, err := loadedFlows(d, o.Router, o.Prefixes, o.Flows, o.Rate)
	if err != nil {
		return r, fmt.Errorf("before the failure: %w", err)
	}
	defer flows.Stop()
	r.Load = time.Since(start)
	t0 := time.Now()
	switch o.Cause {
	case "link":
		err = d.SetLink("a", false)
	case "silent":
		err = d.Silence("a")
	default:
		err = fmt.Errorf("bench: failover cause %q: use link or silent", o.Cause)
	}
	if err != nil {
		return r, err
	}
	if err := waitFlows(flows, 1, 5*time.Minute); err != nil {
		return r, fmt.Errorf("after A failed: %w", err)
	}
	time.Sleep(time.Second)
	r.Outage = flows.LongestGap(t0, time.Now().Add(-300*time.Millisecond))
	flows.Stop()
	a, b := flows.Received()
	r.Sent = flows.Sent()
	r.Lost = r.Sent - a - b
	for _, pid := range d.RouterPIDs {
		r.PeakRSS += peakRSSBytes(pid)
	}
	if o.Log != nil {
		o.Log("%s, %d prefixes, %s failure: outage %v, %d of %d datagrams lost (loaded in %v, peak RSS %d MB)", o.Router, len(o.Prefixes), o.Cause,
			r.Outage.Round(time.Millisecond), r.Lost, r.Sent, r.Load.Round(time.Second), r.PeakRSS>>20)
	}
	return r, nil
}

// loadedFlows waits until the dual lab's router holds both tables, then starts n
// flows (one to a destination in each of n prefixes spread over the table) at rate
// datagrams per second in all, and waits until every one goes through A.
func loadedFlows(d *lab.Dual, router string, prefixes []netip.Prefix, n, rate int) (*lab.Flows, error) {
	if err := waitDualLoaded(d, router, len(prefixes)); err != nil {
		return nil, err
	}
	dsts := flowDestinations(prefixes, n)
	if len(dsts) == 0 {
		return nil, fmt.Errorf("bench: no prefix of /24 or shorter to send flows to")
	}
	flows, err := d.NewFlows(dsts, n)
	if err != nil {
		return nil, err
	}
	if err := flows.Start(rate); err != nil {
		return nil, err
	}
	if err := waitFlows(flows, 0, 2*time.Minute); err != nil {
		flows.Stop()
		return nil, err
	}
	return flows, nil
}

var birdImported = regexp.MustCompile(`Routes:\s+(\d+) imported`)

// waitDualLoaded waits until the router holds both upstreams' tables.
func waitDualLoaded(d *lab.Dual, router string, n int) error {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		ok := true
		switch router {
		case "frr":
			got, err := d.FRRReceived()
			ok = err == nil && got[lab.DualAddrA] >= n && got[lab.DualAddrB] >= n
		case "bird":
			for _, s := range []string{"a", "b"} {
				out, err := d.Birdc("router", "show", "protocols", "all", s)
				m := birdImported.FindStringSubmatch(out)
				if err != nil || m == nil {
					ok = false
					break
				}
				if got, _ := strconv.Atoi(m[1]); got < n {
					ok = false
				}
			}
		default:
			m, err := d.Metrics()
			ok = err == nil && m[`fibfleet_bgp_load_complete{neighbor="`+lab.DualAddrA+`"}`] == 1 &&
				m[`fibfleet_bgp_load_complete{neighbor="`+lab.DualAddrB+`"}`] == 1
		}
		if ok {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("bench: the %s router did not load both tables of %d prefixes within 15 minutes", router, n)
}

// waitFlows waits until every flow's last datagram reached side (0 A, 1 B).
func waitFlows(f *lab.Flows, side int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		all := true
		for _, w := range f.Where() {
			if w != side {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("bench: flows not all through upstream %c within %v: %v", 'A'+side, within, f.Where())
}
