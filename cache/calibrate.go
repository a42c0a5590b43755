package cache

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"
)

// Runner runs destinations through the production lookup path in BPF (a probe on the
// node's own FIB maps, with its own cache): the cache consulted when it is on.
type Runner interface {
	Run(addrs []netip.Addr) (time.Duration, error)
	// Resize sizes the runner's cache (0: off).
	Resize(entries int) error
}

// CalibrationDestinations is how many destinations Calibrate needs: the largest
// working set it prices.
const CalibrationDestinations = 1 << 14

// calibrationSets are the working sets Calibrate prices a hit and a lookup at (the
// last is CalibrationDestinations); churnDestinations is how many destinations the
// miss trace spreads over a one-set cache (four ways), so nearly every lookup misses
// while the FIB's lines stay in the CPU caches.
var calibrationSets = []int{64, 1024, CalibrationDestinations}

const (
	churnDestinations = 256
	missEntries       = 4
)

// CalibrationTrace is the length of each of Calibrate's traces: a Runner must take it.
const CalibrationTrace = 1 << 16

// Calibrate measures the cost model on this machine with BPF_PROG_TEST_RUN, from
// CalibrationDestinations destinations inside the FIB's routes, the median of rounds
// rounds (each runs every trace once, interleaved). At each working set of
// calibrationSets:
//   - FIB and Hit: packets drawn in random order from the working set (a cycle in
//     order would let the CPU's predictors learn the lookups' branches), run once to
//     warm up, then with the cache off, and on with room for the whole working set
//     (every lookup a hit);
//   - Miss, what the cache adds to a lookup it misses (and inserts): at the smallest
//     working set, 256 destinations through a one-set cache (the set's line hot); at
//     the others, every destination once, in random order, into an empty cache four
//     times the working set (its lines cold, as a flood finds them); the cache on
//     minus off.
//
// Costs.Hit, Miss and FIB are the smallest working set's. The runner's cache is left
// off.
func Calibrate(r Runner, addrs []netip.Addr, rounds int) (Costs, error) {
	if len(addrs) < CalibrationDestinations {
		return Costs{}, fmt.Errorf("cache: calibrate with at least %d destinations, got %d", CalibrationDestinations, len(addrs))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	from := func(k int) []netip.Addr {
		out := make([]netip.Addr, CalibrationTrace)
		for i := range out {
			out[i] = addrs[rng.IntN(k)]
		}
		return out
	}
	// run times a trace, after a warm-up run unless the cache must stay empty.
	run := func(entries int, trace []netip.Addr, warm bool) (float64, error) {
		if err := r.Resize(entries); err != nil {
			return 0, err
		}
		if warm {
			if _, err := r.Run(trace); err != nil {
				return 0, err
			}
		}
		d, err := r.Run(trace)
		return float64(d.Nanoseconds()) / float64(len(trace)), err
	}
	type job struct {
		entries int
		trace   []netip.Addr
		warm    bool
		into    *[]float64
	}
	k := len(calibrationSets)
	fib, hit, off, on := make([][]float64, k), make([][]float64, k), make([][]float64, k), make([][]float64, k)
	var jobs []job
	for i, ws := range calibrationSets {
		tr := from(ws)
		// Room for the whole working set: entries at twice it, a power of two.
		entries := 1 << bits.Len(uint(2*ws-1))
		jobs = append(jobs, job{0, tr, true, &fib[i]}, job{entries, tr, true, &hit[i]})
		if i == 0 {
			churn := from(churnDestinations)
			jobs = append(jobs, job{0, churn, true, &off[i]}, job{missEntries, churn, true, &on[i]})
			continue
		}
		once := slices.Clone(addrs[:ws])
		rng.Shuffle(len(once), func(a, b int) { once[a], once[b] = once[b], once[a] })
		jobs = append(jobs, job{0, once, true, &off[i]}, job{4 * entries, once, false, &on[i]})
	}
	for range max(1, rounds) {
		for _, j := range jobs {
			x, err := run(j.entries, j.trace, j.warm)
			if err != nil {
				return Costs{}, err
			}
			*j.into = append(*j.into, x)
		}
	}
	if err := r.Resize(0); err != nil {
		return Costs{}, err
	}
	var c Costs
	for i, ws := range calibrationSets {
		var miss []float64
		for j := range off[i] {
			miss = append(miss, max(0, on[i][j]-off[i][j]))
		}
		c.Curve = append(c.Curve, CostPoint{WorkingSet: float64(ws), Hit: median(hit[i]), Miss: median(miss), FIB: median(fib[i])})
	}
	c.Hit, c.Miss, c.FIB = c.Curve[0].Hit, c.Curve[0].Miss, c.Curve[0].FIB
	return c, nil
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}
