// Command node is the fibfleet daemon: it learns routes over BGP, keeps the master FIB,
// and forwards in XDP on the configured interfaces.
//
// This file is wiring only: config -> components, start in dependency order, stop in
// reverse on SIGINT/SIGTERM.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	cfg, err := loadConfig(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fibfleet-node:", err)
		os.Exit(2)
	}
	if cfg.showVersion {
		fmt.Println("fibfleet-node", version)
		return
	}
	if cfg.checkOnly {
		from := strings.Join(cfg.files, " overlaid by ")
		if from == "" {
			from = "defaults and flags"
		}
		fmt.Printf("config valid (%s): node %s, interfaces %v, AS%d, %d upstream neighbours, cluster %q, etcd %v, http %s, bgp port %d, gossip %s\n",
			from, cfg.NodeName, cfg.Interfaces, cfg.BGP.ASN, len(cfg.BGP.Neighbors), cfg.Cluster.Name, cmp.Or(strings.Join(cfg.Cluster.Etcd.Endpoints, ","), "embedded"),
			cfg.HTTPAddress, cfg.BGP.ListenPort, cfg.Cluster.Gossip.Address)
		if !cfg.checkProbe {
			return
		}
		// The kernel and the interfaces, probed as the node would at start, without
		// loading or attaching anything.
		err := dataplane.CheckFeatures(cfg.Interfaces, dataplane.Mode(cfg.XDPMode))
		if missing := missingFeatures(err); len(missing) > 0 {
			reportMissing(missing)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fibfleet-node: could not probe the kernel:", err)
			os.Exit(1)
		}
		fmt.Printf("kernel %s and interfaces %v: everything the dataplane needs is there\n", dataplane.KernelRelease(), cfg.Interfaces)
		return
	}
	if cfg.uninstall {
		removed, err := dataplane.Uninstall(cfg.BPFFS, cfg.NodeName)
		for _, r := range removed {
			fmt.Println("removed:", r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fibfleet-node: uninstall:", err)
			os.Exit(1)
		}
		if len(removed) == 0 {
			fmt.Printf("node %s has no dataplane in %s: nothing to remove\n", cfg.NodeName, dataplane.PinDir(cfg.BPFFS, cfg.NodeName))
		}
		return
	}
	level := new(slog.LevelVar)
	log := newLogger(cfg.LogLevel, level)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the configuration; caught from the start, so that one sent
	// while the node starts does not kill it (the reload reads it once it can).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if err := run(ctx, cfg, log, level, os.Args[1:], hup); err != nil {
		if missing := missingFeatures(err); len(missing) > 0 {
			reportMissing(missing)
		}
		log.Error("node failed", "err", err)
		os.Exit(1)
	}
}

// exitMissing is the exit status when the kernel or an interface lacks a feature the
// dataplane needs: distinct from a bad configuration (2) and other failures (1).
const exitMissing = 3

// missingFeatures returns the dataplane.Missing errors err holds, if any.
func missingFeatures(err error) []dataplane.Missing {
	var out []dataplane.Missing
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case dataplane.Missing:
			out = append(out, x)
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return out
}

// reportMissing prints one line per missing feature and exits.
func reportMissing(missing []dataplane.Missing) {
	os.Exit(writeMissing(os.Stderr, missing))
}

// writeMissing prints one line per missing feature and returns the exit status.
func writeMissing(w io.Writer, missing []dataplane.Missing) int {
	for _, m := range missing {
		fmt.Fprintln(w, "fibfleet-node:", m.Error())
	}
	return exitMissing
}

// newLogger logs at level (validated) to stderr; lv holds the level, which a reload
// changes.
func newLogger(level string, lv *slog.LevelVar) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	lv.Set(l)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	slog.SetDefault(log)
	return log
}

