package bench

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/internal/table"
)

// The destination cache's cost (issue 5): what a packet costs with the cache off, at
// a fixed size and in auto mode (the controller, from a cold start, stats collection
// included), in front of each FIB, over flows of 8-10 packets to D destinations as
// the 2024 dst cache series measured. Every mode runs the production path (xdp_fwd.c's
// steps, in a probe): off is the cache's own off, lookups and working set counted.

// FlowTrace is n packets of flows of 8 to 10 packets each, 16 flows interleaved at a
// time, each flow to one of d destinations (a random address in a random route),
// drawn uniformly (zipf 0) or by Zipf with exponent zipf.
func FlowTrace(routes []table.Route, d, n int, zipf float64, seed uint64) []netip.Addr {
	rng := rand.New(rand.NewPCG(seed, uint64(d)))
	pick := func() uint64 { return uint64(rng.IntN(d)) }
	if zipf > 0 && d > 1 {
		pick = zipfRanks(rng, zipf, d)
	}
	type flow struct {
		dst  netip.Addr
		left int
	}
	var active [16]flow
	out := make([]netip.Addr, 0, n)
	for len(out) < n {
		f := &active[rng.IntN(len(active))]
		if f.left == 0 {
			*f = flow{destination(routes, seed, pick()), 8 + rng.IntN(3)}
		}
		out = append(out, f.dst)
		f.left--
	}
	return out
}

// destination is the destination of rank r: an address in a route, both drawn from r
// alone, so that a trace over millions of destinations needs no table of them.
func destination(routes []table.Route, seed, r uint64) netip.Addr {
	rng := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, r))
	return addrIn(rng, routes[rng.IntN(len(routes))].Prefix)
}

// addrIn is a random address inside a prefix of either family.
func addrIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	if p.Addr().Is6() {
		return RandomIn6(rng, p)
	}
	return randomIn(rng, p)
}

// zipfRanks draws ranks 0..d-1 with P(r) proportional to (r+1)^-s for any s > 0, by
// inverting the continuous distribution's CDF (x^-s on [1, d+1)): exact enough for
// traffic, and unlike math/rand's Zipf it takes s <= 1 (the seeds' s = 0.9).
func zipfRanks(rng *rand.Rand, s float64, d int) func() uint64 {
	top := float64(d + 1)
	var hTop float64
	if s == 1 {
		hTop = math.Log(top)
	} else {
		hTop = (math.Pow(top, 1-s) - 1) / (1 - s)
	}
	return func() uint64 {
		u := rng.Float64() * hTop
		var x float64
		if s == 1 {
			x = math.Exp(u)
		} else {
			x = math.Pow(1+u*(1-s), 1/(1-s))
		}
		return min(uint64(x)-1, uint64(d-1))
	}
}

// Distinct counts a trace's distinct destinations.
func Distinct(trace []netip.Addr) int {
	seen := make(map[netip.Addr]struct{}, len(trace)/8)
	for _, a := range trace {
		seen[a] = struct{}{}
	}
	return len(seen)
}

// CacheTarget is a FIB behind the destination cache, as the benchmarks drive it.
type CacheTarget struct {
	Name   string
	Family dcache.Family
	Routes []table.Route
	Cache  *dataplane.Cache
	// Lookup runs the production path over a trace: the cache consulted when on.
	Lookup func(trace []netip.Addr, out []uint32) (time.Duration, error)
	// Runner is the same path for cache.Calibrate.
	Runner cache.Runner
}

// CacheTargets are the IPv4 FIBs: the compiled FIB, bpf_fib_lookup (the kernel
// backend) and the LPM trie reference.
func (s *LookupSetup) CacheTargets() []CacheTarget {
	var out []CacheTarget
	for _, m := range []struct {
		name string
		mech dataplane.Mechanism
	}{{"IPv4 compiled FIB", dataplane.MechFIB4Cached}, {"IPv4 kernel backend", dataplane.MechKernelCached}, {"IPv4 LPM trie", dataplane.MechLPMCached}} {
		out = append(out, CacheTarget{Name: m.name, Family: dcache.IPv4, Routes: s.Routes, Cache: s.probe.Cache(),
			Lookup: func(tr []netip.Addr, o []uint32) (time.Duration, error) { return s.Lookup(m.mech, tr, o) }, Runner: s.Runner(m.mech)})
	}
	return out
}

// CacheTargets are the IPv6 FIBs: the compiled FIB and the LPM trie reference.
func (s *LookupSetup6) CacheTargets() []CacheTarget {
	var out []CacheTarget
	for _, m := range []struct {
		name string
		mech dataplane.Mechanism6
	}{{"IPv6 compiled FIB", dataplane.Mech6FIBCached}, {"IPv6 LPM trie", dataplane.Mech6LPMCached}} {
		out = append(out, CacheTarget{Name: m.name, Family: dcache.IPv6, Routes: s.Routes, Cache: s.probe.Cache(),
			Lookup: func(tr []netip.Addr, o []uint32) (time.Duration, error) { return s.probe.Lookup(m.mech, tr, o) },
			Runner: s.probe.Runner(m.mech)})
	}
	return out
}

