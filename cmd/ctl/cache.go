package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/spf13/cobra"
)

func newCache(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "cache",
		Short: "The destination cache's policy (get, set) and flushes, fleet-wide or per node",
		Long: `The destination cache sits in front of each node's FIB. Its policy (mode off, fixed
or auto; fixed sizes; auto's bounds and target hit rate) is the fleet's, unless a node
has an override; a node without either uses its config file's. A flush makes every
cached destination stale at once, on every node (or one).`,
		Example: `  ctl cache get
  ctl cache set --mode auto --min 1024 --max 65536
  ctl cache flush --wait`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(newCacheGet(g), newCacheSet(g), newCacheFlush(g))
	return c
}

// policyView is a policy as ctl shows it: flat, as etcd and config files hold it.
type policyView cache.FlatPolicy

func view(p cache.Policy) policyView { return policyView(p.Flat()) }

func (v policyView) String() string {
	switch v.Mode {
	case "fixed":
		return fmt.Sprintf("fixed v4 %d v6 %d", v.EntriesV4, v.EntriesV6)
	case "auto":
		s := fmt.Sprintf("auto %d-%d", v.MinEntries, v.MaxEntries)
		if v.TargetHitRate > 0 {
			s += fmt.Sprintf(" target %.0f%%", 100*v.TargetHitRate)
		}
		return s
	case "":
		return "-"
	}
	return v.Mode
}

// cacheGet is `ctl cache get`'s document.
type cacheGet struct {
	Fleet     *policyView            `json:"fleet"`
	Revision  int64                  `json:"fleet_revision,omitempty"`
	Overrides map[string]overrideRow `json:"overrides"`
	Nodes     []nodePolicy           `json:"nodes"`
}

type overrideRow struct {
	Policy   policyView `json:"policy"`
	Revision int64      `json:"revision"`
}

// nodePolicy is what a node applied, as it reported it.
type nodePolicy struct {
	Node     string     `json:"node"`
	Source   string     `json:"source"`
	Policy   policyView `json:"policy"`
	Revision int64      `json:"revision"`
	Entries  [2]int     `json:"entries"`
}

func newCacheGet(g *globals) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show the fleet's policy, the nodes' overrides and what each node applied",
		Example: `  ctl cache get
  ctl cache get --node edge1 -o yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.context(cmd)
			defer cancel()
			fv, err := g.open(ctx, node)
			if err != nil {
				return err
			}
			defer fv.Close()
			s, applied, names := fv.store, fv.applied, fv.names
			out := cacheGet{Overrides: map[string]overrideRow{}}
			v, err := s.StoredPolicy(ctx, "")
			p, rev := v.Policy, v.Revision
			switch {
			case errors.Is(err, cluster.ErrNoPolicy):
			case err != nil:
				return err
			default:
				v := view(p)
				out.Fleet, out.Revision = &v, rev
			}
			ovs, err := s.Overrides(ctx)
			if err != nil {
				return err
			}
			for n, o := range ovs {
				if node == "" || n == node {
					out.Overrides[n] = overrideRow{Policy: view(o.Policy), Revision: o.Revision}
				}
			}
			for _, n := range names {
				if a, ok := applied[n]; ok && (node == "" || n == node) {
					out.Nodes = append(out.Nodes, nodePolicy{Node: n, Source: a.PolicySource, Policy: view(a.Policy()), Revision: a.PolicyRevision, Entries: a.Entries})
				}
			}
			return g.render(out, func(w io.Writer) {
				if out.Fleet != nil {
					fmt.Fprintf(w, "fleet policy:\t%s\t(revision %d)\n", out.Fleet, out.Revision)
				} else {
					fmt.Fprintf(w, "fleet policy:\tnone (nodes use their config files' unless overridden)\n")
				}
				for _, n := range names {
					if o, ok := out.Overrides[n]; ok {
						fmt.Fprintf(w, "override %s:\t%s\t(revision %d)\n", n, o.Policy, o.Revision)
					}
				}
				fmt.Fprintln(w, "\nNODE\tAPPLIED\tFROM\tREVISION\tENTRIES v4/v6")
				for _, n := range out.Nodes {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d/%d\n", n.Node, n.Policy, n.Source, n.Revision, n.Entries[0], n.Entries[1])
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "show this node's override and what it applied")
	return cmd
}

// setFlags are `ctl cache set`'s fields; only those given change.
type setFlags struct {
	node                   string
	mode                   string
	entriesV4, entriesV6   int
	minEntries, maxEntries int
	target                 float64
	dryRun, clear          bool
}

func newCacheSet(g *globals) *cobra.Command {
	var f setFlags
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change the fleet's cache policy, or one node's override",
		Long: `set changes the fields given (the others keep their values) of the fleet's policy,
