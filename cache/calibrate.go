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
// rounds (each runs every trace once, interleaved). Each trace draws its packets in
// random order from a working set of destinations (a cycle in order would let the
// CPU's predictors learn the lookups' branches), and is run once to warm up first:
//   - FIB and Hit at each working set of calibrationSets: the path with the cache
//     off, and on with room for the whole working set (every lookup a hit);
//   - Miss: what the cache adds to a lookup it misses (and inserts): 256 destinations
//     through a one-set cache, with the cache on minus off.
//
// Costs.Hit and Costs.FIB are the smallest working set's. The runner's cache is left
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
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / CalibrationTrace }
	run := func(entries int, trace []netip.Addr) (float64, error) {
		if err := r.Resize(entries); err != nil {
			return 0, err
		}
		if _, err := r.Run(trace); err != nil { // warm: the FIB's lines, the cache
			return 0, err
		}
		d, err := r.Run(trace)
		return per(d), err
	}
	type job struct {
		entries int
		trace   []netip.Addr
		into    *[]float64
	}
	fib, hit := make([][]float64, len(calibrationSets)), make([][]float64, len(calibrationSets))
	var jobs []job
	for i, ws := range calibrationSets {
		tr := from(ws)
		// Room for the whole working set: entries at twice it, a power of two.
		entries := 1 << bits.Len(uint(2*ws-1))
		jobs = append(jobs, job{0, tr, &fib[i]}, job{entries, tr, &hit[i]})
	}
	var off, on []float64
	churn := from(churnDestinations)
	jobs = append(jobs, job{0, churn, &off}, job{missEntries, churn, &on})
	for range max(1, rounds) {
		for _, j := range jobs {
			x, err := run(j.entries, j.trace)
			if err != nil {
				return Costs{}, err
			}
			*j.into = append(*j.into, x)
		}
	}
	if err := r.Resize(0); err != nil {
		return Costs{}, err
	}
	var miss []float64
	for i := range off {
		miss = append(miss, max(0, on[i]-off[i]))
	}
	c := Costs{Miss: median(miss)}
	for i, ws := range calibrationSets {
		c.Curve = append(c.Curve, CostPoint{WorkingSet: float64(ws), Hit: median(hit[i]), FIB: median(fib[i])})
	}
	c.Hit, c.FIB = c.Curve[0].Hit, c.Curve[0].FIB
	return c, nil
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}
