package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/dcache"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "fibfleet"

// metrics exports the node's state. Dataplane counters, FIB and BGP state are read
// at scrape time (one map read per reason, one peer list), so nothing is polled.
type metrics struct {
	dp      *dataplane.Dataplane
	fib     *fib.FIB
	speaker *bgp.Speaker
	ksync   *fib.KernelSync // nil when kernel sync is off
	load    *loadProgress
	cache   *cacheLoop
	fleet   *fleet
	ports   *ports
	reload  *reloader
	origin  *originator
	rov     *originValidation
	bfd     *bfdSessions

	// announcements and withdrawals count best-path changes received from BGP.
	announcements prometheus.Counter
	// batches counts the FIB batches applied (their changes are the two above).
	batches     prometheus.Counter
	withdrawals prometheus.Counter

	xdpPackets, xdpBytes        *prometheus.Desc
	xdpAttached, xdpDriverErrs  *prometheus.Desc
	xdpEgress                   *prometheus.Desc
	routes, nexthops, refused   *prometheus.Desc
	kernelSlots, groups, digest *prometheus.Desc
	dir                         *prometheus.Desc
	hash6                       *prometheus.Desc
	ksyncRoutes, ksyncPending   *prometheus.Desc
	sessions, peerUp, buildOK   *prometheus.Desc
	loadReceived, loadExpected  *prometheus.Desc
	loadRate, loadETA, loadDone *prometheus.Desc
	loadSeconds, loadLag        *prometheus.Desc
	cacheEntries, cacheLookups  *prometheus.Desc
	cacheEvents, cacheWS        *prometheus.Desc
	cacheHitRate, cacheCost     *prometheus.Desc
	cacheRegimes, cacheResizes  *prometheus.Desc
	cacheEpoch, cacheMode       *prometheus.Desc
	etcdUp, registered          *prometheus.Desc
	etcdCertExpiry              *prometheus.Desc
	members, meshPeers          *prometheus.Desc
	policySource, flushes       *prometheus.Desc
	meshResends                 *prometheus.Desc
	meshAlarms                  *prometheus.Desc
	prefixes, epochs, gossipHS  *prometheus.Desc
	ready                       *prometheus.Desc
	reloads, reloadOK           *prometheus.Desc
	refusedRoutes               *prometheus.Desc
	advertised, originated      *prometheus.Desc
	policyHash, drained         *prometheus.Desc
	rpkiStates, rpkiUp, rpkiVRP *prometheus.Desc
	blackholes                  *prometheus.Desc
	nhGroups, failovers         *prometheus.Desc
	failoverLast                *prometheus.Desc
	bfdUp, bfdFlaps             *prometheus.Desc
	restartState                *prometheus.Desc
	restart                     *restartState
	memLimit                    *prometheus.Desc
	mem                         *memLimit
}

