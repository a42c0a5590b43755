package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
)

// RealVRPs are the bundled real VRPs (table.VRPs2024).
func RealVRPs() ([]rpki.VRP, error) {
	f, err := table.VRPs2024()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return rpki.ReadCSV(f)
}

// SynthesizeVRPs makes n VRPs from tables' prefixes, in the proportion of the
// families given, as the lab announces them (origin lab.UpstreamASN: BIRD's path):
// 80% valid for their route (max length its own), 10% of another origin (invalid),
// 10% a shorter prefix whose max length stops short of the route (invalid: too
// long). The same seed gives the same VRPs.
func SynthesizeVRPs(n int, seed uint64, tables ...[]table.Route) ([]rpki.VRP, error) {
	var all []table.Route
	for _, t := range tables {
		all = append(all, t...)
	}
	if n > len(all) {
		return nil, fmt.Errorf("bench: %d VRPs from %d routes: at most one per route", n, len(all))
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]rpki.VRP, 0, n)
	for _, i := range rng.Perm(len(all))[:n] {
		r := all[i]
		v := rpki.VRP{Prefix: r.Prefix, MaxLength: r.Prefix.Bits(), ASN: lab.UpstreamASN}
		switch k := rng.IntN(10); {
		case k == 0:
			v.ASN = 64999
		case k == 1 && r.Prefix.Bits() > 8:
			v.Prefix, _ = r.Prefix.Addr().Prefix(r.Prefix.Bits() - 1)
			v.MaxLength = v.Prefix.Bits()
		}
		out = append(out, v)
	}
	return out, nil
}

// LateVRPs is what the node's choice not to wait for its validators costs, and
// what waiting would have cost: a full table is in the FIB, all not found, when the
// validator's set arrives.
type LateVRPs struct {
	Routes, VRPs, Invalid int
	// Transfer is from the validator's start with the set to the node holding all
	// of it: what every session's start waits when the sessions wait for the first
	// set (rpki.wait).
	Transfer time.Duration
	// Recheck is from the node holding the set to the FIB without the invalid
	// routes (reject): the routes the set covers checked again (patch 5), and the
	// window in which invalid routes were forwarded, on top of Transfer.
	Recheck time.Duration
}

// MeasureLateVRPs loads routes with a validator that holds no VRPs, then gives it
// vrps and times the node (rpki.invalid: reject) until the invalid routes have left
// its FIB.
func MeasureLateVRPs(ctx context.Context, nodeBin, dir string, routes []table.Route, vrps []rpki.VRP) (l LateVRPs, err error) {
	tb := rpki.NewTable(vrps)
	l.Routes, l.VRPs = len(routes), tb.Len() // distinct
	for _, r := range append(lab.AllRoutes(), lab.ExtendedNexthopRoute) {
		if r.Prefix.Addr().Is4() && tb.Validate(r.Prefix, lab.UpstreamASN) == rpki.Invalid {
			l.Invalid++
		}
	}
	for _, r := range routes {
		if tb.Validate(r.Prefix, lab.UpstreamASN) == rpki.Invalid {
			l.Invalid++
		}
	}
	// The validator starts with no VRPs (the node's sessions wait rpki.wait for a
	// first set it may not send, then start), and is restarted with the set once the
	// table is in: the node gets it as a first set, as from a validator that came up
	// late. It reads its file once (every second would cost it most of a core).
	err = withSkeleton(ctx, lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, Table: routes, VRPs: []rpki.VRP{}, ValidatorRefresh: time.Hour}, func(sk *lab.Skeleton) error {
		var c Convergence
		if err := c.measure(ctx, sk, routes, ConvergenceOptions{NoBird: true}, nil); err != nil {
			return err
		}
		total := float64(len(routes) + lab.Routes4())
		start := time.Now()
		if err := sk.RestartValidator(vrps); err != nil {
			return err
		}
		var held time.Time
		return lab.WaitFor(ctx, 5*time.Minute, "the invalid routes to leave the FIB", func() (bool, error) {
			m, err := sk.Metrics()
			if err != nil {
				return false, err
			}
			now := time.Now()
			if held.IsZero() && m[`fibfleet_rpki_vrps{validator="`+lab.ValidatorAddr+`"}`] >= float64(l.VRPs) {
				held = now
				l.Transfer = held.Sub(start)
			}
			if !held.IsZero() && m[`fibfleet_fib_routes{family="ipv4"}`] == total-float64(l.Invalid) {
				l.Recheck = now.Sub(held)
				return true, nil
			}
			return false, nil
		})
	})
	return l, err
}
