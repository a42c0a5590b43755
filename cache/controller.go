// Package cache decides, per address family, whether the dataplane's destination
// cache pays and how big it should be. It is pure Go: the dataplane measures (hits,
// misses, ghost hits, a working-set estimate) and the node calibrates what a hit, a
// miss and a FIB lookup cost on its own hardware; the Controller turns each
// interval's figures into a size, with the reason, and never flaps.
//
// Why a controller and not a fixed cache: a cache in front of a slow FIB (the kernel's
// fib_trie, an LPM trie) saves most of the lookup when traffic has locality, but in
// front of a fast compiled FIB, or under a flood of one-packet destinations, every
// probe is a cost with nothing to show for it (the 2024 dst cache series lost 2.8% at
// 8,000 flows; Linux's old route cache collapsed under random destinations).
package cache

import (
	"fmt"
	"math"
	"math/bits"
)

// Stats are one interval's counters of one family's cache (differences, not totals).
type Stats struct {
	// Lookups are the packets that consulted the cache (or would have, when off).
	Lookups uint64
	// Hits were answered by the cache; stale entries count as misses.
	Hits uint64
	// GhostHits are misses that a cache twice the size would have hit.
	GhostHits uint64
	// WorkingSet estimates the distinct destinations of the interval (measured
	// whether the cache is on or off); HitWorkingSet those among hits (0: unknown),
	// reported with the verdict.
	WorkingSet, HitWorkingSet float64
}

// Costs is the calibrated cost model, in ns per packet: Hit is a probe that hits,
// Miss the extra a probe that misses (and inserts) adds to the FIB lookup, FIB the
// lookup alone. All three grow as the working set outgrows the CPU caches: Curve,
// when set, has them at several working sets (ascending), and At gives them at any.
type Costs struct {
	Hit, Miss, FIB float64
	Curve          []CostPoint `json:",omitempty"`
}

// CostPoint is the costs at one working set.
type CostPoint struct {
	WorkingSet, Hit, Miss, FIB float64
}

// At returns the costs at a working set: interpolated on the log of the working set
// between the curve's points, the nearest point's outside them.
func (c Costs) At(ws float64) Costs {
	n := len(c.Curve)
	if n == 0 {
		return Costs{Hit: c.Hit, Miss: c.Miss, FIB: c.FIB}
	}
	p := c.Curve[0]
	switch {
	case ws <= c.Curve[0].WorkingSet:
	case ws >= c.Curve[n-1].WorkingSet:
		p = c.Curve[n-1]
	default:
		i := 1
		for c.Curve[i].WorkingSet < ws {
			i++
		}
		a, b := c.Curve[i-1], c.Curve[i]
		t := math.Log(ws/a.WorkingSet) / math.Log(b.WorkingSet/a.WorkingSet)
		p = CostPoint{Hit: a.Hit + t*(b.Hit-a.Hit), Miss: a.Miss + t*(b.Miss-a.Miss), FIB: a.FIB + t*(b.FIB-a.FIB)}
	}
	return Costs{Hit: p.Hit, Miss: p.Miss, FIB: p.FIB}
}

// Saving is what the cache saves per packet, in ns, at hit rate h (negative: it costs).
func (c Costs) Saving(h float64) float64 { return h*(c.FIB-c.Hit) - (1-h)*c.Miss }

// Config bounds the controller.
type Config struct {
	// MinEntries and MaxEntries bound the size (powers of two); the cache is either
	// off or within them.
	MinEntries, MaxEntries int
	// TargetHitRate, when above 0, is a hit rate that is enough: at or above it the
	// cache does not grow, whatever ghost hits promise.
	TargetHitRate float64
	// Margin is the saving, as a fraction of the FIB cost, a change must promise
	// (0.01 in production: the cache must never cost more than 1%).
	Margin float64
	// Confirm is how many consecutive intervals must agree before a change, and Hold
	// how many intervals a change stands before the next: together, no flapping.
	Confirm, Hold int
}

// Regime is what the controller made of an interval.
type Regime string

const (
	Pays       Regime = "pays"        // the cache saves more than the margin
	Undersized Regime = "undersized"  // twice the size would save markedly more
	Oversized  Regime = "oversized"   // the working set fits in half the size
	NoLocality Regime = "no_locality" // the cache would not save the margin (flood, or a FIB as cheap as a hit)
	Idle       Regime = "idle"        // too few packets to judge
)

