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
	"github.com/fibfleet/fibfleet/mesh"
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
	// mesh keeps the iBGP sessions (once the speaker is attached); watch compares
	// the prefixes the mesh carried (the alarm and the last resort).
	mesh  *mesh.Reconciler
	watch *mesh.Watch
	// table is the node's FIB (attach), which a member's death fails over.
	table *fib.FIB
	// drained is the drain etcd holds for the node, and blackholes the fleet's
	// blackholes in force, applied to the speaker once it is attached.
	drained    bool
	blackholes []netip.Prefix
	// bhMu makes the agent's and attach's syncs of the blackholes one at a time,
	// each with the latest set.
	bhMu sync.Mutex
}

// ApplyBlackholes makes the speaker originate exactly the fleet's blackholes in
// force (cluster.Blackholer): its best-path stream turns each into a drop in the
// FIB, and its export sends each to the upstreams that take blackholes.
func (f *fleet) ApplyBlackholes(ps []netip.Prefix) error {
	f.mu.Lock()
	f.blackholes = ps
	f.mu.Unlock()
	return f.syncBlackholes()
}

// syncBlackholes adds and removes the speaker's blackholes until they are the
// fleet's (nothing before the speaker is attached).
func (f *fleet) syncBlackholes() error {
	f.bhMu.Lock()
	defer f.bhMu.Unlock()
	f.mu.Lock()
	s, ps := f.speaker, f.blackholes
	f.mu.Unlock()
	if s == nil {
		return nil
	}
	var errs []error
	for _, p := range s.Blackholes() {
		if !slices.Contains(ps, p) {
			errs = append(errs, s.RemoveBlackhole(p))
		}
	}
	for _, p := range ps {
		errs = append(errs, s.AddBlackhole(p))
	}
	return errors.Join(errs...)
}

// ApplyDrain takes the node out of service or back (cluster.Drainer): its speaker
// announces with GRACEFUL_SHUTDOWN while drained.
func (f *fleet) ApplyDrain(drained bool) error {
	f.mu.Lock()
	f.drained = drained
	s := f.speaker
	f.mu.Unlock()
	if s == nil {
		return nil // attach applies it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.SetDrained(ctx, drained)
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
	f.watch = mesh.NewWatch(cfg.NodeName, cfg.Cluster.Mesh.AlarmAfter, cfg.Cluster.Mesh.ResendAfter, f.log)
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

// setConfigPolicy replaces the configuration's cache policy (a reload): through the
// agent once it runs (etcd's policies come first), else applied at once (the config's
// is in force until etcd answers).
func (f *fleet) setConfigPolicy(p cache.Policy) error {
	f.mu.Lock()
	f.cfg.Cache.FlatPolicy = p.Flat()
	agent := f.agent
	f.mu.Unlock()
	if agent != nil {
		return agent.SetDefault(context.Background(), p)
	}
	return f.app.ApplyPolicy(p)
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
	f.mu.Lock()
	def := f.cfg.Cache.Policy() // a reload may have changed it
	f.mu.Unlock()
	agent, err := cluster.NewAgent(cluster.AgentConfig{Store: store, Node: f.cfg.NodeName, Default: def, DefaultApplied: true,
		Applier: f.app, Drainer: f, Blackholer: f, Logger: f.log})
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

// attach gives the fleet the node's BGP speaker and FIB: it announces the node's
// subnets to the mesh; runMesh then keeps the mesh.
func (f *fleet) attach(s *bgp.Speaker, k *fib.NexthopResolver, table *fib.FIB) {
	f.mu.Lock()
	f.speaker = s
	f.table = table
	drained := f.drained
	f.mu.Unlock()
	if drained {
		if err := s.SetDrained(context.Background(), true); err != nil {
			f.log.Error("drain the node, as etcd says", "err", err)
		}
	}
	if err := f.syncBlackholes(); err != nil {
		f.log.Error("blackhole the fleet's blackholes, as etcd says", "err", err)
	}
	f.announce(s, k)
}

// runMesh keeps the iBGP mesh equal to the live members (with a mesh address) until
// ctx ends (package mesh).
func (f *fleet) runMesh(ctx context.Context) {
	self, _ := netip.ParseAddr(f.cfg.Cluster.Mesh.Address)
	if !self.IsValid() {
		return
	}
	f.mu.Lock()
	r := mesh.NewReconciler(mesh.Self{Name: f.cfg.NodeName, Address: self, ASN: f.cfg.BGP.ASN}, f.speaker, f.members, f.log)
	// A member's death moves the traffic through it (the paths via its upstreams)
	// to backup next hops at once; its mesh session goes after the hold.
	table := f.table
	r.Gone = func(a netip.Addr) { table.SetNeighborDown(a, true, "member") }
	r.Back = func(a netip.Addr) { table.SetNeighborDown(a, false, "member") }
	// A member that restarts keeps forwarding: its routes stay for the restart time
	// (graceful restart), its traffic moves off it meanwhile (Gone).
	r.Hold = f.cfg.BGP.GracefulRestart.RestartTime
	f.mesh = r
	f.mu.Unlock()
	r.Run(ctx)
}

// announce originates the subnets the node announces to the mesh: the configured
// ones, else those of its links to its BGP neighbours (where their next hops are).
func (f *fleet) announce(s *bgp.Speaker, k *fib.NexthopResolver) {
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
	store, agent, reg, speaker, m := f.store, f.agent, f.reg, f.speaker, f.mesh
	f.mu.Unlock()
	if m != nil {
		st.MeshLog = m.Log()
	}
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
		out = append(out, nodeapi.Session{Neighbor: p.Address, ASN: p.ASN, State: p.State, Mesh: p.Mesh, Established: p.Established})
	}
	slices.SortFunc(out, func(a, b nodeapi.Session) int { return a.Neighbor.Compare(b.Neighbor) })
	return out
}

// repair runs the mesh's watch (package mesh: the alarm and the last resort) every
// mesh.Check or less, once etcd and the speaker are there.
func (f *fleet) repair(ctx context.Context) {
	tick := time.NewTicker(f.watch.Every())
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
		if store != nil && speaker != nil {
			f.watch.Check(ctx, store, speaker)
		}
	}
}