func run(ctx context.Context, cfg Config, log *slog.Logger, level *slog.LevelVar, args []string, hup <-chan os.Signal) error {
	bgpCfg, _ := cfg.bgpConfig() // validated in loadConfig
	bgpCfg.Logger = log

	// Before anything is loaded: a kernel or driver that lacks something the
	// dataplane needs is one line per missing feature, not a verifier dump later.
	if err := dataplane.CheckFeatures(cfg.Interfaces, dataplane.Mode(cfg.XDPMode)); err != nil {
		return err
	}
	dp, err := dataplane.Load(dataplane.Config{NodeName: cfg.NodeName, BPFFS: cfg.BPFFS, GroupsV4: cfg.FIB.GroupsV4, LinesV4: cfg.FIB.LinesV4, BucketsV6: cfg.FIB.BucketsV6,
		FIBBackend: dataplane.Backend(cfg.FIB.Backend), FlowSeed: dataplane.FlowSeedOf(cfg.NodeName), Logger: log,
		RestartTime: cfg.BGP.GracefulRestart.RestartTime})
	if err != nil {
		return err
	}
	prev := dp.Previous()
	defer func() {
		// Forwarding outlives the process: the next start (a restart, an upgrade)
		// adopts it; with none, the heartbeat expires after the restart time and the
		// kernel forwards.
		if err := dp.Release(); err != nil {
			log.Warn("dataplane release", "err", err)
		}
		log.Info("dataplane left forwarding for the next start (node -uninstall removes it)", "restart_time", cfg.BGP.GracefulRestart.RestartTime)
	}()

	resolver, err := fib.NewNexthopResolver(log)
	if err != nil {
		return err
	}
	defer resolver.Close()
	table, err := fib.New(dp, resolver, log)
	if err != nil {
		return err
	}
	table.SetHoldDown(cfg.FIB.HoldDown, cfg.FIB.HoldDownWindow)
	if err := table.SetNeighborWeights(weightsOf(cfg)); err != nil {
		return err
	}
	var ksync *fib.KernelSync
	if cfg.FIB.KernelSync {
		ksync = fib.NewKernelSync(cfg.FIB.KernelTable, log)
		table.SyncKernel(ksync)
		go func() {
			if err := ksync.Run(ctx); err != nil {
				log.Error("kernel route sync stopped; packets passed to the kernel may not find routes", "err", err)
			}
		}()
	}
	if err := fib.WatchLocal(ctx, dp, log); err != nil {
		return err
	}
	go func() {
		if err := resolver.Watch(ctx, table, cfg.FIB.RetryInterval); err != nil {
			log.Error("neighbour watch stopped; nexthops no longer follow MAC changes", "err", err)
		}
	}()
	for _, ifname := range cfg.Interfaces {
		if err := dp.Attach(ifname, dataplane.Mode(cfg.XDPMode)); err != nil {
			return err
		}
	}
	if !prev.Adopted {
		// Nothing forwards that a restart could keep: this program takes over now.
		if err := dp.Swap(); err != nil {
			return err
		}
	}
	pts := newPorts(cfg.Interfaces, cmp.Or(cfg.XDPMode, string(dataplane.ModeNative)), log)
	pts.attachments = dp.Attachments
	if pts.xmit, err = dataplane.OpenXmitMonitor(); err != nil {
		log.Warn("frames the egress drivers do not take cannot be counted; forwarded may then not mean sent", "err", err)
	} else {
		defer pts.xmit.Close()
	}
	pts.warnUndeliverable()
	dcache, err := newCacheLoop(dp, table, cfg, log)
	if err != nil {
		return err
	}
	go dcache.run(ctx)
	fl, err := startFleet(ctx, cfg, nodeApplier{dp: dp, table: table, cache: dcache}, log)
	if err != nil {
		return err
	}

	bgpCfg.MeshAddress, _ = netip.ParseAddr(cfg.Cluster.Mesh.Address) // validated
	bgpCfg.Restarting = prev.Adopted
	speaker, err := bgp.Start(ctx, bgpCfg)
	if err != nil {
		fl.close()
		return err
	}
	defer fl.close() // runs before BGP stops: the others see this node leave
	fl.attach(speaker, resolver, table)
	go fl.runMesh(ctx)
	go fl.repair(ctx)
	bfds := newBFDSessions(table, speaker.ResetNeighbor, log)
	defer bfds.close()
	if err := bfds.set(cfg.BGP.Neighbors); err != nil {
		return fmt.Errorf("bfd: %w", err)
	}
	rl := newReloader(args, cfg, log, level, speaker, fl.setConfigPolicy)
	rl.bfd = bfds.set
	rl.weights = table.SetNeighborWeights
	// The sessions close with the process: a graceful restart for the peers (see
	// bgp.Speaker.Abandon); the dataplane forwards on.
	defer speaker.Abandon()

	rov := startOriginValidation(ctx, cfg.RPKI, speaker, log)
	mem := &memLimit{setting: rl.memorySetting, cgroup: memlimit.FromCgroup, log: log}
	mem.update(holdings(speaker))
	go mem.run(ctx, time.Second, func() memory.Holdings { return holdings(speaker) })
	m := newMetrics(dp, table, speaker, ksync, dcache, fl, pts, rl)
	m.mem = mem
	m.rov = rov
	m.bfd = bfds
	orig := newOriginator(cfg, speaker, dp.Attachments, m.load.doneWith, log)
	m.origin, rl.origin = orig, orig
	m.restart = &restartState{adopted: prev.Adopted}
	m.restart.pending.Store(prev.Adopted)
	sweep := func() {
		if ksync == nil {
			return
		}
		if n, err := table.SweepKernel(); err != nil || n > 0 {
			log.Info("kernel route sync: removed the routes an earlier process left that the FIB no longer holds", "routes", n, "err", err)
		}
	}
	go swapWhenComplete(ctx, dp, speaker, m.load.doneWith, fl.peerMembers, len(cfg.BGP.Neighbors) > 0 || cfg.Cluster.Mesh.Address != "",
		cfg.BGP.GracefulRestart.RestartTime, func() { orig.step(time.Now()) }, sweep, m.restart, log)
	go orig.run(ctx)
	go rl.run(ctx, cfg.dir, hup)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ready atomic.Bool
	rt := &rates{dp: dp}
	go rt.run(ctx)
	ns := &nodeStatus{name: cfg.NodeName, started: time.Now(), dp: dp, table: table, speaker: speaker, cache: dcache, fleet: fl, rates: rt, ports: pts, reload: rl, origin: orig, mem: mem,
		seed: dataplane.FlowSeedOf(cfg.NodeName)}
	srv, err := newHTTPServer(cfg, httpHandler(reg, cfg.Pprof, &ready, m.readiness, table, dcache, fl, ns))
	if err != nil {
		return err
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- serveHTTP(srv, cfg) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	ready.Store(true)
	log.Info("node running", "node", cfg.NodeName, "interfaces", cfg.Interfaces, "asn", cfg.BGP.ASN,
		"http", cfg.HTTPAddress, "gobgp_api", cfg.BGP.GRPCAddress, "version", version)
	return consume(ctx, speaker, table, m, dcache, orig, newLinkZones(resolver.LinkTowards, log), log, httpErr)
}

// consume applies forwarding changes to the FIB until ctx ends, and follows each
// neighbour's initial dump: progress with rate and ETA while it arrives, and when the
// dataplane holds all of it.
func consume(ctx context.Context, speaker *bgp.Speaker, table *fib.FIB, m *metrics, dcache *cacheLoop, orig *originator, zones *linkZones, log *slog.Logger, httpErr <-chan error) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var b batcher
	g := gatherer{events: speaker.Events(), hold: applyHold, after: time.After}
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			return nil
		case err := <-httpErr:
			return fmt.Errorf("http server on the configured http_address: %w", err)
		case <-speaker.Done():
			return errors.New("BGP speaker stopped")
		case ev := <-speaker.Events():
			// The events already waiting (and, while changes trickle in, those of
			// the next few milliseconds: gatherer) are handled in this pass, their
			// changes applied in as few FIB batches as their order allows: with a
			// real table's attributes an UPDATE carries three prefixes on average,
			// and every batch's commit costs the same however small the batch.
			var ok bool
			if b.evs, ok = g.gather(ctx, ev, b.evs[:0]); !ok {
				log.Info("shutting down")
				return nil
			}
			handleEvents(&b, speaker, table, m, dcache, orig, zones, log)
			for _, ev := range b.evs {
				speaker.Release(ev) // their changes are in the FIB now
			}
			clear(b.evs)
		case now := <-tick.C:
			m.load.sample(speaker.Loads(), now)
			logLoading(log, m.load.snapshot())
		}
	}
}

