package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/spf13/cobra"
)

// statusRow is one node in `ctl status`.
type statusRow struct {
	Node string `json:"node"`
	// Registered: under a live lease in etcd (a flush waits for it).
	Registered bool `json:"registered"`
	// Alive is what the fleet's gossip says of it (the view of most reachable nodes):
	// alive, dead, left or unknown.
	Alive     cluster.MemberState `json:"alive"`
	API       string              `json:"api"`
	Reachable bool                `json:"reachable"`
	Error     string              `json:"error,omitempty"`
	// Sessions up (established) of all, upstreams and mesh.
	SessionsUp    int    `json:"sessions_up"`
	SessionsTotal int    `json:"sessions_total"`
	Routes        [2]int `json:"routes"`
	// Digest is the node's FIB digests (IPv4/IPv6); DigestAgrees whether it is the
	// one most nodes have.
	Digest       string     `json:"digest"`
	DigestAgrees bool       `json:"digest_agrees"`
	CacheMode    string     `json:"cache_mode"`
	CacheEntries [2]int     `json:"cache_entries"`
	HitRate      [2]float64 `json:"hit_rate"`
	PPS          float64    `json:"pps"`
	// TxDropped are the frames the egress drivers did not take of those the program
	// forwarded, since the node started.
	TxDropped    uint64 `json:"tx_dropped"`
	Epoch        uint32 `json:"epoch"`
	NodeEpoch    uint32 `json:"node_epoch"`
	PolicySource string `json:"policy_source"`
	Etcd         bool   `json:"etcd_connected"`
	Version      string `json:"version"`
	// Config is the node's last configuration reload: ok (applied, unchanged, or
	// none yet), refused (the running configuration stays) or failed (part of it was
	// not applied); ConfigError says why.
	Config      string `json:"config"`
	ConfigError string `json:"config_error,omitempty"`
	// PolicyHash identifies the node's routing policy; PolicyAgrees whether it is
	// the one most nodes run. Drained: the node announces with GRACEFUL_SHUTDOWN.
	PolicyHash   string `json:"policy_hash"`
	PolicyAgrees bool   `json:"policy_agrees"`
	Drained      bool   `json:"drained"`
	// Memory is the node's resident memory, Go heap and BGP paths held.
	Memory nodeapi.Memory `json:"memory"`
}

func newStatus(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "One row per node: alive, BGP sessions, routes, FIB digest, cache, pps, epoch, memory",
		Long: `status lists every node etcd knows (registered, or that reported once), with what
its API says: BGP sessions up of all, routes per family, FIB digest and whether most
nodes have the same, the cache's mode, size and hit rate per family, packets per second,
the frames its egress drivers did not take of those it forwarded (TXDROP), the flush
epoch applied, whether its last configuration reload was refused or failed (CONFIG:
the reason is in -o json and the node's log), its routing policy's hash and whether
most nodes run the same (POLICY; "drained" when it announces with GRACEFUL_SHUTDOWN);
its resident memory, Go heap and soft memory limit and the BGP paths it holds from its
upstreams (MEMORY: RSS/heap, "of" the limit when one is set; PATHS); and whether the
fleet's gossip has it alive.`,
		Example: "  ctl status\n  ctl status -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.context(cmd)
			defer cancel()
			rows, err := fleetStatus(ctx, g)
			if err != nil {
				return err
			}
			return g.render(rows, func(w io.Writer) {
				fmt.Fprintln(w, "NODE\tALIVE\tSESSIONS\tROUTES v4/v6\tDIGEST\tCACHE\tENTRIES v4/v6\tHIT v4/v6\tPPS\tTXDROP\tEPOCH\tCONFIG\tPOLICY\tMEMORY\tPATHS\tETCD")
				for _, r := range rows {
					if !r.Reachable {
						fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", r.Node, r.Alive, unreachable(r))
						continue
					}
					agree := map[bool]string{true: "=", false: "≠"}
					policy := r.PolicyHash + " " + agree[r.PolicyAgrees]
					if r.Drained {
						policy += " drained"
					}
					epoch := strconv.Itoa(int(r.Epoch))
					if r.NodeEpoch > 0 {
						epoch += fmt.Sprintf("+%d", r.NodeEpoch)
					}
					fmt.Fprintf(w, "%s\t%s\t%d/%d\t%d/%d\t%s %s\t%s (%s)\t%d/%d\t%.0f%%/%.0f%%\t%.0f\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Node, r.Alive, r.SessionsUp, r.SessionsTotal,
						r.Routes[0], r.Routes[1], short(r.Digest), agree[r.DigestAgrees], r.CacheMode, r.PolicySource, r.CacheEntries[0], r.CacheEntries[1],
						100*r.HitRate[0], 100*r.HitRate[1], r.PPS, r.TxDropped, epoch, r.Config, policy, memoryColumn(r.Memory), r.Memory.BGPPaths,
						map[bool]string{true: "ok", false: "away"}[r.Etcd])
				}
			})
		},
	}
}

