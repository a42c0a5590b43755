package bench

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
)

// RestartOptions say what MeasureRestart measures: a router (fibfleet's node, or
// BIRD 2 with graceful restart and its kernel routes kept, `persist`) between two
// upstreams announcing the same prefixes, flows crossing it to A at a constant
// rate, restarted Tries times.
type RestartOptions struct {
	NodeBinary string
	// VariantBinary is the node built with -tags fibfleet_variant: Kind "upgrade"
	// alternates between the two builds (their XDP programs differ).
	VariantBinary string
	Dir           string
	Prefixes      []netip.Prefix
	// Router is "node" or "bird".
	Router string
	// Kind is "sigterm" (stop, start), "sigkill" (a crash, start) or "upgrade"
	// (SIGTERM, start the other build); BIRD takes "sigterm" only (`birdc
	// graceful restart`, then bird -R).
	Kind        string
	Tries       int
	Flows, Rate int
	Log         func(format string, args ...any)
}

// RestartTry is one restart.
type RestartTry struct {
	// Lost is how many datagrams sent from the stop until the router held the
	// full table again (and 1 s more) never arrived, of Sent; SinkDrops of them the
	// sinks' sockets dropped (the measurement's loss, not the router's).
	Lost, Sent, SinkDrops int
	// Gap is the longest any flow went without a datagram through it.
	Gap time.Duration
	// Full is from the new process's start to the full table in place again: the
	// node's new FIB swapped in (restart complete); BIRD's sessions both holding
	// every prefix again.
	Full time.Duration
	// PeakRSS is the new process's peak resident set (bytes), at Full.
	PeakRSS int64
}

// RestartResult is every try, and the load before them.
type RestartResult struct {
	Load time.Duration
	// First is the first process's start to the full table (both upstreams'),
	// FirstRSS its peak resident set then: what a restart is held to.
	First    time.Duration
	FirstRSS int64
	Tries    []RestartTry
	// MapBytes is the memory of one generation of the node's pinned maps (memlock):
	// a restart holds two until its swap. 0 for BIRD.
	MapBytes uint64
}

// MeasureRestart builds the lab, loads the tables, runs the flows and restarts the
// router o.Tries times, each once the last has the full table again.
func MeasureRestart(o RestartOptions) (RestartResult, error) {
	var r RestartResult
	if o.Router == "bird" && o.Kind != "sigterm" {
		return r, fmt.Errorf("bench: BIRD restarts with sigterm (graceful restart) only")
	}
	start := time.Now()
	d, err := lab.StartDual(lab.DualConfig{NodeBinary: o.NodeBinary, Dir: o.Dir, Prefixes: o.Prefixes, PrependB: 2, Router: o.Router, GracefulRestart: true})
	if d != nil {
		defer d.Close()
	}
	if err != nil {
		return r, err
	}
	if err := waitDualLoaded(d, o.Router, len(o.Prefixes)); err != nil {
		return r, fmt.Errorf("before the restarts: %w", err)
	}
	// The same point a restart is timed to: both tables in the FIB (loadedFlows
	// waits for it again, and finds it at once).
	r.First, r.FirstRSS = time.Since(d.RouterStarted), peakRSSBytes(d.NodePID)
	flows, err := loadedFlows(d, o.Router, o.Prefixes, o.Flows, o.Rate)
	if err != nil {
		return r, fmt.Errorf("before the restarts: %w", err)
	}
	defer flows.Stop()
	r.Load = time.Since(start)
	if o.Router != "bird" {
		if r.MapBytes, err = generationBytes(d.NodeName); err != nil {
			return r, err
		}
	}
	sig := map[string]syscall.Signal{"sigterm": syscall.SIGTERM, "sigkill": syscall.SIGKILL, "upgrade": syscall.SIGTERM}[o.Kind]
	if sig == 0 {
		return r, fmt.Errorf("bench: restart kind %q: use sigterm, sigkill or upgrade", o.Kind)
	}
	for i := range o.Tries {
		bin := ""
		if o.Kind == "upgrade" && i%2 == 0 {
			bin = o.VariantBinary
		} else if o.Kind == "upgrade" {
			bin = o.NodeBinary
		}
		flows.Stop()
		if err := flows.Start(o.Rate); err != nil {
			return r, err
		}
		a0, b0 := flows.Received()
		sent0 := flows.Sent()
		drops0, err := flows.SinkDrops()
		if err != nil {
			return r, err
		}
		t0 := time.Now()
		if err := d.StopRouter(sig); err != nil {
			return r, err
		}
		restarted := time.Now()
		if err := d.RestartRouter(bin); err != nil {
			return r, err
		}
		if err := waitRestarted(d, o.Router, len(o.Prefixes)); err != nil {
			return r, err
		}
		var t RestartTry
		t.Full = time.Since(restarted)
		t.PeakRSS = peakRSSBytes(d.NodePID)
		time.Sleep(time.Second)
		t.Gap = flows.LongestGap(t0, time.Now().Add(-300*time.Millisecond))
		flows.Stop()
		a1, b1 := flows.Received()
		t.Sent = flows.Sent() - sent0
		t.Lost = t.Sent - (a1 + b1 - a0 - b0)
		drops1, err := flows.SinkDrops()
		if err != nil {
			return r, err
		}
		t.SinkDrops = drops1 - drops0
		r.Tries = append(r.Tries, t)
		if o.Log != nil {
			o.Log("%s, %d prefixes, %s restart %d: %d of %d datagrams lost (%d of them by the sinks' sockets), longest gap %v, full table again %v after the start, peak RSS %d MB",
				o.Router, len(o.Prefixes), o.Kind, i+1, t.Lost, t.Sent, t.SinkDrops, t.Gap.Round(time.Millisecond), t.Full.Round(time.Millisecond), t.PeakRSS>>20)
		}
	}
	return r, nil
}

// flowDestinations is a destination in each of n prefixes spread over the table
// (of /24 or shorter: an address of its own inside).
func flowDestinations(prefixes []netip.Prefix, n int) []netip.Addr {
	var short []netip.Prefix
	for _, p := range prefixes {
		if p.Bits() <= 24 {
			short = append(short, p)
		}
	}
	dsts := make([]netip.Addr, n)
	if len(short) == 0 {
		return nil
	}
	step := max(1, len(short)/n)
	for i := range dsts {
		dsts[i] = short[(i*step+step/2)%len(short)].Addr().Next()
	}
	return dsts
}

// waitRestarted waits until a restarted router holds the full table again: the
// node's restart complete (its FIB swapped in: it held both tables); BIRD's both
// sessions with every prefix imported.
func waitRestarted(d *lab.Dual, router string, n int) error {
	if router == "bird" {
		return waitDualLoaded(d, router, n)
	}
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := d.Metrics()
		if err == nil && m[`fibfleet_restart_state{state="adopted"}`] == 1 && m[`fibfleet_restart_state{state="pending"}`] == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("bench: the restarted node did not complete its restart within 15 minutes")
}

// generationBytes is the memory (memlock) of the maps of a node's live generation.
func generationBytes(node string) (uint64, error) {
	dir, err := dataplane.LivePinDir("", node)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, e := range entries {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, e.Name()), &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			return 0, fmt.Errorf("bench: open pinned map %s: %w", e.Name(), err)
		}
		info, err := m.Info()
		m.Close()
		if err != nil {
			return 0, err
		}
		b, _ := info.Memlock()
		sum += b
	}
	return sum, nil
}
