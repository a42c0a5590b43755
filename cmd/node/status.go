package main

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// rates samples the XDP program's totals every second, so the status can say how
// many packets per second the node sees without a caller sampling twice.
type rates struct {
	dp *dataplane.Dataplane

	mu              sync.Mutex
	last            nodeapi.Packets
	at              time.Time
	pps, forwardPPS float64
}

func packets(st dataplane.Stats) nodeapi.Packets {
	var p nodeapi.Packets
	for _, r := range dataplane.Reasons() {
		switch r.Action() {
		case "redirect":
			p.Forwarded += st[r].Packets
		case "pass":
			p.Passed += st[r].Packets
		default:
			p.Dropped += st[r].Packets
		}
	}
	return p
}

func (r *rates) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			st, err := r.dp.Stats()
			if err != nil {
				continue
			}
			p := packets(st)
			r.mu.Lock()
			if !r.at.IsZero() {
				s := now.Sub(r.at).Seconds()
				r.pps = float64(p.Forwarded+p.Passed+p.Dropped-r.last.Forwarded-r.last.Passed-r.last.Dropped) / s
				r.forwardPPS = float64(p.Forwarded-r.last.Forwarded) / s
			}
			r.last, r.at = p, now
			r.mu.Unlock()
		}
	}
}

// nodeStatus builds GET /api/v1/status.
type nodeStatus struct {
	name    string
	started time.Time
	dp      *dataplane.Dataplane
	table   *fib.FIB
	speaker *bgp.Speaker
	cache   *cacheLoop
	fleet   *fleet
	rates   *rates
	ports   *ports
	reload  *reloader
	origin  *originator
	mem     *memLimit
	// seed is the dataplane's flow-hash seed, to say which member a flow takes.
	seed uint32
}

func (n *nodeStatus) status() nodeapi.Status {
	st := nodeapi.Status{Node: n.name, Version: version, Started: n.started}
	st.Sessions = sessions(n.speaker.Peers())
	fs := n.table.Stats()
	st.Routes = [2]int{fs.RoutesV4, fs.RoutesV6}
	st.Digests[0], st.Digests[1] = n.table.Digests()
	st.Epoch, _ = n.dp.Cache().Epoch()
	n.fleet.mu.Lock()
	agent := n.fleet.agent
	n.fleet.mu.Unlock()
	st.PolicySource = string(cluster.FromConfig)
	if agent != nil {
		a := agent.Status()
		st.EtcdConnected, st.PolicySource = a.Connected, string(a.PolicySource)
	}
	st.Members = n.fleet.members.View()
	for _, f := range n.cache.status().Families {
		t := f.Totals
		st.Cache = append(st.Cache, nodeapi.CacheFamily{Family: f.Family, Mode: f.Mode, Entries: f.Entries, HitRate: f.HitRate,
			Lookups: t.Lookups, Hits: t.Hits, Misses: t.Misses, Stale: t.Stale, Refused: t.Refused, Evictions: t.Evictions})
	}
	if s, err := n.dp.Stats(); err == nil {
		st.Packets = packets(s)
	}
	n.rates.mu.Lock()
	st.PPS, st.ForwardedPPS = n.rates.pps, n.rates.forwardPPS
	n.rates.mu.Unlock()
	st.Interfaces = n.ports.interfaces()
	if n.reload != nil {
		counts, last := n.reload.status()
		st.Config = nodeapi.Config{Files: n.reload.files(), Reloads: counts, LastReload: last.At, LastReloadResult: last.Result, LastReloadError: last.Error,
			PolicyHash: n.reload.policyHash()}
	}
	st.Config.Drained = n.speaker.Drained()
	st.Memory = memoryStatus(n.speaker.Loads())
	if n.mem != nil {
		if d := n.mem.decision(); d.Source != "off" && d.Source != "" {
			st.Memory.Limit, st.Memory.LimitSource = uint64(d.Limit), d.Source
		}
	}
	return st
}

// memoryStatus reads the process's resident memory and the Go heap without stopping
// the world (runtime/metrics, not ReadMemStats), and sums the upstreams' paths.
func memoryStatus(loads []bgp.Load) nodeapi.Memory {
	var m nodeapi.Memory
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, resident uint64
		if _, err := fmt.Sscan(string(b), &size, &resident); err == nil {
			m.RSS = resident * uint64(os.Getpagesize())
		}
	}
	samples := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	rtmetrics.Read(samples)
	if samples[0].Value.Kind() == rtmetrics.KindUint64 {
		m.GoHeap = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == rtmetrics.KindUint64 {
		m.GoHeapGoal = samples[1].Value.Uint64()
	}
	for _, l := range loads {
		m.BGPPaths += l.Prefixes[0] + l.Prefixes[1]
	}
	return m
}

// lookup answers GET /api/v1/lookup: the route, its next-hop group, the member a
// flow takes when one is given (its Dst is a), and whether the cache holds it.
func (n *nodeStatus) lookup(a netip.Addr, flow *dataplane.Flow) (nodeapi.Lookup, error) {
	out := nodeapi.Lookup{Addr: a}
	p, gw, ok := n.table.Lookup(a)
	if ok {
		out.Found, out.Prefix, out.Nexthop, out.Blackhole = true, p, gw, !gw.IsValid()
	}
	if _, gi, ok := n.table.LookupGroup(a); ok {
		g := &nodeapi.Group{ID: gi.ID, State: gi.State.String()}
		byID := map[uint16]netip.Addr{}
		for _, m := range gi.Members {
			g.Members = append(g.Members, nodeapi.GroupMember{Nexthop: m.Nexthop, Backup: m.Backup, Down: m.Down, Buckets: m.Buckets})
			byID[uint16(m.ID)] = m.Nexthop
		}
		out.Group = g
		if flow != nil {
			h := dataplane.FlowHash(n.seed, *flow)
			out.Flow = &nodeapi.FlowChoice{Hash: h, Nexthop: byID[gi.Buckets.Pick(h)]}
		}
	}
	var err error
	out.CachedCPUs, out.StaleCPUs, err = n.dp.Cached(a)
	return out, err
}