or of one node's override with --node. The result is validated before etcd is asked
(sizes are powers of two from 4 to 262144 entries per CPU, min <= max, a target hit
rate from 0 to 1), then written with compare-and-swap: a concurrent change makes it fail
and nothing is written. --dry-run shows what each node would apply, and writes nothing.
--clear removes the policy (a node then follows the fleet's, the fleet its config files').`,
		Example: `  ctl cache set --mode auto --min 1024 --max 65536 --target-hit-rate 0.9
  ctl cache set --node edge1 --mode fixed --entries-v4 4096 --entries-v6 1024
  ctl cache set --mode off --dry-run
  ctl cache set --node edge1 --clear`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fields := []string{"mode", "entries-v4", "entries-v6", "min", "max", "target-hit-rate"}
			var given []string
			for _, n := range fields {
				if cmd.Flags().Changed(n) {
					given = append(given, n)
				}
			}
			switch {
			case f.clear && len(given) > 0:
				return usagef("--clear removes the policy: it takes no --%s", given[0])
			case !f.clear && len(given) == 0:
				return usagef("give a field to change (--%s) or --clear", strings.Join(fields, ", --"))
			}
			if cmd.Flags().Changed("mode") {
				switch cache.Mode(f.mode) {
				case cache.Off, cache.Fixed, cache.Auto:
				default:
					return usagef("--mode %q: use off, fixed or auto", f.mode)
				}
			}
			ctx, cancel := g.context(cmd)
			defer cancel()
			fv, err := g.open(ctx, f.node)
			if err != nil {
				return err
			}
			defer fv.Close()
			s, applied, names := fv.store, fv.applied, fv.names
			stored, err := s.StoredPolicy(ctx, f.node)
			cur, rev := stored.Policy, stored.Revision
			exists := err == nil
			if err != nil && !errors.Is(err, cluster.ErrNoPolicy) {
				return err
			}
			next := cur
			if f.clear {
				if !exists {
					return usagef("there is no %s to clear", policyName(f.node))
				}
			} else {
				set := map[string]func(){
					"mode": func() { next.Mode = cache.Mode(f.mode) }, "entries-v4": func() { next.Entries[0] = f.entriesV4 },
					"entries-v6": func() { next.Entries[1] = f.entriesV6 }, "min": func() { next.MinEntries = f.minEntries },
					"max": func() { next.MaxEntries = f.maxEntries }, "target-hit-rate": func() { next.TargetHitRate = f.target },
				}
				for _, n := range given {
					set[n]()
				}
				if err := next.Validate(); err != nil {
					return usageError{fmt.Errorf("the %s would be invalid, nothing written: %w", policyName(f.node), err)}
				}
			}
			if f.dryRun {
				return dryRun(ctx, g, s, names, applied, f.node, next, f.clear)
			}
			var newRev int64
			if f.clear {
				err = s.DeletePolicy(ctx, f.node, rev)
			} else {
				if !exists {
					rev = cluster.NoRevision
				}
				newRev, err = s.SetPolicy(ctx, f.node, next, rev)
			}
			if errors.Is(err, cluster.ErrConflict) {
				return fmt.Errorf("the %s changed while this command ran; nothing written: run it again", policyName(f.node))
			}
			if err != nil {
				return err
			}
			out := map[string]any{"target": policyName(f.node), "cleared": f.clear, "revision": newRev}
			if !f.clear {
				out["policy"] = view(next)
			}
			return g.render(out, func(w io.Writer) {
				if f.clear {
					fmt.Fprintf(w, "%s cleared\n", policyName(f.node))
				} else {
					fmt.Fprintf(w, "%s set: %s (revision %d)\n", policyName(f.node), view(next), newRev)
				}
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.node, "node", "", "change this node's override instead of the fleet's policy")
	fl.StringVar(&f.mode, "mode", "", "off, fixed or auto")
	fl.IntVar(&f.entriesV4, "entries-v4", 0, "fixed: IPv4 entries per CPU (a power of two, 0: off)")
	fl.IntVar(&f.entriesV6, "entries-v6", 0, "fixed: IPv6 entries per CPU (a power of two, 0: off)")
	fl.IntVar(&f.minEntries, "min", 0, "auto: fewest entries when on (a power of two)")
	fl.IntVar(&f.maxEntries, "max", 0, "auto: most entries (a power of two)")
	fl.Float64Var(&f.target, "target-hit-rate", 0, "auto: stop growing at this hit rate (0 to 1; 0: none)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "show what each node would apply; write nothing")
	fl.BoolVar(&f.clear, "clear", false, "remove the policy (the node's override with --node)")
	return cmd
}

func policyName(node string) string {
	if node == "" {
		return "fleet's policy"
	}
	return "override of node " + node
}

// dryRunRow is what one node would do.
type dryRunRow struct {
	Node    string     `json:"node"`
	Now     policyView `json:"now"`
	NowFrom string     `json:"now_from"`
	After   policyView `json:"after"`
	From    string     `json:"after_from"`
	Changes bool       `json:"changes"`
}

// dryRun shows, per node, the policy in force now and after the change, by precedence:
// the node's override, the fleet's policy, its config file's (as it reported it).
func dryRun(ctx context.Context, g *globals, s *cluster.Store, names []string, applied map[string]cluster.Applied, node string, next cache.Policy, clear bool) error {
	stored, ferr := s.StoredPolicy(ctx, "")
	fleet := stored.Policy
	hasFleet := ferr == nil
	ovs, err := s.Overrides(ctx)
	if err != nil {
		return err
	}
	var rows []dryRunRow
	for _, n := range names {
		a, ok := applied[n]
		if !ok {
			continue
		}
		r := dryRunRow{Node: n, Now: view(a.Policy()), NowFrom: a.PolicySource}
		ov, hasOv := ovs[n]
		f, hf := fleet, hasFleet
		switch {
		case node == n && clear:
			hasOv = false
		case node == n:
			ov, hasOv = cluster.Versioned{Policy: next}, true
		case node == "" && clear:
			hf = false
		case node == "":
			f, hf = next, true
		}
		switch {
		case hasOv:
			r.After, r.From = view(ov.Policy), "node"
		case hf:
			r.After, r.From = view(f), "fleet"
		case a.PolicySource == "config":
			r.After, r.From = r.Now, "config"
		default:
			r.After, r.From = policyView{Mode: "(its config file's)"}, "config"
		}
		r.Changes = r.After != r.Now
		rows = append(rows, r)
	}
	return g.render(map[string]any{"dry_run": true, "nodes": rows}, func(w io.Writer) {
		fmt.Fprintln(w, "dry run: nothing written")
		fmt.Fprintln(w, "NODE\tNOW\tFROM\tAFTER\tFROM\tCHANGES")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, r.Now, r.NowFrom, r.After, r.From, map[bool]string{true: "yes", false: "no"}[r.Changes])
		}
	})
}

// flushResult is `ctl cache flush`'s document.
type flushResult struct {
	Epoch   uint32    `json:"epoch"`
	Node    string    `json:"node,omitempty"`
	Waited  bool      `json:"waited"`
	Applied []ackView `json:"applied,omitempty"`
	Missing []string  `json:"missing,omitempty"`
}

type ackView struct {
	Node       string  `json:"node"`
	AfterMilli float64 `json:"after_ms"`
}

func newCacheFlush(g *globals) *cobra.Command {
	var node string
	var wait bool
	cmd := &cobra.Command{
		Use:   "flush",
		Short: "Make every cached destination stale, on every node or one",
		Long: `flush bumps the fleet's epoch (or, with --node, that node's own): each node applies it
