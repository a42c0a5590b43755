package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fleet is the node's part in its fleet: etcd (its own embedded one when no endpoints
// are configured), the agent that applies the fleet's epoch and cache policy, the
// node's registration, gossip membership, and the iBGP mesh that follows it.
type fleet struct {
	cfg      Config
	log      *slog.Logger
	app      cluster.Applier
	embedded *cluster.Embedded
	members  *cluster.Members
	speaker  *bgp.Speaker
	// endpoints are the etcd client URLs in use (the embedded one's, or configured).
	endpoints []string

	mu    sync.Mutex
	cli   *clientv3.Client
	store *cluster.Store
	agent *cluster.Agent
	reg   *cluster.Registration
	// meshLog holds the mesh's last changes, for the node API.
	meshLog []nodeapi.MeshChange
	// resends counts routes resent to mesh peers that lacked some (the last resort);
	// mismatches is how many mesh peers' prefixes differ from this node's now (the
	// alarm).
	resends    uint64
	mismatches int
}

// nodeApplier applies the fleet's decisions to this node's dataplane and cache.
type nodeApplier struct {
	dp    *dataplane.Dataplane
	table *fib.FIB
	cache *cacheLoop
}

func (a nodeApplier) ApplyEpoch(e uint32) error        { return a.dp.Cache().SetEpoch(e) }
func (a nodeApplier) ApplyPolicy(p cache.Policy) error { return a.cache.applyPolicy(p) }
func (a nodeApplier) Report(s *cluster.Applied) {
	s.Entries = [2]int{a.dp.Cache().Entries(dcache.IPv4), a.dp.Cache().Entries(dcache.IPv6)}
	s.Digests[0], s.Digests[1] = a.table.Digests()
	s.Prefixes[0], s.Prefixes[1] = a.table.PrefixDigests()
	st := a.table.Stats()
	s.Routes = [2]int{st.RoutesV4, st.RoutesV6}
	s.Version = version
}

// startFleet applies the config's cache policy, starts etcd (embedded when no
// endpoints are configured) and gossip; the etcd client, the agent and the
// registration follow in the background, so the node forwards, with its config's
// policy, whether etcd answers or not.
func startFleet(ctx context.Context, cfg Config, app cluster.Applier, log *slog.Logger) (*fleet, error) {
	f := &fleet{cfg: cfg, log: log.With("component", "fleet"), app: app, endpoints: cfg.Cluster.Etcd.Endpoints}
	if err := app.ApplyPolicy(cfg.Cache.Policy()); err != nil {
		return nil, err
	}
	cc := cfg.Cluster
	if len(f.endpoints) == 0 {
		e, err := cluster.StartEmbedded(cluster.EmbeddedConfig{Dir: cc.Embedded.DataDir, Name: cfg.NodeName, Listen: cc.Embedded.Listen})
		if err != nil {
			return nil, fmt.Errorf("%w (no cluster.etcd.endpoints are configured, so the node runs its own etcd: set cluster.embedded.data_dir to a writable directory, or list endpoints)", err)
		}
		f.embedded, f.endpoints = e, []string{e.Endpoint}
		f.log.Info("no etcd endpoints configured: running an embedded etcd", "data_dir", cc.Embedded.DataDir, "endpoint", e.Endpoint)
	}
	key, err := gossipKey(cc.Gossip.KeyFile)
	if err != nil {
		f.close()
		return nil, err
	}
	meta := cluster.Meta{ASN: cfg.BGP.ASN, APIAddress: cfg.HTTPAdvertise, Version: version, BGPAddress: cc.Mesh.Address, BGPAddress6: cc.Mesh.Address6}
	if p := cfg.BGP.ListenPort; p > 0 && p != 179 {
		meta.BGPPort = uint16(p)
	}
	f.members, err = cluster.StartMembers(cluster.MembersConfig{Name: cfg.NodeName, BindAddress: cc.Gossip.Address, AdvertiseAddress: cc.Gossip.Advertise,
		Key: key, Profile: cc.Gossip.Profile, Meta: meta, Logger: log})
	if err != nil {
		f.close()
		return nil, err
	}
	go f.connect(ctx)
	go f.join(ctx)
	return f, nil
}

