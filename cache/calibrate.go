package cache

import (
	"fmt"
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

// hotDestinations is how many distinct destinations the hit trace cycles through;
// churnDestinations how many the miss trace cycles through a one-set cache (four
// ways), so that nearly every lookup misses while the FIB's lines stay in the CPU
// caches.
const (
	hotDestinations   = 64
	churnDestinations = 256
	hitEntries        = 1024
	missEntries       = 4
)

// Calibrate measures the cost model on this machine with BPF_PROG_TEST_RUN, from
// destinations inside the FIB's routes (at least 4,096), the median of rounds rounds
// (each runs every trace once, interleaved). Every trace keeps the FIB's lines in the
// CPU caches, its cheapest case, so the cache is credited with no more than it saves
// and the figures do not swing with the machine's memory traffic:
//   - FIB: the path with the cache off, over 64 destinations repeated;
//   - Hit: the same trace with the cache on, every lookup a hit;
//   - Miss: what the cache adds to a lookup it misses (and inserts): 256 destinations
//     cycling through a one-set cache, with the cache on minus off.
//
// The runner's cache is left off.
func Calibrate(r Runner, addrs []netip.Addr, rounds int) (Costs, error) {
	if len(addrs) < 4096 {
		return Costs{}, fmt.Errorf("cache: calibrate with at least 4096 destinations, got %d", len(addrs))
	}
	cycle := func(k int) []netip.Addr {
		out := make([]netip.Addr, len(addrs))
		for i := range out {
			out[i] = addrs[i%k]
		}
		return out
	}
	hot, churn := cycle(hotDestinations), cycle(churnDestinations)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(len(addrs)) }
	var fib, hit, miss []float64
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
	for range max(1, rounds) {
		var t [4]float64
		for i, c := range []struct {
			entries int
			trace   []netip.Addr
		}{{0, hot}, {hitEntries, hot}, {0, churn}, {missEntries, churn}} {
			var err error
			if t[i], err = run(c.entries, c.trace); err != nil {
				return Costs{}, err
			}
		}
		fib, hit, miss = append(fib, t[0]), append(hit, t[1]), append(miss, max(0, t[3]-t[2]))
	}
	if err := r.Resize(0); err != nil {
		return Costs{}, err
	}
	return Costs{FIB: median(fib), Hit: median(hit), Miss: median(miss)}, nil
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}
