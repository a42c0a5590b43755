package main

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// Calibration: rounds (the median is kept), and when the
// table's size has moved enough since the last calibration to measure again.
const (
	calibrationRounds = 5
	recalibrateShare  = 0.25
	recalibrateEvery  = 30 * time.Second
	// settledShare: the table counts as settled when its size moves by less than
	// this share a second. A full table's load moves it by about 1% a second; an
	// Internet table's churn leaves its size within a few routes.
	settledShare = 0.001
)

// cacheLoop runs the destination cache: its sizer ticks every interval, and the cost
// model is calibrated on this machine when the table is loaded (End-of-RIB) and again
// when the table's size changes by a quarter.
type cacheLoop struct {
	dp       *dataplane.Dataplane
	fib      *fib.FIB
	sizer    *cache.Sizer
	log      *slog.Logger
	interval time.Duration
	// supported is false on the kernel backend: its answers are MACs, which the
	// cache (nexthop ids) does not hold, so the cache stays off there.
	supported bool
	loaded    chan struct{}

	mu           sync.Mutex
	costs        [2]cache.Costs
	calibratedAt [2]int // routes at the last calibration (-1: never)
	calibratedOn [2]time.Time

	resizes     [2]atomic.Uint64
	regimes     sync.Map // "family/regime" -> *atomic.Uint64
	calibrateOK [2]atomic.Bool

	// routes at the last calibrate call, for the table's rate of change: only
	// run's goroutine touches them.
	seen   [2]int
	seenOn time.Time
}

// newCacheLoop starts with the cache off; the fleet's agent applies the policy.
func newCacheLoop(dp *dataplane.Dataplane, f *fib.FIB, cfg Config, log *slog.Logger) (*cacheLoop, error) {
	l := &cacheLoop{dp: dp, fib: f, sizer: cache.NewSizer(dp.Cache(), log), log: log, interval: cfg.Cache.Interval,
		supported: dataplane.Backend(cfg.FIB.Backend) != dataplane.BackendKernel, loaded: make(chan struct{}, 1),
		calibratedAt: [2]int{-1, -1}}
	return l, nil
}

// applyPolicy sizes the cache by a policy (the fleet's, or the config file's): off
// whatever the policy on the kernel backend.
func (l *cacheLoop) applyPolicy(p cache.Policy) error {
	if !l.supported && p.Mode != cache.Off {
		l.log.Warn("the destination cache does not run in front of the kernel backend (bpf_fib_lookup answers MACs, the cache holds nexthop ids): cache off",
			"policy_mode", p.Mode)
		p = cache.Policy{Mode: cache.Off}
	}
	return l.sizer.Apply(p)
}

// tableLoaded says a neighbour's initial dump is in the dataplane: calibrate.
func (l *cacheLoop) tableLoaded() {
	select {
	case l.loaded <- struct{}{}:
	default:
	}
}

func (l *cacheLoop) run(ctx context.Context) {
	tick := time.NewTicker(l.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.loaded:
			l.calibrate(true)
		case <-tick.C:
			l.calibrate(false)
			reps, err := l.sizer.Tick()
			if err != nil {
				l.log.Warn("cache interval", "err", err)
			}
			for _, r := range reps {
				if r.Decision.Changed {
					l.resizes[r.Family].Add(1)
				}
				if r.Decision.Regime != "" {
					l.regime(r.Family, r.Decision.Regime).Add(1)
				}
			}
		}
	}
}