// ModeRow is one target at one destination count and distribution: ns per packet
// (medians of interleaved runs) with the cache off, fixed and auto, and hit rates.
type ModeRow struct {
	Target   string
	Zipf     float64
	Dests    int
	Distinct int
	// Off, Fixed and Auto are ns per packet, loop included (medians); FixedRatio and
	// AutoRatio the medians of each run's ratio to the off run just before it.
	Off, Fixed, Auto      float64
	FixedRatio, AutoRatio float64
	FixedHit, AutoHit     float64
	// AutoEntries is the size auto ended the last run at (0: off).
	AutoEntries int
}

// ModeConfig is one cost table's shape.
type ModeConfig struct {
	Dests []int
	Zipfs []float64
	// Packets per run, Runs per mode (interleaved), Intervals per auto run.
	Packets, Runs, Intervals int
	// Fixed is the fixed mode's size; Min and Max bound auto.
	Fixed, Min, Max int
}

// MeasureMode pushes a trace through a target in one mode, as a node runs it, from a
// cold cache: the trace in intervals pieces with a Sizer tick (policy p, costs) between
// them, after one interval with the cache off that is not counted (what ran before, a
// bigger cache's memory or its table being freed, slows the next run by up to a third
// here). It returns ns per packet (BPF time only), the hit rate and the size at the
// end; out gets the answers (ProbeHit set on hits).
func MeasureMode(t CacheTarget, costs cache.Costs, p cache.Policy, trace []netip.Addr, out []uint32, intervals int) (float64, float64, int, error) {
	n := len(trace)
	step := (n + intervals - 1) / intervals
	if err := t.Cache.Resize(t.Family, 0); err != nil { // cold: a fresh table
		return 0, 0, 0, err
	}
	if _, err := t.Lookup(trace[:min(step, n)], out); err != nil {
		return 0, 0, 0, err
	}
	sizer := cache.NewSizer(t.Cache, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := sizer.Apply(p); err != nil {
		return 0, 0, 0, err
	}
	sizer.SetCosts(t.Family, costs)
	before, err := t.Cache.Stats(t.Family)
	if err != nil {
		return 0, 0, 0, err
	}
	var total time.Duration
	for i := 0; i < n; i += step {
		j := min(i+step, n)
		dur, err := t.Lookup(trace[i:j], out[i:j])
		if err != nil {
			return 0, 0, 0, err
		}
		total += dur
		if _, err := sizer.Tick(); err != nil {
			return 0, 0, 0, err
		}
	}
	after, err := t.Cache.Stats(t.Family)
	if err != nil {
		return 0, 0, 0, err
	}
	return float64(total.Nanoseconds()) / float64(n), float64(after.Sub(before).Hits) / float64(n), t.Cache.Entries(t.Family), nil
}

// Policies are the three modes the tables compare: off, fixed (entries of the
// target's family) and auto within min and max.
func Policies(f dcache.Family, fixed, min, max int) []cache.Policy {
	p := cache.Policy{Mode: cache.Fixed}
	p.Entries[f] = fixed
	return []cache.Policy{{Mode: cache.Off}, p, {Mode: cache.Auto, MinEntries: min, MaxEntries: max}}
}

// RunModes measures a target in every mode over every destination count and
// distribution (MeasureMode, runs interleaved, the order of fixed and auto alternating)
// and checks every cached answer against the cache-off one. costs is the target's
// calibrated cost model (cache.Calibrate).
func RunModes(t CacheTarget, costs cache.Costs, cfg ModeConfig) ([]ModeRow, error) {
	n := cfg.Packets
	want, got := make([]uint32, n), make([]uint32, n)
	policies := Policies(t.Family, cfg.Fixed, cfg.Min, cfg.Max)
	var rows []ModeRow
	for _, z := range cfg.Zipfs {
		for _, d := range cfg.Dests {
			trace := FlowTrace(t.Routes, d, n, z, 7)
			row := ModeRow{Target: t.Name, Zipf: z, Dests: d, Distinct: Distinct(trace)}
			var ns [3][]float64
			for r := 0; r < cfg.Runs; r++ {
				// Off first (the answers to check against), then the others in turn.
				for _, m := range []int{0, 1 + r%2, 2 - r%2} {
					p := policies[m]
					out := got
					if m == 0 {
						out = want
					}
					x, h, entries, err := MeasureMode(t, costs, p, trace, out, cfg.Intervals)
					if err != nil {
						return nil, err
					}
					for k := 0; m > 0 && k < n; k++ {
						if got[k]&^dataplane.ProbeHit != want[k] {
							return nil, fmt.Errorf("%s, %s: %s answers %d with the cache, %d without", t.Name, p.Mode, trace[k], got[k], want[k])
						}
					}
					ns[m] = append(ns[m], x)
					switch m {
					case 1:
						row.FixedHit = h
					case 2:
						row.AutoHit, row.AutoEntries = h, entries
					}
				}
			}
			row.Off, row.Fixed, row.Auto = Median(ns[0]), Median(ns[1]), Median(ns[2])
			var fixedRatio, autoRatio []float64
			for r := range ns[0] {
				fixedRatio, autoRatio = append(fixedRatio, ns[1][r]/ns[0][r]), append(autoRatio, ns[2][r]/ns[0][r])
			}
			row.FixedRatio, row.AutoRatio = Median(fixedRatio), Median(autoRatio)
			rows = append(rows, row)
		}
	}
	return rows, t.Cache.Resize(t.Family, 0)
}