// holdings is what the speaker holds, for the memory limit.
func holdings(s *bgp.Speaker) memory.Holdings {
	paths, mesh := s.Holdings()
	return memory.Holdings{Paths: paths, MeshPeers: mesh, LiveHeap: memory.LiveHeap()}
}

// batcher holds consume's buffers, reused pass after pass: a full-table load makes
// over a million changes, and fresh slices of them for every pass (the events, the
// batch, the FIB's updates) were 1 GB of its 5.6 GB of garbage.
type batcher struct {
	evs     []bgp.Event
	changes []bgp.Change
	updates []fib.Update
}

// handleEvents handles events in their order: within an event, its session's end
// or start, then its changes, then its End-of-RIB. Consecutive changes are applied
// as one batch; a session event or an End-of-RIB applies what came before it
// first.
func handleEvents(b *batcher, speaker *bgp.Speaker, table *fib.FIB, m *metrics, dcache *cacheLoop, orig *originator, zones *linkZones, log *slog.Logger) {
	batch := b.changes[:0]
	flush := func() {
		if len(batch) > 0 {
			apply(table, m, batch, zones, log, &b.updates)
			orig.observe(batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	defer func() { b.changes = batch }()
	for _, ev := range b.evs {
		// A session's end comes before its withdrawals: the groups move off the
		// neighbour first, and the withdrawals then find nothing to move. Not for a
		// fleet member: its XDP program outlives its process (a restart, a crash),
		// so its session's end says nothing of its forwarding; its death does (the
		// mesh's Gone, from gossip).
		if a := ev.SessionDown; a.IsValid() && !speaker.IsMesh(a) {
			flush()
			table.SetNeighborDown(a, true, "session")
		}
		if a := ev.SessionUp; a.IsValid() && !speaker.IsMesh(a) {
			flush()
			table.SetNeighborDown(a, false, "session")
		}
		batch = append(batch, ev.Changes...)
		if !ev.EndOfRIB.IsValid() {
			continue
		}
		// Every change of the dump came before this event and is applied.
		flush()
		for _, l := range speaker.Loads() {
			if l.Neighbor != ev.EndOfRIB || l.EndOfRIB.IsZero() {
				continue
			}
			if v, first := m.load.fibDone(l, time.Now()); first {
				log.Info("BGP initial load complete: the dataplane holds the neighbour's table",
					"neighbor", l.Neighbor, "prefixes", l.Received, "fib_routes", table.Stats().Routes,
					"bgp_seconds", roundSeconds(l.EndOfRIB.Sub(l.Established)),
					"dataplane_seconds", roundSeconds(v.FIBDone.Sub(l.Established)),
					"dataplane_lag_seconds", roundSeconds(v.Lag()))
				dcache.tableLoaded()
			}
		}
	}
	flush()
}

// apply writes the changes into the FIB, through the buffer buf (reused).
func apply(table *fib.FIB, m *metrics, changes []bgp.Change, zones *linkZones, log *slog.Logger, buf *[]fib.Update) {
	updates := slices.Grow((*buf)[:0], len(changes))[:len(changes)]
	defer func() {
		clear(updates)
		*buf = updates[:0]
	}()
	for i, c := range changes {
		updates[i] = fib.Update{Prefix: c.Prefix, Nexthop: zones.of(c.Nexthop, c.Peer), Withdraw: c.Withdraw, Blackhole: c.Blackhole}
		for _, h := range c.Multipath {
			updates[i].Multipath = append(updates[i].Multipath, zones.of(h.Nexthop, h.Peer))
		}
		if c.Backup.Nexthop.IsValid() {
			updates[i].Backup = zones.of(c.Backup.Nexthop, c.Backup.Peer)
		}
		if c.Withdraw {
			m.withdrawals.Inc()
		} else {
			m.announcements.Inc()
		}
	}
	m.batches.Inc()
	if err := table.Apply(updates); err != nil {
		log.Warn("some routes were not installed in XDP; packets to them pass to the kernel", "err", err)
	}
}

func roundSeconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpHandler(reg *prometheus.Registry, pprofOn bool, ready *atomic.Bool, readiness func() (bool, string), table *fib.FIB, dcache *cacheLoop, fl *fleet, ns *nodeStatus) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, ns.status()) })
	mux.HandleFunc("GET /api/v1/fleet", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, fl.status(r.Context())) })
	mux.HandleFunc("GET /api/v1/cache", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, dcache.status()) })
	mux.HandleFunc("GET /api/v1/announce", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, ns.announced()) })
	mux.HandleFunc("GET /api/v1/neighbors", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, ns.neighbors()) })
	mux.HandleFunc("GET /api/v1/routes", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		if _, err := netip.ParseAddr(q); err != nil {
			if _, err := netip.ParsePrefix(q); err != nil {
				http.Error(w, "q: give an IP address or a prefix, as in /api/v1/routes?q=192.0.2.1 or ?q=192.0.2.0/24", http.StatusBadRequest)
				return
			}
		}
		rs, err := ns.routes(q)
		if err != nil {
			http.Error(w, fmt.Sprintf("routes %s: %v", q, err), http.StatusInternalServerError)
			return
		}
		writeJSON(w, rs)
	})
	mux.HandleFunc("GET /api/v1/fib", func(w http.ResponseWriter, _ *http.Request) {
		s := table.Stats()
		writeJSON(w, nodeapi.FIB{Routes: s.Routes, Digest: table.Digest(), Nexthops: s.Nexthops, UnresolvedNexthops: s.UnresolvedNexthops,
			Refused: s.Refused, KernelSlots: s.KernelSlots, Groups: s.Groups, GroupsUsed: s.GroupsUsed})
	})
	mux.HandleFunc("GET /api/v1/lookup", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a, err := netip.ParseAddr(q.Get("addr"))
		if err != nil {
			http.Error(w, "addr: give an IP address, as in /api/v1/lookup?addr=192.0.2.1", http.StatusBadRequest)
			return
		}
		flow, err := flowQuery(q, a)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l, err := ns.lookup(a, flow)
		if err != nil {
			http.Error(w, fmt.Sprintf("lookup %s: %v", a, err), http.StatusInternalServerError)
			return
		}
		writeJSON(w, l)
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiles, on the same (by default loopback-only) address as metrics, unless off.
	if pprofOn {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		// An execution trace shows what a CPU profile cannot: how long goroutines
		// waited to run (a gossip probe answered late on a starved machine).
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// Readiness: the node holds its upstreams' tables (see readiness). A Kubernetes
	// rolling update moves to the next node only once this one answers 200.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := readiness()
		if !ready.Load() {
			ok, why = false, "starting"
		}
		if !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready: "+why)
	})
	return mux
}

