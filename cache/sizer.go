package cache

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/fibfleet/fibfleet/dcache"
)

// Dataplane is what the Sizer reads and sizes: a loaded program's destination cache
// (dataplane.Cache, of the forwarding program or of a probe).
type Dataplane interface {
	Stats(dcache.Family) (dcache.Stats, error)
	WorkingSet(f dcache.Family, reset bool) (float64, error)
	HitWorkingSet(f dcache.Family, reset bool) (float64, error)
	Resize(f dcache.Family, entries int) error
	Entries(dcache.Family) int
}

// Mode is how the cache is sized.
type Mode string

const (
	// Off: no cache (lookups and the working set are still measured).
	Off Mode = "off"
	// Fixed: the entries the policy gives, per family, whatever the traffic.
	Fixed Mode = "fixed"
	// Auto: the Controller sizes each family within MinEntries and MaxEntries, or
	// turns it off, from the measurements and the calibrated costs.
	Auto Mode = "auto"
)

// Policy is the cache's configuration (the node's file today; the fleet's, in etcd,
// later).
type Policy struct {
	Mode Mode
	// Entries are the fixed sizes, IPv4 and IPv6 (0: that family off).
	Entries [2]int
	// MinEntries and MaxEntries bound auto.
	MinEntries, MaxEntries int
	// TargetHitRate, in auto, stops the cache growing once its hit rate reaches it
	// (0: grow while twice the size saves more): a fleet that knows what hit rate
	// is enough spares the memory and the colder lines of a bigger table.
	TargetHitRate float64
}

// FlatPolicy is a Policy with one field per family: how the node's configuration
// file, the fleet's keys in etcd and ctl's output all write it.
type FlatPolicy struct {
	Mode       string `json:"mode" yaml:"mode"`
	EntriesV4  int    `json:"entries_v4,omitempty" yaml:"entries_v4"`
	EntriesV6  int    `json:"entries_v6,omitempty" yaml:"entries_v6"`
	MinEntries int    `json:"min_entries,omitempty" yaml:"min_entries"`
	MaxEntries int    `json:"max_entries,omitempty" yaml:"max_entries"`
	// TargetHitRate stops auto growing once reached (0: none).
	TargetHitRate float64 `json:"target_hit_rate,omitempty" yaml:"target_hit_rate"`
}

// Policy is f as a Policy.
func (f FlatPolicy) Policy() Policy {
	return Policy{Mode: Mode(f.Mode), Entries: [2]int{f.EntriesV4, f.EntriesV6}, MinEntries: f.MinEntries, MaxEntries: f.MaxEntries, TargetHitRate: f.TargetHitRate}
}

// Flat is p with one field per family.
func (p Policy) Flat() FlatPolicy {
	return FlatPolicy{Mode: string(p.Mode), EntriesV4: p.Entries[0], EntriesV6: p.Entries[1], MinEntries: p.MinEntries, MaxEntries: p.MaxEntries, TargetHitRate: p.TargetHitRate}
}

// Validate reports every bad field, each with what to do.
func (p Policy) Validate() error {
	var errs []error
	pow := func(what string, n int, zeroOK bool) {
		if n == 0 && zeroOK {
			return
		}
		if err := dcache.CheckEntries(n); err != nil || n == 0 {
			errs = append(errs, fmt.Errorf("%s %d: use a power of two from %d to %d", what, n, dcache.MinEntries, dcache.MaxEntries))
		}
	}
	switch p.Mode {
	case Off:
	case Fixed:
		pow("cache.entries_v4", p.Entries[0], true)
		pow("cache.entries_v6", p.Entries[1], true)
	case Auto:
		pow("cache.min_entries", p.MinEntries, false)
		pow("cache.max_entries", p.MaxEntries, false)
		if p.MinEntries > p.MaxEntries {
			errs = append(errs, fmt.Errorf("cache.min_entries %d is above cache.max_entries %d", p.MinEntries, p.MaxEntries))
		}
		if !(p.TargetHitRate >= 0 && p.TargetHitRate <= 1) {
			errs = append(errs, fmt.Errorf("cache.target_hit_rate %v: use a fraction from 0 (none) to 1, such as 0.9", p.TargetHitRate))
		}
	default:
		errs = append(errs, fmt.Errorf("cache.mode %q: use off, fixed or auto", p.Mode))
	}
	return errors.Join(errs...)
}

// Sizing defaults for auto: the controller must see the same verdict Confirm intervals
// in a row, and a change stands Hold intervals (so no flapping: at most one change in
// Hold+1 intervals); a change must promise 1% of a lookup.
const (
	DefaultConfirm = 2
	DefaultHold    = 5
	DefaultMargin  = 0.01
)

