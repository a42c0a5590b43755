package main

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/spf13/cobra"
)

func newBlackhole(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "blackhole",
		Short: "Drop all traffic to a destination on every node (remotely triggered blackhole, RFC 7999)",
		Long: `A blackhole is held in etcd: every node drops the destination's traffic in XDP
(counted under the blackhole reason) and announces the prefix with BLACKHOLE and
NO_EXPORT to the upstreams whose export sets blackholes, so that the attack traffic
stops before the transit link. A prefix may be as long as /32 or /128.`,
		Args: noArgs,
	}
	cmd.AddCommand(newBlackholeAdd(g), newBlackholeDel(g), newBlackholeList(g))
	return cmd
}

// blackholeResult is `ctl blackhole add`'s and `del`'s document.
type blackholeResult struct {
	Prefix  netip.Prefix `json:"prefix"`
	Removed bool         `json:"removed,omitempty"`
	Until   time.Time    `json:"until,omitzero"`
	// Revision is the etcd revision of the change; Applied the nodes that applied it
	// within --timeout, Missing those that did not.
	Revision int64     `json:"revision"`
	Applied  []ackView `json:"applied"`
	Missing  []string  `json:"missing,omitempty"`
}

// parseDestination reads a prefix, or an address as its host prefix.
func parseDestination(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, usagef("%q: give an address (198.51.100.7) or a prefix (198.51.100.0/28)", s)
	}
	return p, nil
}

// parseUntil reads --until: a time (RFC 3339) or a duration from now.
func parseUntil(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--until %s: give a positive duration", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--until %q: give a duration (2h, 30m) or a time (2026-12-05T18:00:00Z)", s)
	}
	return t, nil
}

func newBlackholeAdd(g *globals) *cobra.Command {
	var until, reason string
	cmd := &cobra.Command{
		Use:   "add ADDRESS|PREFIX",
		Short: "Blackhole a destination on every node, until deleted or --until",
		Long: `add writes the blackhole in etcd and waits (within --timeout) until every registered
node reports it applied: it then drops the destination's traffic and announces it to
the upstreams that take blackholes. Exit status 1 if a node did not apply it in time.
--until ends it by the nodes' clocks (etcd forgets it 10 minutes later); adding the
same prefix again replaces it.`,
		Example: "  ctl blackhole add 198.51.100.7 --until 2h --reason 'DDoS, ticket 4711'\n  ctl blackhole add 2001:db8::7/128",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseDestination(args[0])
			if err != nil {
				return err
			}
			u, err := parseUntil(until, time.Now())
			if err != nil {
				return err
			}
			if err := cluster.CheckBlackhole(p); err != nil {
				return usagef("%v", err)
			}
			return changeBlackhole(cmd, g, p, func(s *cluster.Store) (int64, error) {
				return s.AddBlackhole(cmd.Context(), cluster.Blackhole{Prefix: p, Until: u.UTC(), Reason: reason})
			}, blackholeResult{Prefix: p, Until: u})
		},
	}
	cmd.Flags().StringVar(&until, "until", "", "when it ends: a duration from now (2h) or a time (RFC 3339); default: until deleted")
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept beside it in etcd")
	return cmd
}

func newBlackholeDel(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "del ADDRESS|PREFIX",
		Short:   "End a blackhole: every node forwards the destination's traffic again",
		Long:    `del removes the blackhole from etcd and waits (within --timeout) until every registered node reports it applied.`,
		Example: "  ctl blackhole del 198.51.100.7",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseDestination(args[0])
			if err != nil {
				return err
			}
			return changeBlackhole(cmd, g, p, func(s *cluster.Store) (int64, error) {
				return s.DeleteBlackhole(cmd.Context(), p)
			}, blackholeResult{Prefix: p, Removed: true})
		},
	}
}

