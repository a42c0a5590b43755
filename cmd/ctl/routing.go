package main

import (
	"fmt"
	"io"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/spf13/cobra"
)

// neighborRow is one session of one node in `ctl neighbors`.
type neighborRow struct {
	Node string `json:"node"`
	nodeapi.Neighbor
}

func newNeighbors(g *globals) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "neighbors",
		Short: "Every BGP session of every node: state, uptime, prefixes received, accepted, refused by reason, advertised",
		Long: `neighbors lists each node's BGP sessions (upstreams and the fleet's mesh): state and
how long it has been up, the prefixes the neighbour holds announced now (IPv4/IPv6,
before the import rules; not counted for mesh peers), how many of them its import
rules accept, the routes they refused since the node started by reason, and how many
of the fleet's prefixes the node sends it.`,
		Example: "  ctl neighbors\n  ctl neighbors --node edge1 -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.context(cmd)
			defer cancel()
			answers, err := askNodes[[]nodeapi.Neighbor](ctx, g, "/api/v1/neighbors", node)
			if err != nil {
				return err
			}
			var rows []neighborRow
			failed := unanswered(answers)
			for _, a := range answers {
				for _, n := range a.Doc {
					rows = append(rows, neighborRow{Node: a.Node, Neighbor: n})
				}
			}
			now := time.Now()
			return g.renderAnswered(rows, failed, func(w io.Writer) {
				fmt.Fprintln(w, "NODE\tNEIGHBOR\tASN\tSTATE\tUP\tRECEIVED v4/v6\tACCEPTED\tREFUSED\tADVERTISED")
				for _, r := range rows {
					up, kind, received := "-", "", fmt.Sprintf("%d/%d", r.Received[0], r.Received[1])
					if !r.Established.IsZero() {
						up = now.Sub(r.Established).Round(time.Second).String()
					}
					if r.Mesh {
						kind, received = " (mesh)", "-"
					}
					fmt.Fprintf(w, "%s\t%s%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\n", r.Node, r.Neighbor.Neighbor, kind, r.ASN, r.State, up, received, r.Accepted, reasons(r.Refused), r.Advertised)
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "ask this node only")
	return cmd
}

// reasons writes refusal counts as "reason=n,...", in a stable order.
func reasons(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// advertisedRow is one prefix a node sends a neighbour, in `ctl advertised`.
type advertisedRow struct {
	Node     string     `json:"node"`
	Neighbor netip.Addr `json:"neighbor"`
	nodeapi.Advertisement
}

func newAdvertised(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "advertised NEIGHBOR",
		Short: "What the fleet sends a neighbour: each prefix with its AS path, communities and MED",
		Long: `advertised asks every node which of the fleet's prefixes it sends the neighbour (the
nodes that have it as a neighbour answer), with the AS path, communities, large
communities and MED it receives. It is what each node tracks as sent (its
announcements and the neighbour's export), not a listing of GoBGP's Adj-RIB-Out, which
would run the export policy over the whole table.`,
		Example: "  ctl advertised 192.0.2.2\n  ctl advertised 2001:db8::2 -o json",
		Args:    exactArgs(1, "a neighbour's address"),
		RunE: func(cmd *cobra.Command, args []string) error {
			nb, err := netip.ParseAddr(args[0])
			if err != nil {
				return usagef("%q is not an IP address (write the neighbour's address, as in ctl neighbors)", args[0])
			}
			ctx, cancel := g.context(cmd)
			defer cancel()
			answers, err := askNodes[nodeapi.Announce](ctx, g, "/api/v1/announce", "")
			if err != nil {
				return err
			}
			rows := []advertisedRow{}
			found := false
			failed := unanswered(answers)
			for _, a := range answers {
				for _, n := range a.Doc.Neighbors {
					if n.Neighbor != nb {
						continue
					}
					found = true
					for _, adv := range n.Advertised {
						rows = append(rows, advertisedRow{Node: a.Node, Neighbor: nb, Advertisement: adv})
					}
				}
			}
			if !found && len(failed) == 0 {
				return usagef("no node has %s as a neighbour (ctl neighbors lists them)", nb)
			}
			return g.renderAnswered(rows, failed, func(w io.Writer) {
				fmt.Fprintln(w, "NODE\tPREFIX\tAS PATH\tCOMMUNITIES\tLARGE\tMED")
				for _, r := range rows {
					med := "-"
					if r.MED != nil {
						med = fmt.Sprint(*r.MED)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, r.Prefix, asPath(r.ASPath), orDash(r.Communities), orDash(r.LargeCommunities), med)
				}
			})
		},
	}
	return cmd
}

func asPath(p []uint32) string {
	if len(p) == 0 {
		return "(empty)"
	}
	s := make([]string, len(p))
	for i, a := range p {
		s[i] = fmt.Sprint(a)
	}
	return strings.Join(s, " ")
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// routeRow is one path on one node, in `ctl routes`.
type routeRow struct {
	Node string `json:"node"`
	nodeapi.RoutePath
}

func newRoutes(g *globals) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "routes <address|prefix>",
		Short: "Every path towards a destination on every node: attributes, best, installed, or why refused",
		Long: `routes asks every node (or one) for the paths it holds towards an address (its longest
match) or a prefix (exactly): each path's neighbour, next hop, AS path, local
preference, MED and communities, which one is best, whether the FIB holds it, its RPKI
origin validation state when the node validates origins, and the paths an upstream
sent that its import rules refused, with the reason.`,
		Example: "  ctl routes 1.1.1.1\n  ctl routes 203.0.113.0/24 --node edge1 -o json",
		Args:    exactArgs(1, "an IP address or a prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := args[0]
			if a, err := netip.ParseAddr(q); err == nil {
				q = a.Unmap().String()
			} else if p, err := netip.ParsePrefix(q); err == nil {
				q = p.Masked().String()
			} else {
				return usagef("%q is neither an IP address nor a prefix (write 192.0.2.1 or 192.0.2.0/24)", args[0])
			}
			ctx, cancel := g.context(cmd)
			defer cancel()
			answers, err := askNodes[nodeapi.Routes](ctx, g, "/api/v1/routes?q="+url.QueryEscape(q), node)
			if err != nil {
				return err
			}
			rows := []routeRow{}
			failed := unanswered(answers)
			for _, a := range answers {
				for _, p := range a.Doc.Paths {
					rows = append(rows, routeRow{Node: a.Node, RoutePath: p})
				}
			}
			return g.renderAnswered(rows, failed, func(w io.Writer) {
				fmt.Fprintln(w, "NODE\tPREFIX\tFROM\tNEXT HOP\tAS PATH\tLOCPREF\tMED\tCOMMUNITIES\tSTATE")
				for _, r := range rows {
					from, med := "(this node)", "-"
					if r.Neighbor.IsValid() {
						from = r.Neighbor.String()
					}
					if r.MED != nil {
						med = fmt.Sprint(*r.MED)
					}
					state := "not best"
					switch {
					case r.Refused != "":
						state = "refused: " + r.Refused
					case r.Best && !r.Neighbor.IsValid() && r.Blackhole && r.Installed:
						state = "best, this node's own blackhole, dropping"
					case r.Best && !r.Neighbor.IsValid():
						state = "best, this node's own"
					case r.Best && r.Installed && r.Blackhole:
						state = "best, blackhole, dropping"
					case r.Best && r.Installed:
						state = "best, installed"
					case r.Best:
						state = "best, NOT in the FIB"
					}
					if r.RPKI != "" {
						state += ", rpki " + r.RPKI
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Node, r.Prefix, from, r.Nexthop, asPath(r.ASPath), r.LocalPref, med,
						orDash(append(slices.Clone(r.Communities), r.LargeCommunities...)), state)
				}
				if len(rows) == 0 {
					fmt.Fprintf(w, "no node holds a path towards %s\n", q)
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "ask this node only")
	return cmd
}