to its dataplane as soon as etcd tells it, and every cached destination of an older
epoch misses once. With --wait it waits (within --timeout) until every node registered
under a live lease has applied it, and says who did, after how long, and who did not
(exit status 1 then).`,
		Example: `  ctl cache flush --wait
  ctl cache flush --node edge1 --wait --timeout 3s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.context(cmd)
			defer cancel()
			fv, err := g.open(ctx, node)
			if err != nil {
				return err
			}
			defer fv.Close()
			s, registered := fv.store, fv.registered
			res := flushResult{Node: node, Waited: wait}
			wantNodes := []string{node}
			var done func(cluster.Applied) bool
			if node == "" {
				if res.Epoch, err = s.Flush(ctx); err != nil {
					return err
				}
				wantNodes = nil
				for _, n := range registered {
					wantNodes = append(wantNodes, n.Name)
				}
				done = func(a cluster.Applied) bool { return a.Epoch >= res.Epoch }
			} else {
				if res.Epoch, err = s.FlushNode(ctx, node); err != nil {
					return err
				}
				done = func(a cluster.Applied) bool { return a.NodeEpoch >= res.Epoch }
			}
			if wait {
				acks, missing, err := s.WaitAppliedFunc(ctx, wantNodes, done)
				if err != nil {
					return err
				}
				for _, a := range acks {
					res.Applied = append(res.Applied, ackView{Node: a.Node, AfterMilli: float64(a.After.Microseconds()) / 1000})
				}
				res.Missing = missing
			}
			if err := g.render(res, func(w io.Writer) {
				what := "fleet"
				if node != "" {
					what = "node " + node
				}
				fmt.Fprintf(w, "%s flushed: epoch %d\n", what, res.Epoch)
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
				return fmt.Errorf("%d node(s) did not apply epoch %d within %s: %s", len(res.Missing), res.Epoch, g.timeout, strings.Join(res.Missing, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "flush this node alone")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every registered node applied it (within --timeout)")
	return cmd
}