// announced answers GET /api/v1/announce: the fleet's prefixes as this node decides
// them, and what each upstream is sent.
func (n *nodeStatus) announced() nodeapi.Announce {
	out := nodeapi.Announce{Prefixes: n.origin.d.States()}
	peers := n.speaker.Peers()
	slices.SortFunc(peers, func(a, b bgp.PeerStatus) int { return a.Address.Compare(b.Address) })
	for _, p := range peers {
		if p.Mesh {
			continue
		}
		na := nodeapi.NeighborAdverts{Neighbor: p.Address, ASN: p.ASN, State: p.State, Advertised: []nodeapi.Advertisement{}}
		adv, _ := n.speaker.Advertised(p.Address)
		for _, a := range adv {
			x := nodeapi.Advertisement{Prefix: a.Prefix, ASPath: a.ASPath, Communities: a.Communities, LargeCommunities: a.LargeCommunities}
			if a.HasMED {
				med := a.MED
				x.MED = &med
			}
			na.Advertised = append(na.Advertised, x)
		}
		out.Neighbors = append(out.Neighbors, na)
	}
	return out
}

// neighbors answers GET /api/v1/neighbors.
func (n *nodeStatus) neighbors() []nodeapi.Neighbor {
	loads := map[netip.Addr]bgp.Load{}
	for _, l := range n.speaker.Loads() {
		loads[l.Neighbor] = l
	}
	refused, now := n.speaker.Refused(), n.speaker.RefusedNow()
	peers := n.speaker.Peers()
	slices.SortFunc(peers, func(a, b bgp.PeerStatus) int { return a.Address.Compare(b.Address) })
	out := make([]nodeapi.Neighbor, 0, len(peers))
	for _, p := range peers {
		nb := nodeapi.Neighbor{Neighbor: p.Address, ASN: p.ASN, State: p.State, Mesh: p.Mesh, Established: p.Established, Received: loads[p.Address].Prefixes}
		held := nb.Received[0] + nb.Received[1]
		nb.Accepted = held - min(held, uint64(now[p.Address]))
		for r, c := range refused[p.Address] {
			if c > 0 {
				if nb.Refused == nil {
					nb.Refused = map[string]uint64{}
				}
				nb.Refused[r] = c
			}
		}
		if adv, err := n.speaker.Advertised(p.Address); err == nil {
			nb.Advertised = len(adv)
		}
		out = append(out, nb)
	}
	return out
}

// routes answers GET /api/v1/routes.
func (n *nodeStatus) routes(q string) (nodeapi.Routes, error) {
	paths, err := n.speaker.Paths(q)
	if err != nil {
		return nodeapi.Routes{}, err
	}
	out := nodeapi.Routes{Query: q, Paths: []nodeapi.RoutePath{}}
	for _, p := range paths {
		rp := nodeapi.RoutePath{Prefix: p.Prefix, Neighbor: p.Neighbor, Best: p.Best, Refused: p.Refused, Nexthop: p.Nexthop, ASPath: p.ASPath,
			Communities: p.Communities, LargeCommunities: p.LargeCommunities, LocalPref: p.LocalPref, RPKI: p.RPKI,
			Blackhole: slices.Contains(p.Communities, bgp.BlackholeCommunity)}
		if p.HasMED {
			med := p.MED
			rp.MED = &med
		}
		if p.Best {
			nh, ok := n.table.Route(p.Prefix)
			// A blackhole is installed without a next hop.
			rp.Installed = ok && (rp.Blackhole && !nh.IsValid() || !rp.Blackhole && nh.WithZone("") == p.Nexthop.WithZone(""))
		}
		out.Paths = append(out.Paths, rp)
	}
	return out, nil
}

// flowQuery reads a lookup's flow (from, proto, sport, dport) if it names one.
func flowQuery(q url.Values, dst netip.Addr) (*dataplane.Flow, error) {
	if q.Get("from") == "" && q.Get("proto") == "" {
		return nil, nil
	}
	src, err := netip.ParseAddr(q.Get("from"))
	if err != nil || src.Is4() != dst.Is4() {
		return nil, fmt.Errorf("from %q: give the flow's source, an address of the destination's family", q.Get("from"))
	}
	f := &dataplane.Flow{Src: src, Dst: dst}
	for _, v := range []struct {
		name string
		max  uint64
		set  func(uint64)
	}{
		{"proto", 255, func(x uint64) { f.Proto = uint8(x) }},
		{"sport", 65535, func(x uint64) { f.Sport = uint16(x) }},
		{"dport", 65535, func(x uint64) { f.Dport = uint16(x) }},
	} {
		s := q.Get(v.name)
		if s == "" {
			continue
		}
		x, err := strconv.ParseUint(s, 10, 16)
		if err != nil || x > v.max {
			return nil, fmt.Errorf("%s %q: give a number from 0 to %d", v.name, s, v.max)
		}
		v.set(x)
	}
	return f, nil
}