func newMetrics(dp *dataplane.Dataplane, f *fib.FIB, s *bgp.Speaker, k *fib.KernelSync, c *cacheLoop, fl *fleet, p *ports, rl *reloader) *metrics {
	d := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, sub, name), help, labels, nil)
	}
	return &metrics{
		dp: dp, fib: f, speaker: s, ksync: k, load: newLoadProgress(), cache: c, fleet: fl, ports: p, reload: rl,
		batches:        prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "fib", Name: "batches_total", Help: "FIB batches applied; best-path changes over batches is their average size."}),
		announcements:  prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "bgp", Name: "best_path_announcements_total", Help: "Best-path announcements (new or changed) received from BGP."}),
		withdrawals:    prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "bgp", Name: "best_path_withdrawals_total", Help: "Best-path withdrawals received from BGP."}),
		xdpPackets:     d("xdp", "packets_total", "Frames seen by the XDP program, by action and reason (pass reasons say why the kernel got the frame).", "action", "reason"),
		xdpBytes:       d("xdp", "bytes_total", "Bytes seen by the XDP program, by action and reason.", "action", "reason"),
		xdpAttached:    d("xdp", "attached", "1 for each interface the XDP program runs on (0 once its link was detached from outside: bpftool link detach, or the interface went), with its mode: native (in the driver) or generic (after the kernel built an skb: far slower, only when configured).", "interface", "mode", "driver"),
		xdpEgress:      d("xdp", "egress_frames_total", "Frames the XDP program redirected to the interface, by what its driver did with them (the kernel's xdp_devmap_xmit tracepoint): sent, or dropped (freed by the kernel: counted as forwarded, never sent; a veth whose peer has neither XDP nor GRO, a full or missing XDP transmit ring).", "interface", "result"),
		xdpDriverErrs:  d("xdp", "driver_errors_total", "The egress drivers' own counters of XDP frames they failed to transmit or redirect (ethtool statistics, summed over queues; veth: tx_xdp_xmit_errors): frames counted as forwarded that never reached the wire.", "interface", "counter"),
		routes:         d("fib", "routes", "Routes in the FIB.", "family"),
		nhGroups:       d("fib", "nexthop_groups", "Next-hop groups (the sets of next hops routes share) by state: active (every active member usable), degraded (some down or unresolved: the others carry their flows), backup (every active member down: the backup carries the traffic), down (no usable member: the traffic passes to the kernel, reason no_member).", "state"),
		failovers:      d("fib", "failovers_total", "Next hops marked down or up again, by cause (bfd: the BFD session went down or up; session: the BGP session ended or came up; link: the interface's carrier; member: a fleet node died or came back; hold: a neighbour that flapped held down once back, then released) and direction; each rewrote every group holding them, once.", "cause", "direction"),
		failoverLast:   d("fib", "failover_last_seconds", "How long the last failover of the cause and direction took to rewrite its groups.", "cause", "direction"),
		bfdUp:          d("bfd", "session_up", "1 while the BFD session with the neighbour is up, 0 otherwise (down, or not yet up).", "neighbor"),
		bfdFlaps:       d("bfd", "session_flaps_total", "Times the BFD session with the neighbour went down after being up.", "neighbor"),
		memLimit:       d("", "memory_limit_bytes", "Go's soft memory limit in force (memory_limit), by source: config, formula (over the paths the node holds and its mesh peers), live (1.5 times the live heap, above the formula), collector (twice the live heap while the collector takes over a quarter of the CPU) or cgroup (85% of its limit); absent when off.", "source"),
		restartState:   d("restart", "state", "This start: adopted (1: it found an earlier process's XDP program forwarding and kept it), pending (1 while that program still forwards from its FIB, until this process's is complete and swapped in).", "state"),
		blackholes:     d("fib", "blackholes", "Routes in the FIB through the discard nexthop (blackholed destinations, RFC 7999: from a neighbour allowed to send them, or the fleet's own): their traffic is dropped in XDP (reason blackhole)."),
		nexthops:       d("fib", "nexthops", "Nexthops in the FIB by state: resolved, unresolved (their traffic passes to the kernel), recursive (resolved through another route's next hop; also counted as resolved or not), local (the node's own addresses: routes it originates, delivered by the kernel).", "state"),
		refused:        d("fib", "refused_routes_total", "Routes the compiled FIB had no room for (no free second-level group); their /24 passes to the kernel.", "family"),
		digest:         d("fib", "digest_info", "Order-independent hash of the FIB (prefix -> selected BGP next hop), in the digest label: equal on nodes with equal tables.", "family", "digest"),
		ksyncRoutes:    d("fib", "kernel_sync_routes_total", "Routes kernel sync wrote to the kernel table, by outcome (installed, removed, failed), and at a start: found there (adopted), found right and not written again (kept), removed as no longer in the FIB (swept).", "op"),
		ksyncPending:   d("fib", "kernel_sync_pending", "Route changes waiting to be written to the kernel table."),
		kernelSlots:    d("fib", "kernel_slots", "/24s passing to the kernel because the FIB had no free second-level group for them.", "family"),
		groups:         d("fib", "groups", "Second-level groups of the compiled FIB, by state.", "family", "state"),
		dir:            d("fib", "compressed", "The compressed first level lookups read: nodes and 64-byte lines in use, and /16 blocks read from the uncompressed table because the node pool was full (fallback_blocks, should be 0).", "family", "kind"),
		hash6:          d("fib", "ipv6_hash", "The IPv6 FIB's hash: keys (routes expanded to its lengths), pending (keys that found no room: their /16 passes to the kernel, should be 0), long_routes (longer than /48, in the trie) and buckets (64 bytes, 5 keys each).", "kind"),
		sessions:       d("bgp", "sessions", "BGP sessions by state.", "state"),
		peerUp:         d("bgp", "peer_up", "1 when the session with the neighbour is established.", "neighbor", "peer_asn"),
		buildOK:        d("", "build_info", "Build information.", "version"),
		loadReceived:   d("bgp", "load_received_prefixes", "Prefixes (IPv4 and IPv6) the neighbour announced in this session, as received.", "neighbor"),
		loadExpected:   d("bgp", "load_expected_prefixes", "Size of the neighbour's dump: the last completed one, else the configured expected_prefixes (0: unknown).", "neighbor"),
		loadRate:       d("bgp", "load_prefixes_per_second", "Prefixes received per second over the last progress interval (5s).", "neighbor"),
		loadETA:        d("bgp", "load_eta_seconds", "Estimated time until the neighbour's dump is complete; present only while it loads and the estimate is known.", "neighbor"),
		loadDone:       d("bgp", "load_complete", "1 when the neighbour's End-of-RIB arrived and the dataplane holds every change of its dump.", "neighbor"),
		loadSeconds:    d("bgp", "load_duration_seconds", "Initial dump of the current session, from Established: to End-of-RIB in GoBGP (stage=bgp), and to the dataplane holding it (stage=dataplane).", "neighbor", "stage"),
		loadLag:        d("fib", "load_lag_seconds", "How long the dataplane trailed GoBGP at the neighbour's End-of-RIB.", "neighbor"),
		cacheEntries:   d("cache", "entries", "Destination cache size (entries per CPU; 0: off).", "family"),
		cacheLookups:   d("cache", "lookups_total", "Packets that reached the FIB step, the cache on or off.", "family"),
		cacheEvents:    d("cache", "events_total", "Destination cache events: hit, miss, stale (an entry of an old epoch or route generation), insert, evict (a live entry replaced), refuse (admission kept the busier entries), ghost_hit (a miss twice the cache would have hit, estimated from sampled sets).", "family", "event"),
		cacheWS:        d("cache", "working_set", "Distinct destinations in the last interval (HyperLogLog on a hash-sampled sixteenth of packets), of all packets (of=all) and of the cache's hits (of=hits).", "family", "of"),
		cacheHitRate:   d("cache", "hit_ratio", "Hits per lookup in the last interval.", "family"),
		cacheCost:      d("cache", "cost_nanoseconds", "The calibrated cost model (BPF test runs on this machine): fib (a lookup with the cache off), hit, miss (what a miss adds).", "family", "kind"),
		cacheRegimes:   d("cache", "decisions_total", "The controller's verdicts, one per interval in auto mode: pays, undersized, oversized, no_locality, idle.", "family", "regime"),
		cacheResizes:   d("cache", "resizes_total", "Cache size changes the controller made.", "family"),
		cacheEpoch:     d("cache", "epoch", "The flush epoch cached entries must carry."),
		cacheMode:      d("cache", "mode_info", "The cache policy's mode, in the mode label.", "mode"),
		etcdUp:         d("cluster", "etcd_connected", "1 while etcd answers the node's agent (the node keeps the last epoch and policy while it does not)."),
		etcdCertExpiry: d("cluster", "etcd_client_certificate_expiry_timestamp_seconds", "When the client certificate the node shows etcd (cluster.etcd.cert, read at each scrape: a renewed file counts at once) stops being valid, in Unix seconds; absent without one. Alert well before it: the Helm chart's setup job renews it at an upgrade once a third of its life is left."),
		registered:     d("cluster", "registered", "1 while the node is registered in etcd under a live lease (a flush waits for registered nodes)."),
		members:        d("cluster", "members", "The fleet's members as this node's gossip sees them, by state (alive, dead, left).", "state"),
		meshPeers:      d("cluster", "mesh_neighbors", "iBGP mesh sessions with the fleet's other nodes, by state.", "state"),
		policySource:   d("cluster", "policy_source_info", "Where the cache policy in force comes from (node: its override in etcd; fleet: the fleet's; config: the node's file), in the source label.", "source"),
		flushes:        d("cluster", "flushes_total", "Fleet flushes (epoch changes) applied to the dataplane since start."),
		meshResends:    d("cluster", "mesh_resends_total", "Times this node resent its routes to a mesh peer whose prefixes still differed from its own after cluster.mesh.resend_after (the last resort; should stay 0)."),
		meshAlarms:     d("cluster", "mesh_digest_mismatches", "Mesh peers whose prefixes differ from this node's, unchanged on both sides for 30s: routes lost on the way (an alarm; should stay 0)."),
		prefixes:       d("bgp", "received_prefixes", "Prefixes an upstream neighbour holds announced to this node now (announced and not withdrawn, before import policy), by family.", "neighbor", "family"),
		epochs:         d("cluster", "epoch", "Flush epochs applied: the fleet's (scope=fleet) and this node's own (scope=node); the dataplane's epoch (fibfleet_cache_epoch) is their sum.", "scope"),
		gossipHS:       d("cluster", "gossip_health_score", "memberlist's awareness score: 0 while this node keeps up with gossip; higher when its probes go unanswered (then its verdicts on others are less reliable)."),
		ready:          d("", "ready", "1 when the node is ready to carry traffic (GET /readyz): it holds an upstream's table and none in session is still loading."),
		reloads:        d("config", "reloads_total", "Reloads of the configuration (SIGHUP, a change under -config-dir) by result: applied, unchanged, refused (invalid, or a change that takes a restart: nothing applied), failed (part of it could not be applied; the rest is tried at the next reload).", "result"),
		refusedRoutes:  d("bgp", "import_refused_total", "Routes an upstream announced that its import rules refused, by reason (special_purpose, too_long, too_short, default_route, private_asn, reserved_asn, path_too_long, first_as_not_neighbor, empty_path, own_as, own_prefix: inside a prefix the fleet originates, prefix_list, origin_as, denied_asn, rpki_invalid, blackhole_not_allowed: BLACKHOLE from a neighbour not allowed to send it): kept out of the FIB and the mesh.", "neighbor", "reason"),
		advertised:     d("bgp", "advertised_prefixes", "The fleet's prefixes this node announces to the neighbour now (what its export allows of those announced; 0 while the session is down).", "neighbor"),
		originated:     d("bgp", "originated_prefix_announced", "1 while this node announces the fleet's prefix (it can forward, and its traffic has a route or is local), 0 while it does not; held down before a withdrawal.", "prefix"),
		policyHash:     d("config", "policy_info", "The routing policy in force (the fleet's prefixes, every neighbour's import and export rules), by hash: equal on nodes that run the same policy.", "hash"),
		drained:        d("bgp", "drained", "1 while the node announces its routes with GRACEFUL_SHUTDOWN and local preference 1 to the mesh (ctl drain)."),
		rpkiStates:     d("rpki", "validations_total", "Route origin validations of upstream routes by state (valid, invalid, not_found): each announcement once, and again when a VRP change re-checks it.", "state"),
		rpkiUp:         d("rpki", "validator_up", "1 while the RTR session with the validator is up and in sync; 0 while it is away (its VRPs are kept for rpki.expire).", "validator"),
		rpkiVRP:        d("rpki", "vrps", "VRPs the validator holds (as of its last End of Data).", "validator"),
		reloadOK:       d("config", "last_reload_successful", "1 when the last reload was applied or found nothing to change (or there was none), 0 when it was refused or failed."),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.xdpPackets, m.xdpBytes, m.xdpAttached, m.xdpDriverErrs, m.xdpEgress, m.routes, m.blackholes, m.nexthops, m.refused, m.kernelSlots, m.groups, m.digest, m.dir, m.hash6, m.ksyncRoutes, m.ksyncPending, m.sessions, m.peerUp, m.buildOK,
		m.loadReceived, m.loadExpected, m.loadRate, m.loadETA, m.loadDone, m.loadSeconds, m.loadLag,
		m.cacheEntries, m.cacheLookups, m.cacheEvents, m.cacheWS, m.cacheHitRate, m.cacheCost, m.cacheRegimes, m.cacheResizes, m.cacheEpoch, m.cacheMode,
		m.etcdUp, m.etcdCertExpiry, m.registered, m.members, m.meshPeers, m.policySource, m.flushes, m.meshResends, m.meshAlarms, m.prefixes, m.epochs, m.gossipHS, m.ready, m.reloads, m.reloadOK, m.refusedRoutes,
		m.advertised, m.originated, m.policyHash, m.drained, m.rpkiStates, m.rpkiUp, m.rpkiVRP, m.nhGroups, m.failovers, m.failoverLast, m.bfdUp, m.bfdFlaps, m.restartState, m.memLimit} {
		ch <- d
	}
	m.announcements.Describe(ch)
	m.batches.Describe(ch)
	m.withdrawals.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.announcements.Collect(ch)
	m.batches.Collect(ch)
	m.withdrawals.Collect(ch)
	ch <- prometheus.MustNewConstMetric(m.buildOK, prometheus.GaugeValue, 1, version)
	if m.mem != nil {
		if d := m.mem.decision(); d.Source != "off" && d.Source != "" {
			ch <- prometheus.MustNewConstMetric(m.memLimit, prometheus.GaugeValue, float64(d.Limit), d.Source)
		}
	}
	if r := m.restart; r != nil {
		ch <- prometheus.MustNewConstMetric(m.restartState, prometheus.GaugeValue, b2f(r.adopted), "adopted")
		ch <- prometheus.MustNewConstMetric(m.restartState, prometheus.GaugeValue, b2f(r.pending.Load()), "pending")
	}
	for a, reasons := range m.speaker.Refused() {
		for r, n := range reasons {
			ch <- prometheus.MustNewConstMetric(m.refusedRoutes, prometheus.CounterValue, float64(n), a.String(), r)
		}
	}
	for _, p := range m.speaker.Peers() {
		if p.Mesh {
			continue
		}
		adv, _ := m.speaker.Advertised(p.Address)
		ch <- prometheus.MustNewConstMetric(m.advertised, prometheus.GaugeValue, float64(len(adv)), p.Address.String())
	}
	if m.origin != nil {
		for _, st := range m.origin.d.States() {
			ch <- prometheus.MustNewConstMetric(m.originated, prometheus.GaugeValue, b2f(st.Announced), st.Prefix.String())
		}
	}
	ch <- prometheus.MustNewConstMetric(m.drained, prometheus.GaugeValue, b2f(m.speaker.Drained()))
	for st, n := range m.speaker.OriginStates() {
		ch <- prometheus.MustNewConstMetric(m.rpkiStates, prometheus.CounterValue, float64(n), st)
	}
	if m.rov != nil {
		up, vrps := m.rov.status()
		for v, ok := range up {
			ch <- prometheus.MustNewConstMetric(m.rpkiUp, prometheus.GaugeValue, b2f(ok), v)
		}
		for v, n := range vrps {
			ch <- prometheus.MustNewConstMetric(m.rpkiVRP, prometheus.GaugeValue, float64(n), v)
		}
	}
	if m.reload != nil {
		ch <- prometheus.MustNewConstMetric(m.policyHash, prometheus.GaugeValue, 1, m.reload.policyHash())
		counts, last := m.reload.status()
		for result, n := range counts {
			ch <- prometheus.MustNewConstMetric(m.reloads, prometheus.CounterValue, float64(n), result)
		}
		ok := last.Result != reloadRefused && last.Result != reloadFailed
		ch <- prometheus.MustNewConstMetric(m.reloadOK, prometheus.GaugeValue, b2f(ok))
	}
	if st, err := m.dp.Stats(); err == nil {
		for _, r := range dataplane.Reasons() {
			ch <- prometheus.MustNewConstMetric(m.xdpPackets, prometheus.CounterValue, float64(st[r].Packets), r.Action(), r.String())
			ch <- prometheus.MustNewConstMetric(m.xdpBytes, prometheus.CounterValue, float64(st[r].Bytes), r.Action(), r.String())
		}
	} else {
		ch <- prometheus.NewInvalidMetric(m.xdpPackets, err)
	}
	if m.ports != nil {
		for _, i := range m.ports.interfaces() {
			ch <- prometheus.MustNewConstMetric(m.xdpAttached, prometheus.GaugeValue, b2f(i.Attached), i.Name, i.Mode, i.Driver)
			if i.TxCounted {
				ch <- prometheus.MustNewConstMetric(m.xdpEgress, prometheus.CounterValue, float64(i.TxSent), i.Name, "sent")
				ch <- prometheus.MustNewConstMetric(m.xdpEgress, prometheus.CounterValue, float64(i.TxDropped), i.Name, "dropped")
			}
			for c, v := range i.XDPErrors {
				ch <- prometheus.MustNewConstMetric(m.xdpDriverErrs, prometheus.CounterValue, float64(v), i.Name, c)
			}
		}
	}
	fs := m.fib.Stats()
	ch <- prometheus.MustNewConstMetric(m.routes, prometheus.GaugeValue, float64(fs.RoutesV4), "ipv4")
	ch <- prometheus.MustNewConstMetric(m.routes, prometheus.GaugeValue, float64(fs.RoutesV6), "ipv6")
	ch <- prometheus.MustNewConstMetric(m.blackholes, prometheus.GaugeValue, float64(fs.Blackholes))
	for st, n := range fs.GroupStates {
		ch <- prometheus.MustNewConstMetric(m.nhGroups, prometheus.GaugeValue, float64(n), fib.GroupState(st).String())
	}
	if m.bfd != nil {
		for _, s := range m.bfd.sessions() {
			up := 0.0
			if s.State == "up" {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(m.bfdUp, prometheus.GaugeValue, up, s.Peer.String())
			ch <- prometheus.MustNewConstMetric(m.bfdFlaps, prometheus.CounterValue, float64(s.Flaps), s.Peer.String())
		}
	}
	for k, c := range m.fib.Failovers() {
		dir := "up"
		if k.Down {
			dir = "down"
		}
		ch <- prometheus.MustNewConstMetric(m.failovers, prometheus.CounterValue, float64(c.Count), k.Cause, dir)
		ch <- prometheus.MustNewConstMetric(m.failoverLast, prometheus.GaugeValue, c.Last.Took.Seconds(), k.Cause, dir)
	}
	// The discard nexthop, while in use, is none of these.
	ch <- prometheus.MustNewConstMetric(m.nexthops, prometheus.GaugeValue, float64(fs.Nexthops-fs.UnresolvedNexthops-fs.LocalNexthops-min(fs.Blackholes, 1)), "resolved")
	ch <- prometheus.MustNewConstMetric(m.nexthops, prometheus.GaugeValue, float64(fs.UnresolvedNexthops), "unresolved")
	ch <- prometheus.MustNewConstMetric(m.nexthops, prometheus.GaugeValue, float64(fs.RecursiveNexthops), "recursive")
	ch <- prometheus.MustNewConstMetric(m.nexthops, prometheus.GaugeValue, float64(fs.LocalNexthops), "local")
	ch <- prometheus.MustNewConstMetric(m.refused, prometheus.CounterValue, float64(fs.Refused), "ipv4")
	if k := m.ksync; k != nil {
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Installed.Load()), "installed")
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Removed.Load()), "removed")
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Failed.Load()), "failed")
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Adopted.Load()), "adopted")
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Kept.Load()), "kept")
		ch <- prometheus.MustNewConstMetric(m.ksyncRoutes, prometheus.CounterValue, float64(k.Swept.Load()), "swept")
		ch <- prometheus.MustNewConstMetric(m.ksyncPending, prometheus.GaugeValue, float64(k.Pending.Load()))
	}
	d4, d6 := m.fib.Digests()
	ch <- prometheus.MustNewConstMetric(m.digest, prometheus.GaugeValue, 1, "ipv4", d4)
	ch <- prometheus.MustNewConstMetric(m.digest, prometheus.GaugeValue, 1, "ipv6", d6)
	ch <- prometheus.MustNewConstMetric(m.kernelSlots, prometheus.GaugeValue, float64(fs.KernelSlots), "ipv4")
	ch <- prometheus.MustNewConstMetric(m.groups, prometheus.GaugeValue, float64(fs.GroupsUsed), "ipv4", "used")
	ch <- prometheus.MustNewConstMetric(m.groups, prometheus.GaugeValue, float64(fs.Groups-fs.GroupsUsed), "ipv4", "free")
	ch <- prometheus.MustNewConstMetric(m.dir, prometheus.GaugeValue, float64(fs.DirNodes), "ipv4", "nodes")
	ch <- prometheus.MustNewConstMetric(m.dir, prometheus.GaugeValue, float64(fs.DirLines), "ipv4", "lines")
	ch <- prometheus.MustNewConstMetric(m.dir, prometheus.GaugeValue, float64(fs.DirFallback), "ipv4", "fallback_blocks")
	ch <- prometheus.MustNewConstMetric(m.hash6, prometheus.GaugeValue, float64(fs.V6Keys), "keys")
	ch <- prometheus.MustNewConstMetric(m.hash6, prometheus.GaugeValue, float64(fs.V6Pending), "pending")
	ch <- prometheus.MustNewConstMetric(m.hash6, prometheus.GaugeValue, float64(fs.V6Long), "long_routes")
	ch <- prometheus.MustNewConstMetric(m.hash6, prometheus.GaugeValue, float64(fs.V6Buckets), "buckets")

	// One read of the speaker's peers and loads serves every metric below.
	peers, loads := m.speaker.Peers(), m.speaker.Loads()
	mesh := meshSet(peers)
	counts := map[string]int{}
	for _, p := range peers {
		counts[p.State]++
		ch <- prometheus.MustNewConstMetric(m.peerUp, prometheus.GaugeValue, b2f(p.State == "established"), p.Address.String(), fmt.Sprint(p.ASN))
	}
	for _, s := range bgp.SessionStates() {
		ch <- prometheus.MustNewConstMetric(m.sessions, prometheus.GaugeValue, float64(counts[s]), s)
	}
	m.collectLoads(ch, loads, mesh)
	ok, _ := readiness(loads, m.load.doneWith, mesh)
	ch <- prometheus.MustNewConstMetric(m.ready, prometheus.GaugeValue, b2f(ok))
	m.collectCache(ch)
	m.collectFleet(ch)
}