// Decision is the controller's output for one interval: the size to have (0: off),
// what it saw and why.
type Decision struct {
	Entries int
	Regime  Regime
	// HitRate is measured (cache on) or predicted from the working set (cache off);
	// Saving is Costs.Saving at that rate.
	HitRate, Saving float64
	Changed         bool
	Reason          string
}

// Controller sizes one family's cache from interval to interval.
type Controller struct {
	cfg     Config
	entries int
	want    int // the size the last intervals pointed to
	agree   int // how many in a row
	held    int // intervals since the last change
	steps   int // intervals since the start
	// noLocalityAt is the working set of the last interval measured (cache on) to
	// have no locality (0: none), at interval noLocalityStep.
	noLocalityAt   float64
	noLocalityStep int
}

// MinLookups is the fewest packets in an interval the controller judges by.
const MinLookups = 1000

// NewController starts with the cache off.
func NewController(cfg Config) (*Controller, error) {
	if cfg.MinEntries < 1 || cfg.MaxEntries < cfg.MinEntries || bits.OnesCount(uint(cfg.MinEntries)) != 1 || bits.OnesCount(uint(cfg.MaxEntries)) != 1 {
		return nil, fmt.Errorf("cache: min %d and max %d entries: use powers of two with min <= max", cfg.MinEntries, cfg.MaxEntries)
	}
	if cfg.Margin < 0 || cfg.Confirm < 1 || cfg.Hold < 0 {
		return nil, fmt.Errorf("cache: margin %v, confirm %d, hold %d: use a margin >= 0, confirm >= 1 and hold >= 0", cfg.Margin, cfg.Confirm, cfg.Hold)
	}
	return &Controller{cfg: cfg, held: cfg.Hold}, nil
}

// Entries is the current size (0: off).
func (c *Controller) Entries() int { return c.entries }

// Step takes one interval's stats and the cost model and returns the decision.
func (c *Controller) Step(s Stats, costs Costs) Decision {
	c.held++
	c.steps++
	d := c.judge(s, costs)
	target := d.Entries
	// Intervals agree when they point the same way (off, smaller, the same, larger),
	// whatever the exact size: a working set near a power of two points at two sizes
	// in turn, and must not hold the cache off. The latest size is taken.
	if c.direction(target) == c.direction(c.want) {
		c.agree++
	} else {
		c.agree = 1
	}
	c.want = target
	d.Entries = c.entries
	if target != c.entries && c.agree >= c.cfg.Confirm && c.held > c.cfg.Hold {
		d.Reason = fmt.Sprintf("%s (%d intervals in a row): %d -> %d entries", d.Reason, c.agree, c.entries, target)
		c.entries, d.Entries, d.Changed, c.held = target, target, true, 0
	}
	return d
}

// direction classes a size against the current one: -2 off, -1 smaller, 0 the same,
// 1 larger.
func (c *Controller) direction(n int) int {
	switch {
	case n == c.entries:
		return 0
	case n == 0:
		return -2
	case n < c.entries:
		return -1
	}
	return 1
}

// Memory of a measured verdict of no locality: while the working set stays within a
// factor of noLocalityBand of the one it was measured at, and for noLocalityHold
// intervals, the cache stays off even if the working set alone predicts hits (in
// mixed traffic it does: half a flood is one-packet destinations the prediction
// cannot tell from flows).
const (
	noLocalityBand = 2.0
	noLocalityHold = 60
)