// changeBlackhole writes a change and waits for the registered nodes to apply it.
func changeBlackhole(cmd *cobra.Command, g *globals, p netip.Prefix, write func(*cluster.Store) (int64, error), res blackholeResult) error {
	ctx, cancel := g.context(cmd)
	defer cancel()
	fv, err := g.open(ctx, "")
	if err != nil {
		return err
	}
	defer fv.Close()
	if res.Revision, err = write(fv.store); err != nil {
		return err
	}
	var nodes []string
	for _, n := range fv.registered {
		nodes = append(nodes, n.Name)
	}
	acks, missing, err := fv.store.WaitAppliedFunc(ctx, nodes, func(a cluster.Applied) bool { return a.BlackholeRevision >= res.Revision })
	if err != nil {
		return err
	}
	res.Applied, res.Missing = []ackView{}, missing
	for _, a := range acks {
		res.Applied = append(res.Applied, ackView{Node: a.Node, AfterMilli: float64(a.After.Microseconds()) / 1000})
	}
	if err := g.render(res, func(w io.Writer) {
		what := "blackholed"
		switch {
		case res.Removed:
			what = "no longer blackholed"
		case !res.Until.IsZero():
			what = "blackholed until " + res.Until.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s %s (etcd revision %d)\n", p, what, res.Revision)
		for _, a := range res.Applied {
			fmt.Fprintf(w, "  applied by %s\tafter %s\n", a.Node, ms(time.Duration(a.AfterMilli*1e6)))
		}
		for _, m := range res.Missing {
			fmt.Fprintf(w, "  NOT applied by %s\twithin %s\n", m, g.timeout)
		}
	}); err != nil {
		return err
	}
	if len(res.Missing) > 0 {
		return fmt.Errorf("%d node(s) did not apply the change within %s: %s (are they running? ctl status)", len(res.Missing), g.timeout, strings.Join(res.Missing, ", "))
	}
	return nil
}

// blackholeRow is one line of `ctl blackhole list`.
type blackholeRow struct {
	Prefix netip.Prefix `json:"prefix"`
	Until  time.Time    `json:"until,omitzero"`
	Active bool         `json:"active"`
	Reason string       `json:"reason,omitempty"`
	Added  time.Time    `json:"added"`
	// AppliedBy are the registered nodes that applied it (or its expiry); Of how
	// many are registered.
	AppliedBy []string `json:"applied_by"`
	Of        int      `json:"of"`
}

func newBlackholeList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "The fleet's blackholes, and how many nodes apply each",
		Long:    `list shows every blackhole in etcd (one whose --until passed stays listed as expired for 10 minutes), why, and which of the registered nodes have applied it.`,
		Example: "  ctl blackhole list\n  ctl blackhole list -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.context(cmd)
			defer cancel()
			fv, err := g.open(ctx, "")
			if err != nil {
				return err
			}
			defer fv.Close()
			all, err := fv.store.Blackholes(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			rows := make([]blackholeRow, 0, len(all))
			for _, b := range all {
				r := blackholeRow{Prefix: b.Prefix, Until: b.Until, Active: b.Active(now), Reason: b.Reason, Added: b.Added, AppliedBy: []string{}, Of: len(fv.registered)}
				for _, n := range fv.registered {
					if fv.applied[n.Name].BlackholeRevision >= b.Revision {
						r.AppliedBy = append(r.AppliedBy, n.Name)
					}
				}
				rows = append(rows, r)
			}
			return g.render(rows, func(w io.Writer) {
				fmt.Fprintln(w, "PREFIX\tUNTIL\tAPPLIED\tADDED\tREASON")
				for _, r := range rows {
					until, reason := "- (until deleted)", r.Reason
					switch {
					case !r.Active:
						until = "expired " + r.Until.Local().Format(time.RFC3339)
					case !r.Until.IsZero():
						until = r.Until.Local().Format(time.RFC3339) + " (in " + time.Until(r.Until).Round(time.Second).String() + ")"
					}
					if reason == "" {
						reason = "-"
					}
					fmt.Fprintf(w, "%s\t%s\t%d/%d nodes\t%s\t%s\n", r.Prefix, until, len(r.AppliedBy), r.Of, r.Added.Local().Format(time.RFC3339), reason)
				}
				if len(rows) == 0 {
					fmt.Fprintln(w, "no blackholes")
				}
			})
		},
	}
}