// collectFleet exports the node's view of its fleet: nothing here asks etcd.
func (m *metrics) collectFleet(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	f := m.fleet
	f.mu.Lock()
	agent, reg := f.agent, f.reg
	f.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.meshResends, prometheus.CounterValue, float64(f.watch.Resends()))
	g(m.meshAlarms, float64(f.watch.Mismatches()))
	var st cluster.AgentStatus
	if agent != nil {
		st = agent.Status()
	}
	g(m.etcdUp, b2f(st.Connected))
	if end, ok := certExpiry(f.cfg.Cluster.Etcd.Cert); ok {
		g(m.etcdCertExpiry, float64(end.Unix()))
	}
	g(m.epochs, float64(st.Epoch), "fleet")
	g(m.epochs, float64(st.NodeEpoch), "node")
	g(m.gossipHS, float64(f.members.HealthScore()))
	g(m.registered, b2f(reg != nil && reg.Registered()))
	states := map[cluster.MemberState]int{}
	for _, v := range f.members.View() {
		states[v.State]++
	}
	for _, s := range cluster.MemberStates {
		g(m.members, float64(states[s]), string(s))
	}
	mesh := map[string]int{}
	for _, p := range m.speaker.MeshPeers() {
		mesh[p.State]++
	}
	for _, s := range bgp.SessionStates() {
		g(m.meshPeers, float64(mesh[s]), s)
	}
	src := st.PolicySource
	if src == "" {
		src = cluster.FromConfig
	}
	g(m.policySource, 1, string(src))
	ch <- prometheus.MustNewConstMetric(m.flushes, prometheus.CounterValue, float64(st.Flushes))
}