// Report is one family's interval: what was measured and what the sizer decided.
type Report struct {
	Family   dcache.Family
	Mode     Mode
	Entries  int
	Interval dcache.Stats
	// WorkingSet is the interval's distinct destinations (estimated), HitWorkingSet
	// those of its hits.
	WorkingSet, HitWorkingSet float64
	// Decision is the controller's (auto only).
	Decision Decision
	// Costs is the cost model the decision used; Calibrated says whether there is one.
	Costs      Costs
	Calibrated bool
}

// Sizer applies a Policy to a Dataplane's cache, interval by interval. Its methods
// are safe for concurrent use.
type Sizer struct {
	dp  Dataplane
	log *slog.Logger

	mu         sync.Mutex
	policy     Policy
	ctrl       [2]*Controller
	costs      [2]Costs
	calibrated [2]bool
	last       [2]dcache.Stats
	reports    [2]Report
}

// NewSizer sizes dp's cache; it is off until Apply.
func NewSizer(dp Dataplane, log *slog.Logger) *Sizer {
	if log == nil {
		log = slog.Default()
	}
	s := &Sizer{dp: dp, log: log, policy: Policy{Mode: Off}}
	// The first interval starts now.
	for f := range s.last {
		s.last[f], _ = dp.Stats(dcache.Family(f))
		_, _ = dp.WorkingSet(dcache.Family(f), true)
		_, _ = dp.HitWorkingSet(dcache.Family(f), true)
		s.reports[f] = Report{Family: dcache.Family(f), Mode: Off}
	}
	return s
}

// Apply validates a policy and applies it: off and fixed sizes at once; auto starts
// each family off and lets the controller decide from the next intervals.
func (s *Sizer) Apply(p Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("cache policy: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range 2 {
		fam := dcache.Family(f)
		want := 0
		s.ctrl[f] = nil
		switch p.Mode {
		case Fixed:
			want = p.Entries[f]
		case Auto:
			c, err := NewController(Config{MinEntries: p.MinEntries, MaxEntries: p.MaxEntries, TargetHitRate: p.TargetHitRate,
				Margin: DefaultMargin, Confirm: DefaultConfirm, Hold: DefaultHold})
			if err != nil {
				return err
			}
			s.ctrl[f] = c
		}
		if s.dp.Entries(fam) != want {
			if err := s.dp.Resize(fam, want); err != nil {
				return err
			}
		}
	}
	s.policy = p
	s.log.Info("cache policy applied", "mode", p.Mode, "entries_v4", s.dp.Entries(dcache.IPv4), "entries_v6", s.dp.Entries(dcache.IPv6),
		"min_entries", p.MinEntries, "max_entries", p.MaxEntries, "target_hit_rate", p.TargetHitRate)
	return nil
}

// Policy is the policy in force.
func (s *Sizer) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// SetCosts gives a family's calibrated cost model (dataplane measurements on this
// machine); auto keeps a family off until it has one.
func (s *Sizer) SetCosts(f dcache.Family, c Costs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.costs[f&1], s.calibrated[f&1] = c, true
}

// Tick ends an interval: it reads each family's counters and working set (starting
// the next interval), and in auto mode steps the controller and applies its size.
// Every change is logged with its reason.
func (s *Sizer) Tick() ([2]Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for f := range 2 {
		fam := dcache.Family(f)
		now, err := s.dp.Stats(fam)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ws, err := s.dp.WorkingSet(fam, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hws, err := s.dp.HitWorkingSet(fam, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := Report{Family: fam, Mode: s.policy.Mode, Interval: now.Sub(s.last[f]), WorkingSet: ws, HitWorkingSet: hws, Costs: s.costs[f], Calibrated: s.calibrated[f]}
		s.last[f] = now
		if c := s.ctrl[f]; c != nil {
			if !s.calibrated[f] {
				r.Decision = Decision{Entries: c.Entries(), Regime: Idle, Reason: "the cost model is not calibrated yet: the cache stays as it is"}
			} else {
				in := r.Interval
				r.Decision = c.Step(Stats{Lookups: in.Lookups, Hits: in.Hits, GhostHits: in.GhostHits, WorkingSet: ws, HitWorkingSet: hws}, s.costs[f])
				d := r.Decision
				attrs := []any{"family", fam.String(), "entries", d.Entries, "regime", string(d.Regime),
					"hit_rate", round3(d.HitRate), "saving_ns", round3(d.Saving), "reason", d.Reason}
				if !d.Changed {
					s.log.Debug("cache decision", attrs...)
				} else if err := s.dp.Resize(fam, d.Entries); err != nil {
					errs = append(errs, fmt.Errorf("cache: apply the controller's %d %s entries: %w", d.Entries, fam, err))
				} else {
					s.log.Info("cache resized", attrs...)
				}
			}
		}
		r.Entries = s.dp.Entries(fam)
		s.reports[f] = r
	}
	return s.reports, errors.Join(errs...)
}

// Reports are the last interval's reports.
func (s *Sizer) Reports() [2]Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reports
}

func round3(x float64) float64 { return float64(int64(x*1000)) / 1000 }
