package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
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
	var node, flow, from string
	cmd := &cobra.Command{
		Use:   "lookup <ip> [--flow proto:sport:dport --from <ip>]",
		Short: "Where a destination goes on every node: matched prefix, next-hop group, cached or not",
		Long: `lookup asks every registered node (or one) which route a destination matches in its
FIB, the route's next-hop group (its members, active or backup, up or down, and how
many of the group's 64 buckets each holds), and on how many CPUs its destination
cache holds the destination (fresh: the next packet hits; stale: an entry of an old
epoch or route). With --flow and --from, it also says which member that flow takes
on each node (each node hashes flows with its own seed).`,
		Example: "  ctl lookup 1.1.1.1\n  ctl lookup 2001:db8::1 --node edge1 -o json\n  ctl lookup 1.1.1.1 --flow tcp:40000:443 --from 192.0.2.10",
		Args:    exactArgs(1, "an IP address"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := netip.ParseAddr(args[0])
			if err != nil || a.Zone() != "" {
				return usagef("%q is not an IP address (write 192.0.2.1 or 2001:db8::1)", args[0])
			}
			a = a.Unmap()
			q := url.Values{"addr": {a.String()}}
			if err := flowParams(q, a, flow, from); err != nil {
				return err
			}
			ctx, cancel := g.context(cmd)
			defer cancel()
			rows, err := lookupAll(ctx, g, q, node)
			if err != nil {
				return err
			}
			return g.render(rows, func(w io.Writer) {
				head := "NODE\tPREFIX\tNEXT HOP\tGROUP\tCACHED (CPUs)\tSTALE (CPUs)"
				if flow != "" {
					head += "\tFLOW TAKES"
				}
				fmt.Fprintln(w, head)
				for _, r := range rows {
					switch {
					case r.Error != "":
						fmt.Fprintf(w, "%s\t(%s)\t\t\t\t\n", r.Node, r.Error)
						continue
					case !r.Found:
						fmt.Fprintf(w, "%s\tno route\t-\t-\t%d\t%d", r.Node, r.CachedCPUs, r.StaleCPUs)
					case r.Blackhole:
						fmt.Fprintf(w, "%s\t%s\tblackhole (dropped)\t-\t%d\t%d", r.Node, r.Prefix, r.CachedCPUs, r.StaleCPUs)
					default:
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d", r.Node, r.Prefix, r.Nexthop, groupText(r.Group), r.CachedCPUs, r.StaleCPUs)
					}
					if flow != "" {
						switch {
						case r.Flow == nil:
							fmt.Fprint(w, "\t-")
						case !r.Flow.Nexthop.IsValid():
							fmt.Fprint(w, "\tthe kernel (no usable member)")
						default:
							fmt.Fprintf(w, "\t%s", r.Flow.Nexthop)
						}
					}
					fmt.Fprintln(w)
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "ask this node only")
	cmd.Flags().StringVar(&flow, "flow", "", "a flow to the destination, proto:sport:dport (proto tcp, udp, icmp or a number; ports 0 for other protocols), with --from")
	cmd.Flags().StringVar(&from, "from", "", "the flow's source address")
	return cmd
}

// flowParams adds a lookup's flow to its query: proto:sport:dport and a source.
func flowParams(q url.Values, dst netip.Addr, flow, from string) error {
	if flow == "" && from == "" {
		return nil
	}
	if flow == "" || from == "" {
		return usagef("--flow and --from go together: the flow hash covers the source (as in --flow tcp:40000:443 --from 192.0.2.10)")
	}
	src, err := netip.ParseAddr(from)
	if err != nil || src.Zone() != "" || src.Unmap().Is4() != dst.Is4() {
		return usagef("--from %q: give the flow's source address, of the destination's family", from)
	}
	parts := strings.Split(flow, ":")
	if len(parts) != 3 {
		return usagef("--flow %q: write proto:sport:dport, as in tcp:40000:443", flow)
	}
	proto, ok := map[string]string{"tcp": "6", "udp": "17", "icmp": "1", "icmpv6": "58"}[strings.ToLower(parts[0])]
	if !ok {
		proto = parts[0]
	}
	for i, v := range []string{proto, parts[1], parts[2]} {
		max := []uint64{255, 65535, 65535}[i]
		if x, err := strconv.ParseUint(v, 10, 32); err != nil || x > max {
			return usagef("--flow %q: %s %q is not a number from 0 to %d", flow, []string{"proto", "sport", "dport"}[i], v, max)
		}
	}
	q.Set("from", src.Unmap().String())
	q.Set("proto", proto)
	q.Set("sport", parts[1])
	q.Set("dport", parts[2])
	return nil
}

// groupText says a group in a line: its state and members, each with its buckets.
func groupText(g *nodeapi.Group) string {
	if g == nil {
		return "-"
	}
	var ms []string
	for _, m := range g.Members {
		s := fmt.Sprintf("%s [%d]", m.Nexthop, m.Buckets)
		if m.Backup {
			s = "backup " + s
		}
		if m.Down {
			s += " down"
		}
		ms = append(ms, s)
	}
	return fmt.Sprintf("%d %s: %s", g.ID, g.State, strings.Join(ms, ", "))
}

func lookupAll(ctx context.Context, g *globals, q url.Values, only string) ([]lookupRow, error) {
	answers, err := askNodes[nodeapi.Lookup](ctx, g, "/api/v1/lookup?"+q.Encode(), only)
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