// collectCache exports the destination cache: counters live from the dataplane, the
// last interval's figures and verdicts from the sizer.
func (m *metrics) collectCache(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	st := m.cache.status()
	g(m.cacheEpoch, float64(st.Epoch))
	g(m.cacheMode, 1, string(m.cache.sizer.Policy().Mode))
	for _, f := range st.Families {
		fam := f.Family
		t := f.Totals
		g(m.cacheEntries, float64(f.Entries), fam)
		c(m.cacheLookups, t.Lookups, fam)
		for _, e := range []struct {
			name string
			v    uint64
		}{{"hit", t.Hits}, {"miss", t.Misses}, {"stale", t.Stale}, {"insert", t.Inserts}, {"evict", t.Evictions}, {"refuse", t.Refused}, {"ghost_hit", t.GhostHits}} {
			c(m.cacheEvents, e.v, fam, e.name)
		}
		g(m.cacheWS, f.WorkingSet, fam, "all")
		g(m.cacheWS, f.HitWorkingSet, fam, "hits")
		g(m.cacheHitRate, f.HitRate, fam)
		if f.Calibrated {
			g(m.cacheCost, f.Costs.FIB, fam, "fib")
			g(m.cacheCost, f.Costs.Hit, fam, "hit")
			g(m.cacheCost, f.Costs.Miss, fam, "miss")
		}
		fi := dcache.IPv4
		if fam == dcache.IPv6.String() {
			fi = dcache.IPv6
		}
		c(m.cacheResizes, m.cache.resizes[fi].Load(), fam)
		for _, r := range []cache.Regime{cache.Pays, cache.Undersized, cache.Oversized, cache.NoLocality, cache.Idle} {
			c(m.cacheRegimes, m.cache.regime(fi, r).Load(), fam, string(r))
		}
	}
}

