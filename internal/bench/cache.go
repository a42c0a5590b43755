package bench

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// The destination cache under floods (issue 5): the legitimate flows' hit rate when
// one-packet random destinations are mixed in, with and without admission. The cost
// table (off, fixed, auto) is in modes.go.

// cachedOf is each backend's cached mechanism.
var cachedOf = map[dataplane.Mechanism]dataplane.Mechanism{
	dataplane.MechFIB4: dataplane.MechFIB4Cached, dataplane.MechKernel: dataplane.MechKernelCached, dataplane.MechLPMTrie: dataplane.MechLPMCached,
}

// FloodTrace mixes legitimate traffic (FlowTrace over d destinations, Zipf s=zipf)
// with one-packet flood packets to fresh random destinations, a share flood of all
// packets; it returns the packets and which are legitimate.
func FloodTrace(routes []table.Route, d, n int, zipf, flood float64, seed uint64) ([]netip.Addr, []bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	legit := FlowTrace(routes, d, n, zipf, seed)
	out, isLegit := make([]netip.Addr, 0, n), make([]bool, 0, n)
	for k := 0; len(out) < n; {
		if rng.Float64() < flood {
			out = append(out, randomIn(rng, routes[rng.IntN(len(routes))].Prefix))
			isLegit = append(isLegit, false)
			continue
		}
		out = append(out, legit[k])
		isLegit = append(isLegit, true)
		k++
	}
	return out, isLegit
}

// FloodRow is the cache under one flood share: the legitimate packets' hit rate, with
// and without admission, the flood-free hit rate of the same legitimate traffic, and
// ns per packet with the cache off and on (with admission).
type FloodRow struct {
	Flood                              float64
	LegitHit, LegitHitNoAdmit, NoFlood float64
	Off, Cached                        float64
}

// RunFlood measures the cache (size entries) in front of backend under floods of the
// given shares, Zipf-distributed legitimate flows over d destinations.
func (s *LookupSetup) RunFlood(backend dataplane.Mechanism, entries, d, n, runs int, zipf float64, floods []float64) ([]FloodRow, error) {
	lookup := s.Lookup
	// legitHits is the legitimate packets' hit rate on a trace, from a cold cache.
	legitHits := func(trace []netip.Addr, legit []bool, admission bool) (float64, time.Duration, error) {
		set := s.probe.SetCache
		if !admission {
			set = s.probe.SetCacheNoAdmission
		}
		if err := set(entries); err != nil {
			return 0, 0, err
		}
		out := make([]uint32, len(trace))
		dur, err := lookup(cachedOf[backend], trace, out)
		if err != nil {
			return 0, 0, err
		}
		hits, total := 0, 0
		for i, a := range out {
			if legit[i] {
				total++
				if a&dataplane.ProbeHit != 0 {
					hits++
				}
			}
		}
		return float64(hits) / float64(max(total, 1)), dur, nil
	}
	var rows []FloodRow
	for _, fl := range floods {
		trace, legit := FloodTrace(s.Routes, d, n, zipf, fl, 11)
		var clean []netip.Addr
		for i, a := range trace {
			if legit[i] {
				clean = append(clean, a)
			}
		}
		all := make([]bool, len(clean))
		for i := range all {
			all[i] = true
		}
		row := FloodRow{Flood: fl}
		var err error
		if row.NoFlood, _, err = legitHits(clean, all, true); err != nil {
			return nil, err
		}
		if row.LegitHitNoAdmit, _, err = legitHits(trace, legit, false); err != nil {
			return nil, err
		}
		var offRuns, onRuns []float64
		out := make([]uint32, n)
		for r := 0; r < runs; r++ {
			dur, err := lookup(backend, trace, out)
			if err != nil {
				return nil, err
			}
			offRuns = append(offRuns, float64(dur.Nanoseconds())/float64(n))
			h, dur, err := legitHits(trace, legit, true)
			if err != nil {
				return nil, err
			}
			row.LegitHit = h
			onRuns = append(onRuns, float64(dur.Nanoseconds())/float64(n))
		}
		row.Off, row.Cached = Median(offRuns), Median(onRuns)
		rows = append(rows, row)
	}
	return rows, s.probe.SetCache(0)
}

// Lookup runs a mechanism over a trace in the setup's namespace (where the kernel
// backend's routes are).
func (s *LookupSetup) Lookup(m dataplane.Mechanism, trace []netip.Addr, out []uint32) (time.Duration, error) {
	var dur time.Duration
	err := s.ns.Do(func() error {
		var err error
		dur, err = s.probe.Lookup(m, trace, out)
		return err
	})
	return dur, err
}

// Cache is the probe's destination cache.
func (s *LookupSetup) Cache() *dataplane.Cache { return s.probe.Cache() }

// Runner runs a cached mechanism in the setup's namespace, for cache.Calibrate.
func (s *LookupSetup) Runner(m dataplane.Mechanism) cache.Runner {
	return nsRunner{s.ns, s.probe.Runner(m)}
}

type nsRunner struct {
	ns *lab.Netns
	r  *dataplane.ProbeRunner
}

func (n nsRunner) Run(addrs []netip.Addr) (time.Duration, error) {
	var dur time.Duration
	err := n.ns.Do(func() error {
		var err error
		dur, err = n.r.Run(addrs)
		return err
	})
	return dur, err
}

func (n nsRunner) Resize(entries int) error { return n.r.Resize(entries) }

// Destinations are n addresses inside random routes (uniform over the routes).
func Destinations(routes []table.Route, n int, seed uint64) []netip.Addr {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = addrIn(rng, routes[rng.IntN(len(routes))].Prefix)
	}
	return out
}
