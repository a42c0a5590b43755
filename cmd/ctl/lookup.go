package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/spf13/cobra"
)

// lookupRow is one node's answer for a destination.
type lookupRow struct {
	Node string `json:"node"`
	nodeapi.Lookup
	Error string `json:"error,omitempty"`
}

func newLookup(g *globals) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "lookup <ip>",
		Short: "Where a destination goes on every node: matched prefix, next hop, cached or not",
		Long: `lookup asks every registered node (or one) which route a destination matches in its
FIB, the route's BGP next hop, and on how many CPUs its destination cache holds the
destination (fresh: the next packet hits; stale: an entry of an old epoch or route).`,
		Example: "  ctl lookup 1.1.1.1\n  ctl lookup 2001:db8::1 --node edge1 -o json",
		Args:    exactArgs(1, "an IP address"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := netip.ParseAddr(args[0])
			if err != nil || a.Zone() != "" {
				return usagef("%q is not an IP address (write 192.0.2.1 or 2001:db8::1)", args[0])
			}
			ctx, cancel := g.context(cmd)
			defer cancel()
			rows, err := lookupAll(ctx, g, a.Unmap(), node)
			if err != nil {
				return err
			}
			return g.render(rows, func(w io.Writer) {
				fmt.Fprintln(w, "NODE\tPREFIX\tNEXT HOP\tCACHED (CPUs)\tSTALE (CPUs)")
				for _, r := range rows {
					switch {
					case r.Error != "":
						fmt.Fprintf(w, "%s\t(%s)\t\t\t\n", r.Node, r.Error)
					case !r.Found:
						fmt.Fprintf(w, "%s\tno route\t-\t%d\t%d\n", r.Node, r.CachedCPUs, r.StaleCPUs)
					case r.Blackhole:
						fmt.Fprintf(w, "%s\t%s\tblackhole (dropped)\t%d\t%d\n", r.Node, r.Prefix, r.CachedCPUs, r.StaleCPUs)
					default:
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\n", r.Node, r.Prefix, r.Nexthop, r.CachedCPUs, r.StaleCPUs)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "ask this node only")
	return cmd
}

func lookupAll(ctx context.Context, g *globals, a netip.Addr, only string) ([]lookupRow, error) {
	answers, err := askNodes[nodeapi.Lookup](ctx, g, "/api/v1/lookup?addr="+url.QueryEscape(a.String()), only)
	if err != nil {
		return nil, err
	}
	rows := make([]lookupRow, len(answers))
	for i, a := range answers {
		rows[i] = lookupRow{Node: a.Node, Lookup: a.Doc, Error: a.Error}
	}
	return rows, nil
}

// answer is one node's reply to askNodes.
type answer[T any] struct {
	Node  string
	Doc   T
	Error string
}

// unanswered names the nodes that did not answer, with why ("node: error").
func unanswered[T any](answers []answer[T]) []string {
	var out []string
	for _, a := range answers {
		if a.Error != "" {
			out = append(out, a.Node+": "+a.Error)
		}
	}
	return out
}

// renderAnswered renders the rows the nodes gave, a line per node that did not
// answer, and fails naming those.
func (g *globals) renderAnswered(rows any, failed []string, table func(w io.Writer)) error {
	if err := g.render(rows, func(w io.Writer) {
		table(w)
		for _, f := range failed {
			fmt.Fprintf(w, "(%s)\n", f)
		}
	}); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d node(s) did not answer: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// askNodes GETs path from every registered node (or only one: a name no node has is
// a usage error naming those that are), in parallel.
func askNodes[T any](ctx context.Context, g *globals, path, only string) ([]answer[T], error) {
	s, cli, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	api, err := g.api()
	if err != nil {
		return nil, err
	}
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	if only != "" {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		nodes = slices.DeleteFunc(nodes, func(n cluster.NodeInfo) bool { return n.Name != only })
		if len(nodes) == 0 {
			return nil, usagef("--node %q: no node of that name is registered in fleet %q (registered: %s)", only, g.cluster, strings.Join(names, ", "))
		}
	}
	out := make([]answer[T], len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i].Node = n.Name
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := api.get(ctx, n.APIAddress, path, &out[i].Doc); err != nil {
				out[i].Error = err.Error()
			}
		}()
	}
	wg.Wait()
	return out, nil
}