func (l *cacheLoop) regime(f dcache.Family, r cache.Regime) *atomic.Uint64 {
	c, _ := l.regimes.LoadOrStore(f.String()+"/"+string(r), new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// calibrationDue says whether to measure a family's costs: forced (a table just
// loaded), or, once the table has settled, never measured or its size moved by a
// quarter (and not within the last 30s). Not while a table loads: each run is about
// a second of CPU, and a load's CPU is what the node is short of; the costs
// measured half way through a load are not the loaded table's anyway.
func calibrationDue(force bool, routes, at int, on time.Time, prev int, prevOn, now time.Time) bool {
	if routes == 0 {
		return false
	}
	if force {
		return true
	}
	if prevOn.IsZero() || !now.After(prevOn) {
		return false // no rate yet
	}
	rate := float64(abs(routes-prev)) / now.Sub(prevOn).Seconds()
	if rate > settledShare*float64(routes) {
		return false
	}
	moved := at < 0 || float64(abs(routes-at)) > recalibrateShare*float64(max(at, 1))
	return moved && now.Sub(on) > recalibrateEvery
}

// calibrate measures each family's costs when due (calibrationDue).
func (l *cacheLoop) calibrate(force bool) {
	if !l.supported {
		return
	}
	st := l.fib.Stats()
	routes := [2]int{st.RoutesV4, st.RoutesV6}
	now := time.Now()
	prev, prevOn := l.seen, l.seenOn
	l.seen, l.seenOn = routes, now
	for f := range 2 {
		l.mu.Lock()
		at, on := l.calibratedAt[f], l.calibratedOn[f]
		l.mu.Unlock()
		if !calibrationDue(force, routes[f], at, on, prev[f], prevOn, now) {
			continue
		}
		fam := dcache.Family(f)
		start := time.Now()
		c, err := l.measure(fam)
		if err != nil {
			l.log.Warn("cache cost calibration failed; the controller keeps the last figures", "family", fam.String(), "err", err)
			l.mu.Lock()
			l.calibratedOn[f] = time.Now()
			l.mu.Unlock()
			continue
		}
		l.mu.Lock()
		l.costs[f], l.calibratedAt[f], l.calibratedOn[f] = c, routes[f], time.Now()
		l.mu.Unlock()
		l.calibrateOK[f].Store(true)
		l.sizer.SetCosts(fam, c)
		l.log.Info("cache cost model calibrated (BPF test runs of the production path)", "family", fam.String(), "routes", routes[f],
			"fib_ns", round1(c.FIB), "hit_ns", round1(c.Hit), "miss_extra_ns", round1(c.Miss), "took", time.Since(start).Round(time.Millisecond))
	}
}

// measure runs the calibration for one family on a probe sharing the node's FIB maps
// (the probe has its own cache, so the forwarding cache is untouched).
func (l *cacheLoop) measure(f dcache.Family) (cache.Costs, error) {
	dests := l.fib.SampleDestinations(f == dcache.IPv6, cache.CalibrationDestinations, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)))
	if f == dcache.IPv6 {
		p, err := dataplane.NewProbe6(l.dp, cache.CalibrationTrace)
		if err != nil {
			return cache.Costs{}, err
		}
		defer p.Close()
		return cache.Calibrate(p.Runner(dataplane.Mech6FIBCached), dests, calibrationRounds)
	}
	p, err := dataplane.NewProbe(l.dp, cache.CalibrationTrace)
	if err != nil {
		return cache.Costs{}, err
	}
	defer p.Close()
	return cache.Calibrate(p.Runner(dataplane.MechFIB4Cached), dests, calibrationRounds)
}

// Costs are the calibrated costs and whether each family has them.
func (l *cacheLoop) Costs() ([2]cache.Costs, [2]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.costs, [2]bool{l.calibrateOK[0].Load(), l.calibrateOK[1].Load()}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func round1(x float64) float64 { return float64(int64(x*10)) / 10 }

func (l *cacheLoop) status() nodeapi.Cache {
	var out nodeapi.Cache
	out.Epoch, _ = l.dp.Cache().Epoch()
	costs, ok := l.Costs()
	for _, r := range l.sizer.Reports() {
		f := r.Family
		tot, _ := l.dp.Cache().Stats(f)
		n := l.dp.Cache().Entries(f)
		c := nodeapi.CacheReport{Family: f.String(), Mode: string(l.sizer.Policy().Mode), Entries: n, BytesPerCPU: n / 4 * dcache.SetBytes[f],
			Lookups: r.Interval.Lookups, GhostHits: r.Interval.GhostHits, WorkingSet: r.WorkingSet, HitWorkingSet: r.HitWorkingSet,
			Regime: string(r.Decision.Regime), Reason: r.Decision.Reason, Costs: costs[f], Calibrated: ok[f], Totals: tot}
		if r.Interval.Lookups > 0 {
			c.HitRate = float64(r.Interval.Hits) / float64(r.Interval.Lookups)
		}
		out.Families = append(out.Families, c)
	}
	return out
}