// newHTTPServer serves the node API, metrics and health on http_address: TCP, or a
// unix socket (unix:///path: reachable from the host into a namespace, as the lab
// does); with http_tls, over TLS, and when a client CA is set, everything but the
// probes only to clients with a certificate it signed (clientCertOnly).
func newHTTPServer(cfg Config, h http.Handler) (*http.Server, error) {
	srv := &http.Server{Addr: cfg.HTTPAddress, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	t := cfg.HTTPTLS
	if t.Cert == "" {
		return srv, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ClientCA != "" {
		pem, err := os.ReadFile(t.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("http_tls.client_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("http_tls.client_ca %s: no PEM certificate in it", t.ClientCA)
		}
		// Verified if given, not required: Kubernetes' HTTPS probes present no
		// certificate. A certificate another CA signed still fails the handshake.
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
		srv.Handler = clientCertOnly(h)
	}
	srv.TLSConfig = tc
	return srv, nil
}

// clientCertOnly answers 403 to a request without a verified client certificate,
// except the probes': /healthz and /readyz say only whether the node runs and holds
// its tables, and Kubernetes probes them without a certificate.
func clientCertOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			http.Error(w, "forbidden: "+r.URL.Path+" needs a client certificate signed by the node's http_tls.client_ca (only /healthz and /readyz answer without one)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func serveHTTP(srv *http.Server, cfg Config) error {
	network, addr := "tcp", cfg.HTTPAddress
	if p, ok := strings.CutPrefix(addr, "unix://"); ok {
		network, addr = "unix", p
		_ = os.Remove(p) // a socket a killed run left
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	if cfg.HTTPTLS.Cert != "" {
		return srv.ServeTLS(l, cfg.HTTPTLS.Cert, cfg.HTTPTLS.Key)
	}
	return srv.Serve(l)
}