// collectLoads exports initial-dump progress: counts live from the speaker, rates and
// ETAs from the last progress sample.
func (m *metrics) collectLoads(ch chan<- prometheus.Metric, loads []bgp.Load, mesh map[netip.Addr]bool) {
	views := map[string]loadView{}
	for _, v := range m.load.snapshot() {
		views[v.Neighbor.String()] = v
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, l := range loads {
		n := l.Neighbor.String()
		v := views[n]
		g(m.loadReceived, float64(l.Received), n)
		g(m.loadExpected, float64(l.Expected), n)
		if !mesh[l.Neighbor] {
			g(m.prefixes, float64(l.Prefixes[0]), n, "ipv4")
			g(m.prefixes, float64(l.Prefixes[1]), n, "ipv6")
		}
		done := m.load.doneWith(l)
		g(m.loadDone, b2f(done), n)
		if !loading(l) {
			v.Rate = 0
		}
		g(m.loadRate, v.Rate, n)
		if loading(l) && v.ETA >= 0 && v.Established.Equal(l.Established) {
			g(m.loadETA, v.ETA.Seconds(), n)
		}
		if !l.EndOfRIB.IsZero() {
			g(m.loadSeconds, l.EndOfRIB.Sub(l.Established).Seconds(), n, "bgp")
		}
		if done {
			g(m.loadSeconds, v.FIBDone.Sub(l.Established).Seconds(), n, "dataplane")
			g(m.loadLag, v.Lag().Seconds(), n)
		}
	}
}

// meshSet holds the mesh peers' addresses (the fleet's other nodes).
func meshSet(peers []bgp.PeerStatus) map[netip.Addr]bool {
	mesh := map[netip.Addr]bool{}
	for _, p := range peers {
		mesh[p.Address] = p.Mesh
	}
	return mesh
}

// readiness is the node's readiness now (see readiness), for /readyz.
func (m *metrics) readiness() (bool, string) {
	if r := m.restart; r != nil && r.pending.Load() {
		// A rolling update must not take down the next router while this one still
		// forwards from the FIB it adopted.
		return false, "restarting: the adopted FIB forwards until this process's is complete"
	}
	return readiness(m.speaker.Loads(), m.load.doneWith, meshSet(m.speaker.Peers()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// certExpiry is when the first certificate in the PEM file path ends (false: no file
// given, or none readable in it).
func certExpiry(path string) (time.Time, bool) {
	if path == "" {
		return time.Time{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return time.Time{}, false
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	return c.NotAfter, true
}
