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
// one-packet random destinations are mixed in, with and without admission, and the
// cost of each mode. The cost table over destination counts is in modes.go.

// FloodTrace mixes legitimate traffic (FlowTrace over d destinations, Zipf s=zipf)
// with one-packet flood packets to fresh random destinations, a share flood of all
// packets; it returns the packets and which are legitimate.
func FloodTrace(routes []table.Route, d, n int, zipf, flood float64, seed uint64) ([]netip.Addr, []bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	legit := FlowTrace(routes, d, n, zipf, seed)
	out, isLegit := make([]netip.Addr, 0, n), make([]bool, 0, n)
	for k := 0; len(out) < n; {
		if rng.Float64() < flood {
			out = append(out, addrIn(rng, routes[rng.IntN(len(routes))].Prefix))
			isLegit = append(isLegit, false)
			continue
		}
		out = append(out, legit[k])
		isLegit = append(isLegit, true)
		k++
	}
	return out, isLegit
}

// FloodRow is the cache under one flood share: the legitimate packets' hit rate with
// a fixed cache, with and without admission, and the flood-free hit rate of the same
// legitimate traffic; ns per packet with the cache off, fixed and auto (MeasureMode),
// and auto's legitimate hit rate and size at the end.
type FloodRow struct {
	Flood                              float64
	LegitHit, LegitHitNoAdmit, NoFlood float64
	Off, Fixed, Auto                   float64
	AutoLegitHit                       float64
	AutoEntries                        int
}

// RunFlood measures a target under floods of the given shares (one-packet random
// destinations mixed into Zipf-distributed legitimate flows over d destinations), the
// fixed cache holding entries, medians of runs interleaved runs.
func RunFlood(t CacheTarget, costs cache.Costs, entries, d, n, runs, intervals int, zipf float64, floods []float64) ([]FloodRow, error) {
	policies := Policies(t.Family, entries, 1<<10, 1<<16)
	legitHits := func(out []uint32, legit []bool) float64 {
		hits, total := 0, 0
		for i, a := range out {
			if legit[i] {
				total++
				if a&dataplane.ProbeHit != 0 {
					hits++
				}
			}
		}
		return float64(hits) / float64(max(total, 1))
	}
	var rows []FloodRow
	for _, fl := range floods {
		trace, legit := FloodTrace(t.Routes, d, n, zipf, fl, 11)
		var clean []netip.Addr
		for i, a := range trace {
			if legit[i] {
				clean = append(clean, a)
			}
		}
		row := FloodRow{Flood: fl}
		out := make([]uint32, n)
		// Flood-free and without admission: hit rates only.
		if _, _, _, err := MeasureMode(t, costs, policies[1], clean, out[:len(clean)], intervals); err != nil {
			return nil, err
		}
		all := make([]bool, len(clean))
		for i := range all {
			all[i] = true
		}
		row.NoFlood = legitHits(out[:len(clean)], all)
		if err := t.Cache.SetAdmission(false); err != nil {
			return nil, err
		}
		_, _, _, err := MeasureMode(t, costs, policies[1], trace, out, intervals)
		if err2 := t.Cache.SetAdmission(true); err == nil {
			err = err2
		}
		if err != nil {
			return nil, err
		}
		row.LegitHitNoAdmit = legitHits(out, legit)
		var ns [3][]float64
		for r := 0; r < runs; r++ {
			for m, p := range policies {
				x, _, size, err := MeasureMode(t, costs, p, trace, out, intervals)
				if err != nil {
					return nil, err
				}
				ns[m] = append(ns[m], x)
				switch m {
				case 1:
					row.LegitHit = legitHits(out, legit)
				case 2:
					row.AutoLegitHit, row.AutoEntries = legitHits(out, legit), size
				}
			}
		}
		row.Off, row.Fixed, row.Auto = Median(ns[0]), Median(ns[1]), Median(ns[2])
		rows = append(rows, row)
	}
	return rows, t.Cache.Resize(t.Family, 0)
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
