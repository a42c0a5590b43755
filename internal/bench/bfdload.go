package bench

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
)

// BFDLoadOptions say what MeasureBFDLoad measures: fibfleet's node between two
// upstreams that both announce Prefixes (the node loads both tables at once, its
// busiest minute), BFD on both sessions at Interval x 3 in BIRD and in the node.
type BFDLoadOptions struct {
	NodeBinary, Dir string
	Prefixes        []netip.Prefix
	Interval        time.Duration
	// After is how long the sessions are watched once both tables are loaded (the
	// garbage collector returns the load's garbage then).
	After time.Duration
	Log   func(format string, args ...any)
}

// BFDLoadResult is one load under BFD.
type BFDLoadResult struct {
	// Load is from the lab's start to both tables loaded.
	Load time.Duration
	// Flaps are the BFD sessions' downs after being up, both sessions, counted by the
	// node (a down either side declared): every one a false failure, since nothing
	// failed.
	Flaps   int
	PeakRSS int64
}

// MeasureBFDLoad builds the lab, loads both tables, watches for After and counts
// the BFD sessions' flaps.
func MeasureBFDLoad(o BFDLoadOptions) (BFDLoadResult, error) {
	var r BFDLoadResult
	start := time.Now()
	d, err := lab.StartDual(lab.DualConfig{NodeBinary: o.NodeBinary, Dir: o.Dir, Prefixes: o.Prefixes, PrependB: 2, BFD: o.Interval})
	if d != nil {
		defer d.Close()
	}
	if err != nil {
		return r, err
	}
	if err := waitDualLoaded(d, "node", len(o.Prefixes)); err != nil {
		return r, err
	}
	r.Load = time.Since(start)
	time.Sleep(o.After)
	m, err := d.Metrics()
	if err != nil {
		return r, err
	}
	up := 0
	for k, v := range m {
		if strings.HasPrefix(k, "fibfleet_bfd_session_flaps_total{") {
			r.Flaps += int(v)
		}
		if strings.HasPrefix(k, "fibfleet_bfd_session_up{") {
			up += int(v)
		}
	}
	// No flap counts only if the sessions were up to flap.
	if up != 2 {
		return r, fmt.Errorf("bench: %d of 2 BFD sessions up after the load: nothing to count", up)
	}
	r.PeakRSS = peakRSSBytes(d.NodePID)
	if o.Log != nil {
		o.Log("BFD %v x 3, %d prefixes from each of two upstreams: %d flaps (loaded in %v, peak RSS %d MB)", o.Interval, len(o.Prefixes), r.Flaps,
			r.Load.Round(time.Second), r.PeakRSS>>20)
	}
	return r, nil
}