// judge says what size this interval alone points to, and why.
//
// A hit is credited with what a hit saves on the smallest working set calibrated (a
// lookup whose lines are in the CPU caches): hits are the destinations packets come
// back to, whose lookups were hot anyway; the costs at the interval's working set,
// which price a lookup among that many destinations in random order, would credit
// flows with savings their lookups never cost (measured: in front of the compiled
// IPv6 FIB, up to 12% more than with the cache off). A miss costs what it costs at the
// interval's working set: a flood's misses find the cache's lines cold.
func (c *Controller) judge(s Stats, all Costs) Decision {
	hot := all.At(0)
	costs := Costs{Hit: hot.Hit, FIB: hot.FIB, Miss: all.At(s.WorkingSet).Miss}
	margin := c.cfg.Margin * costs.FIB
	if s.Lookups < MinLookups {
		return Decision{Entries: c.entries, Regime: Idle, Reason: fmt.Sprintf("%d packets, fewer than %d: no change", s.Lookups, MinLookups)}
	}
	lookups := float64(s.Lookups)
	if c.entries == 0 {
		// Off: predict the hit rate of the largest cache from the working set. Each
		// distinct destination misses at least once; with a working set beyond the
		// cache, only the share that fits can hit.
		size := float64(c.cfg.MaxEntries)
		h := max(0, 1-s.WorkingSet/lookups) * min(1, size/max(s.WorkingSet, 1))
		sav := costs.Saving(h)
		if sav <= margin {
			return Decision{Regime: NoLocality, HitRate: h, Saving: sav,
				Reason: fmt.Sprintf("off: a %d-entry cache would hit %.1f%% and save %.1f ns of a %.1f ns lookup, under the %.1f ns margin", c.cfg.MaxEntries, 100*h, sav, costs.FIB, margin)}
		}
		if ws := c.noLocalityAt; ws > 0 && c.steps-c.noLocalityStep < noLocalityHold && s.WorkingSet < ws*noLocalityBand && s.WorkingSet > ws/noLocalityBand {
			return Decision{Regime: NoLocality, HitRate: h, Saving: sav,
				Reason: fmt.Sprintf("off: the working set (%.0f) predicts a %.1f%% hit rate, but the cache measured no locality at %.0f %d intervals ago: off until the traffic changes",
					s.WorkingSet, 100*h, ws, c.steps-c.noLocalityStep)}
		}
		n := c.fit(2 * s.WorkingSet)
		return Decision{Entries: n, Regime: Pays, HitRate: h, Saving: sav,
			Reason: fmt.Sprintf("off: the working set (%.0f destinations) predicts a %.1f%% hit rate saving %.1f ns: on at %d entries", s.WorkingSet, 100*h, sav, n)}
	}
	h := float64(s.Hits) / lookups
	g := float64(s.GhostHits) / lookups
	sav, sav2 := costs.Saving(h), costs.Saving(min(1, h+g))
	switch {
	case sav2-sav > margin && c.entries < c.cfg.MaxEntries && (c.cfg.TargetHitRate == 0 || h < c.cfg.TargetHitRate):
		return Decision{Entries: 2 * c.entries, Regime: Undersized, HitRate: h, Saving: sav,
			Reason: fmt.Sprintf("hit rate %.1f%%, ghost hits %.1f%%: twice the size would save %.1f ns more", 100*h, 100*g, sav2-sav)}
	case sav <= margin:
		c.noLocalityAt, c.noLocalityStep = s.WorkingSet, c.steps
		return Decision{Entries: 0, Regime: NoLocality, HitRate: h, Saving: sav,
			Reason: fmt.Sprintf("hit rate %.1f%% saves %.1f ns (a hit %.1f ns instead of a %.1f ns lookup; a miss +%.1f ns), under the %.1f ns margin (ghost hits %.1f%%, working set %.0f, of hits %.0f): off",
				100*h, sav, costs.Hit, costs.FIB, costs.Miss, margin, 100*g, s.WorkingSet, s.HitWorkingSet)}
	case s.WorkingSet < float64(c.entries)/4 && c.entries > c.cfg.MinEntries && g == 0:
		return Decision{Entries: c.entries / 2, Regime: Oversized, HitRate: h, Saving: sav,
			Reason: fmt.Sprintf("working set %.0f fits in a quarter of %d entries", s.WorkingSet, c.entries)}
	}
	return Decision{Entries: c.entries, Regime: Pays, HitRate: h, Saving: sav,
		Reason: fmt.Sprintf("hit rate %.1f%% saves %.1f ns per packet", 100*h, sav)}
}

// fit is the power of two within bounds closest above n.
func (c *Controller) fit(n float64) int {
	e := c.cfg.MinEntries
	for float64(e) < n && e < c.cfg.MaxEntries {
		e *= 2
	}
	return e
}