// gossipKey reads the gossip key file: 16, 24 or 32 bytes, raw or in base64.
func gossipKey(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cluster.gossip.key_file: %w", err)
	}
	if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil && (len(d) == 16 || len(d) == 24 || len(d) == 32) {
		return d, nil
	}
	if len(b) != 16 && len(b) != 24 && len(b) != 32 {
		return nil, fmt.Errorf("cluster.gossip.key_file %s: %d bytes; write 16, 24 or 32 random bytes, raw or in base64 (head -c 32 /dev/urandom | base64)", file, len(b))
	}
	return b, nil
}

// connect opens the etcd client (retrying: with credentials the client must reach
// etcd to start), then runs the agent and registers the node.
func (f *fleet) connect(ctx context.Context) {
	ec := f.cfg.Cluster.etcdConfig()
	ec.Endpoints = f.endpoints
	var cli *clientv3.Client
	for {
		var err error
		if cli, err = cluster.NewClient(ec); err == nil {
			break
		}
		f.log.Warn("etcd client not ready; forwarding goes on, the fleet's policy follows when it is", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	store, err := cluster.NewStore(cli, f.cfg.Cluster.Name)
	if err != nil {
		f.log.Error("etcd store", "err", err)
		cli.Close()
		return
	}
	agent, err := cluster.NewAgent(cluster.AgentConfig{Store: store, Node: f.cfg.NodeName, Default: f.cfg.Cache.Policy(), DefaultApplied: true,
		Applier: f.app, Logger: f.log})
	if err != nil {
		f.log.Error("fleet agent", "err", err)
		cli.Close()
		return
	}
	f.mu.Lock()
	f.cli, f.store, f.agent = cli, store, agent
	f.mu.Unlock()
	go agent.Run(ctx)
	info := cluster.NodeInfo{Name: f.cfg.NodeName, BGPAddress: f.cfg.Cluster.Mesh.Address, ASN: f.cfg.BGP.ASN, APIAddress: f.cfg.HTTPAdvertise,
		GossipAddress: f.members.Addr(), Version: version}
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		reg, err := store.Register(rctx, info, f.cfg.Cluster.LeaseTTL, f.log)
		cancel()
		if err == nil {
			f.mu.Lock()
			f.reg = reg
			f.mu.Unlock()
			f.log.Info("registered in the fleet", "cluster", f.cfg.Cluster.Name, "lease_ttl", f.cfg.Cluster.LeaseTTL)
			return
		}
		f.log.Warn("register in etcd: retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// join contacts the configured seeds, then every 5 s the registered nodes that are
// not alive members: a node restarting, or started before the others, finds the
// fleet by itself.
func (f *fleet) join(ctx context.Context) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	seeds := f.cfg.Cluster.Gossip.Join
	for {
		alive := map[string]bool{}
		for _, m := range f.members.View() {
			alive[m.Name] = m.State == cluster.Alive
		}
		var try []string
		if len(alive) <= 1 {
			try = append(try, seeds...)
		}
		f.mu.Lock()
		store := f.store
		f.mu.Unlock()
		if store != nil {
			gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			nodes, err := store.Nodes(gctx)
			cancel()
			for _, n := range nodes {
				if err == nil && n.Name != f.cfg.NodeName && !alive[n.Name] && n.GossipAddress != "" {
					try = append(try, n.GossipAddress)
				}
			}
		}
		if len(try) > 0 {
			slices.Sort(try)
			if n, err := f.members.Join(slices.Compact(try)); err != nil {
				f.log.Debug("gossip join", "tried", try, "err", err)
			} else {
				f.log.Info("joined the fleet's gossip", "contacted", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// attach gives the fleet the node's BGP speaker: it announces the node's subnets to
// the mesh; runMesh then keeps the mesh.
func (f *fleet) attach(s *bgp.Speaker, k *fib.Kernel) {
	f.mu.Lock()
	f.speaker = s
	f.mu.Unlock()
	f.announce(s, k)
}

// runMesh keeps the iBGP mesh equal to the live members (with a mesh address) until
// ctx ends: a member that dies or leaves is unpeered at once (its routes withdrawn), one
// that (re)joins is peered.
func (f *fleet) runMesh(ctx context.Context) {
	f.mu.Lock()
	s := f.speaker
	f.mu.Unlock()
	self, _ := netip.ParseAddr(f.cfg.Cluster.Mesh.Address)
	if !self.IsValid() {
		return
	}
	peered := map[netip.Addr]string{} // address -> node
	reconcile := func() {
		want := map[netip.Addr]cluster.Member{}
		for _, m := range f.members.View() {
			a, err := netip.ParseAddr(m.Meta.BGPAddress)
			if m.Name == f.cfg.NodeName || err != nil || a == self || m.State != cluster.Alive {
				continue
			}
			if m.Meta.ASN != f.cfg.BGP.ASN {
				f.log.Warn("member with another AS: not peered (the mesh is iBGP)", "member", m.Name, "asn", m.Meta.ASN)
				continue
			}
			want[a] = m
		}
		for a, node := range peered {
			if _, ok := want[a]; ok {
				continue
			}
			reason := "not a live member"
			for _, m := range f.members.View() {
				if m.Name == node {
					reason = "member " + string(m.State)
				}
			}
			if err := s.RemoveMeshPeer(ctx, a); err != nil {
				f.log.Error("remove mesh peer", "peer", a, "err", err)
				continue
			}
			delete(peered, a)
			f.noteMesh(node, a, "remove", reason)
		}
		for a, m := range want {
			if _, ok := peered[a]; ok {
				continue
			}
			if err := s.AddMeshPeer(ctx, bgp.MeshPeer{Address: a, Port: m.Meta.BGPPort}); err != nil {
				f.log.Error("add mesh peer", "peer", a, "member", m.Name, "err", err)
				continue
			}
			peered[a] = m.Name
			f.noteMesh(m.Name, a, "add", "member alive")
		}
	}
	reconcile()
	// A periodic pass too: a failed add is tried again.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.members.Changes():
		case <-tick.C:
		}
		reconcile()
	}
}

func (f *fleet) noteMesh(node string, peer netip.Addr, action, reason string) {
	f.log.Info("mesh peer "+map[string]string{"add": "added", "remove": "removed"}[action], "member", node, "peer", peer, "reason", reason)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.meshLog = append(f.meshLog, nodeapi.MeshChange{At: time.Now(), Node: node, Peer: peer.String(), Action: action, Reason: reason})
	if len(f.meshLog) > 32 {
		f.meshLog = f.meshLog[len(f.meshLog)-32:]
	}
}

// announce originates the subnets the node announces to the mesh: the configured
// ones, else those of its links to its BGP neighbours (where their next hops are).
func (f *fleet) announce(s *bgp.Speaker, k *fib.Kernel) {
	mc := f.cfg.Cluster.Mesh
	if mc.Address == "" {
		return
	}
	nh4, _ := netip.ParseAddr(mc.Address)
	nh6, _ := netip.ParseAddr(mc.Address6)
	var prefixes []netip.Prefix
	for _, p := range mc.Announce {
		prefixes = append(prefixes, netip.MustParsePrefix(p).Masked()) // validated
	}
	if len(mc.Announce) == 0 {
		for _, n := range f.cfg.BGP.Neighbors {
			a, err := netip.ParseAddr(n.Address)
			if err != nil {
				continue
			}
			p, err := k.SubnetOf(a)
			if err != nil {
				f.log.Warn("the subnet towards a BGP neighbour is not announced to the mesh", "neighbor", a, "err", err)
				continue
			}
			prefixes = append(prefixes, p)
		}
	}
	for _, p := range slices.CompactFunc(prefixes, func(a, b netip.Prefix) bool { return a == b }) {
		nh := nh4
		if p.Addr().Is6() {
			nh = nh6
		}
		if !nh.IsValid() {
			f.log.Warn("no mesh address of the prefix's family: not announced (set cluster.mesh.address6 for IPv6)", "prefix", p)
			continue
		}
		if err := s.Originate(p, nh); err != nil {
			f.log.Error("announce to the mesh", "prefix", p, "err", err)
			continue
		}
		f.log.Info("announced to the mesh", "prefix", p, "nexthop", nh)
	}
}

// close leaves the fleet: the registration first (a flush stops waiting for this
// node at once), then gossip (the others see a leave, not a death, and unpeer), then
// etcd.
func (f *fleet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	f.mu.Lock()
	reg, cli := f.reg, f.cli
	f.mu.Unlock()
	var errs []error
	if reg != nil {
		errs = append(errs, reg.Close(ctx))
	}
	if f.members != nil {
		errs = append(errs, f.members.Leave(time.Second))
	}
	if cli != nil {
		errs = append(errs, cli.Close())
	}
	if f.embedded != nil {
		f.embedded.Close()
	}
	if err := errors.Join(errs...); err != nil {
		f.log.Warn("leaving the fleet", "err", err)
	}
}

// agreement compares the FIB digests the registered nodes reported.
func agreement(applied map[string]cluster.Applied, nodes []cluster.NodeInfo) nodeapi.DigestAgreement {
	count := map[string]int{}
	of := map[string]string{}
	for _, n := range nodes {
		a, ok := applied[n.Name]
		if !ok {
			continue
		}
		d := a.Digests[0] + "/" + a.Digests[1]
		of[n.Name] = d
		count[d]++
	}
	var out nodeapi.DigestAgreement
	best := 0
	for d, c := range count {
		if c > best || c == best && d < out.Majority {
			out.Majority, best = d, c
		}
	}
	for n, d := range of {
		if d != out.Majority {
			out.Odd = append(out.Odd, n)
		}
	}
	slices.Sort(out.Odd)
	out.Agree = len(out.Odd) == 0 && best > 0
	return out
}

func (f *fleet) status(ctx context.Context) nodeapi.Fleet {
	var st nodeapi.Fleet
	st.Node, st.Cluster = f.cfg.NodeName, f.cfg.Cluster.Name
	st.Etcd.Endpoints, st.Etcd.Embedded = f.endpoints, f.embedded != nil
	st.Members = f.members.View()
	f.mu.Lock()
	store, agent, reg, speaker := f.store, f.agent, f.reg, f.speaker
	st.MeshLog = slices.Clone(f.meshLog)
	f.mu.Unlock()
	if speaker != nil {
		st.Mesh = sessions(speaker.MeshPeers())
	}
	st.Registered = reg != nil && reg.Registered()
	if agent != nil {
		st.Agent = agent.Status()
		st.Etcd.Connected, st.Etcd.Error = st.Agent.Connected, st.Agent.LastError
	}
	if store == nil {
		st.Etcd.Error = "no etcd client yet"
		return st
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	if st.Nodes, err = store.Nodes(tctx); err != nil {
		st.Etcd.Error = err.Error()
		return st
	}
	if st.Applied, err = store.AppliedStates(tctx); err != nil {
		st.Etcd.Error = err.Error()
		return st
	}
	st.Digests = agreement(st.Applied, st.Nodes)
	return st
}

// sessions turns the speaker's peers into the API's sessions, by address.
func sessions(ps []bgp.PeerStatus) []nodeapi.Session {
	out := make([]nodeapi.Session, 0, len(ps))
	for _, p := range ps {
		out = append(out, nodeapi.Session{Neighbor: p.Address, ASN: p.ASN, State: p.State, Mesh: p.Mesh})
	}
	slices.SortFunc(out, func(a, b nodeapi.Session) int { return a.Neighbor.Compare(b.Neighbor) })
	return out
}

// The mesh's alarm and its last resort. Every node holds the same prefixes once the
// mesh has carried them (each may select other next hops), so each node compares its
// prefix digests with every registered node's. A difference that has stood still on
// both sides for repairQuiet is an alarm: routes were lost on the way, which should
// never happen (GoBGP lost them towards a mesh peer that came up while routes arrived,
// until patch 1 of third_party/'s set). It is logged and counted
// (fibfleet_cluster_mesh_digest_mismatches). If it lasts cluster.mesh.resend_after
// more, the node resends its routes to that node (a soft reset out: the whole
// Adj-RIB-Out, once), the last resort; a node that lacks routes resends what it has
// too (little: iBGP routes are not passed on). A difference a resend does not mend (a
// node that cannot hold some routes) is resent less and less often.
const (
	repairCheck = 10 * time.Second
	repairQuiet = 30 * time.Second
	repairFirst = 5 * time.Minute
	repairMax   = 6 * time.Hour
)

// digestSeen is a node's prefix digests and since when this node sees them unchanged.
type digestSeen struct {
	value string
	since time.Time
}

// resendState is the repair's memory of one peer: since when the alarm is up, the
// last resend and the wait before the next.
type resendState struct {
	alarm time.Time
	last  time.Time
	wait  time.Duration
}

// mismatch says whether two nodes' prefixes differ and both have stood still for
// repairQuiet (a node still loading moves).
func mismatch(mine, theirs digestSeen, now time.Time) bool {
	return mine.value != "" && theirs.value != "" && mine.value != theirs.value &&
		now.Sub(mine.since) >= repairQuiet && now.Sub(theirs.since) >= repairQuiet
}

// needResend says whether to resend to a node whose alarm is up: it has been for
// resendAfter, and the wait since the last resend is over.
func needResend(r resendState, resendAfter time.Duration, now time.Time) bool {
	return !r.alarm.IsZero() && now.Sub(r.alarm) >= resendAfter &&
		(r.last.IsZero() || now.Sub(r.last) >= r.wait)
}

func (f *fleet) repair(ctx context.Context) {
	seen := map[string]digestSeen{}
	state := map[string]resendState{}
	tick := time.NewTicker(repairCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.mu.Lock()
		store, speaker := f.store, f.speaker
		f.mu.Unlock()
		if store == nil || speaker == nil {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		nodes, err := store.Nodes(tctx)
		var applied map[string]cluster.Applied
		if err == nil {
			applied, err = store.AppliedStates(tctx)
		}
		cancel()
		if err != nil {
			continue // etcd away: nothing to compare with
		}
		now := time.Now()
		for name, a := range applied {
			v := a.Prefixes[0] + "/" + a.Prefixes[1]
			if s, ok := seen[name]; !ok || s.value != v {
				seen[name] = digestSeen{value: v, since: now}
			}
		}
		established := map[string]bool{}
		for _, p := range speaker.MeshPeers() {
			established[p.Address.String()] = p.State == "established"
		}
		mine := seen[f.cfg.NodeName]
		alarms := 0
		for _, n := range nodes {
			if n.Name == f.cfg.NodeName || !established[n.BGPAddress] {
				continue
			}
			theirs, r := seen[n.Name], state[n.Name]
			if !mismatch(mine, theirs, now) {
				if mine.value == theirs.value {
					if !r.alarm.IsZero() {
						f.log.Info("this node's prefixes and a mesh peer's agree again", "member", n.Name, "alarm_for", now.Sub(r.alarm).Round(time.Second))
					}
					delete(state, n.Name) // agreed: a later difference starts afresh
				}
				continue
			}
			alarms++
			if r.alarm.IsZero() {
				r.alarm = now
				state[n.Name] = r
				f.log.Error("this node's prefixes and a mesh peer's have differed, unchanged, for a while: routes were lost on the way (report it with both nodes' logs)",
					"member", n.Name, "mine", mine.value, "theirs", theirs.value, "still_for", now.Sub(latest(mine.since, theirs.since)).Round(time.Second),
					"resend_in", f.cfg.Cluster.Mesh.ResendAfter)
			}
			if !needResend(r, f.cfg.Cluster.Mesh.ResendAfter, now) {
				continue
			}
			addr, _ := netip.ParseAddr(n.BGPAddress)
			f.log.Warn("resending this node's routes to a mesh peer whose prefixes still differ (soft reset out: the last resort)",
				"member", n.Name, "peer", addr, "alarm_for", now.Sub(r.alarm).Round(time.Second))
			if err := speaker.ResendMesh(ctx, addr); err != nil {
				f.log.Error("resend routes to a mesh peer", "peer", addr, "err", err)
				continue
			}
			if r.last.IsZero() {
				r.wait = repairFirst
			} else {
				r.wait = min(2*r.wait, repairMax)
			}
			r.last = now
			state[n.Name] = r
			f.mu.Lock()
			f.resends++
			f.mu.Unlock()
		}
		f.mu.Lock()
		f.mismatches = alarms
		f.mu.Unlock()
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