// mostCommon is the value counted most (the least of those tied, so that every
// ctl agrees).
func mostCommon(counts map[string]int) string {
	top, best := "", 0
	for v, c := range counts {
		if c > best || c == best && v < top {
			top, best = v, c
		}
	}
	return top
}

// mib shows a byte count in MiB.
func mib(b uint64) string { return strconv.FormatUint(b>>20, 10) + "M" }

// memoryColumn is RSS/heap, and the soft limit when one is set ("of 1536M").
func memoryColumn(m nodeapi.Memory) string {
	s := mib(m.RSS) + "/" + mib(m.GoHeap)
	if m.Limit > 0 {
		s += " of " + mib(m.Limit)
	}
	return s
}

func unreachable(r statusRow) string {
	if !r.Registered {
		return "not registered"
	}
	return "API unreachable: " + r.Error
}

// short is a digest pair cut to 8+8 hex digits.
func short(d string) string {
	if len(d) == 33 {
		return d[:8] + "/" + d[17:25]
	}
	return d
}

// fleetStatus asks every known node's API for its status, in parallel.
func fleetStatus(ctx context.Context, g *globals) ([]statusRow, error) {
	fv, err := g.open(ctx, "")
	if err != nil {
		return nil, err
	}
	defer fv.Close()
	a, err := g.api()
	if err != nil {
		return nil, err
	}
	registered, names := fv.registered, fv.names
	info := map[string]cluster.NodeInfo{}
	for _, n := range registered {
		info[n.Name] = n
	}
	rows := make([]statusRow, len(names))
	sts := make([]*nodeapi.Status, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		n, reg := info[name]
		rows[i] = statusRow{Node: name, Registered: reg, API: n.APIAddress, Alive: "unknown"}
		if !reg {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st nodeapi.Status
			if err := a.get(ctx, n.APIAddress, "/api/v1/status", &st); err != nil {
				rows[i].Error = err.Error()
				return
			}
			sts[i] = &st
		}()
	}
	wg.Wait()
	// Gossip's verdict on each node: the state most reachable nodes' views give it.
	votes := map[string]map[cluster.MemberState]int{}
	digests, policies := map[string]int{}, map[string]int{}
	for _, st := range sts {
		if st == nil {
			continue
		}
		for _, m := range st.Members {
			if votes[m.Name] == nil {
				votes[m.Name] = map[cluster.MemberState]int{}
			}
			votes[m.Name][m.State]++
		}
		digests[st.Digests[0]+"/"+st.Digests[1]]++
		policies[st.Config.PolicyHash]++
	}
	majority, majorityPolicy := mostCommon(digests), mostCommon(policies)
	for i, st := range sts {
		r := &rows[i]
		top := 0
		for state, c := range votes[r.Node] {
			if c > top || c == top && state < r.Alive {
				r.Alive, top = state, c
			}
		}
		if st == nil {
			continue
		}
		r.Reachable, r.Version, r.Routes, r.Epoch, r.PolicySource, r.Etcd, r.PPS = true, st.Version, st.Routes, st.Epoch, st.PolicySource, st.EtcdConnected, st.PPS
		r.Memory = st.Memory
		r.TxDropped = st.TxDropped()
		r.Config, r.ConfigError = "ok", st.Config.LastReloadError
		if res := st.Config.LastReloadResult; res == "refused" || res == "failed" {
			r.Config = res
		}
		r.Digest = st.Digests[0] + "/" + st.Digests[1]
		r.DigestAgrees = r.Digest == majority
		r.PolicyHash, r.PolicyAgrees, r.Drained = st.Config.PolicyHash, st.Config.PolicyHash == majorityPolicy, st.Config.Drained
		for _, ss := range st.Sessions {
			r.SessionsTotal++
			if ss.State == "established" {
				r.SessionsUp++
			}
		}
		for i, c := range st.Cache {
			if i < 2 {
				r.CacheMode, r.CacheEntries[i], r.HitRate[i] = c.Mode, c.Entries, c.HitRate
			}
		}
	}
	// The epochs come from the reports in etcd (the node's status has their sum).
	for i := range rows {
		if a, ok := fv.applied[rows[i].Node]; ok {
			rows[i].NodeEpoch = a.NodeEpoch
			if rows[i].Reachable {
				rows[i].Epoch = a.Epoch
			}
		}
	}
	return rows, nil
}
