package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
)

// Route is a prefix the upstream announces with its BGP next hop, and the sink (1 or
// 2, 0 for none) that packets to it reach.
type Route struct {
	Prefix  netip.Prefix
	Nexthop netip.Addr
	Sink    int
}

// SkeletonRoutes are the prefixes BIRD announces that the node forwards: two
// documentation prefixes and two real ones from the 2026-06-19 table (1.1.1.0/24
// AS13335, 9.9.9.0/24 AS19281) with the sinks as next hops, and one whose next hop
// (10.99.0.1) is not on a router link but reached through a kernel route via sink2,
// so the node resolves it recursively. Packets to them never leave the lab.
var SkeletonRoutes = []Route{
	{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParseAddr("10.11.1.2"), 1},
	{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParseAddr("10.11.2.2"), 2},
	{netip.MustParsePrefix("1.1.1.0/24"), netip.MustParseAddr("10.11.1.2"), 1},
	{netip.MustParsePrefix("9.9.9.0/24"), netip.MustParseAddr("10.11.2.2"), 2},
	{netip.MustParsePrefix("100.64.1.0/24"), netip.MustParseAddr("10.99.0.1"), 2},
}

// UnresolvedRoute is announced with a next hop on sink1's link that no host answers
// for: the node keeps its nexthop unresolved and XDP passes its packets to the kernel.
var UnresolvedRoute = Route{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParseAddr("10.11.1.99"), 0}

// AllRoutes is every IPv4 route BIRD announces.
func AllRoutes() []Route { return append(append([]Route(nil), SkeletonRoutes...), UnresolvedRoute) }

// ExtendedNexthopRoute is an IPv4 prefix BIRD announces over its IPv6 session with an
// IPv6 next hop (RFC 8950, extended next hop): the node resolves it through neighbour
// discovery and XDP forwards IPv4 to it.
var ExtendedNexthopRoute = Route{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParseAddr("fd00:11:2::2"), 2}

// Routes4 is how many IPv4 routes the node learns: AllRoutes over the IPv4 session and
// ExtendedNexthopRoute over the IPv6 one.
func Routes4() int { return len(AllRoutes()) + 1 }

// ResolvedNexthops is how many next hops of the skeleton resolve: the sinks' addresses
// of both families and the two recursive ones (UnresolvedRoute's does not).
const ResolvedNexthops = 6

// SkeletonRoutes6 are the IPv6 prefixes BIRD announces over its IPv6 session: two
// documentation prefixes and two real ones from the 2026-06-19 table (2a00:1450::/32
// AS15169, 2620:fe::/48 AS19281), a /40 whose next hop (fd00:99::1) is reached through
// a kernel route via sink2, and a /64 (longer than /48: the dataplane's long-route
// trie).
var SkeletonRoutes6 = []Route{
	{netip.MustParsePrefix("2001:db8:100::/48"), netip.MustParseAddr("fd00:11:1::2"), 1},
	{netip.MustParsePrefix("2001:db8:200::/48"), netip.MustParseAddr("fd00:11:2::2"), 2},
	{netip.MustParsePrefix("2a00:1450::/32"), netip.MustParseAddr("fd00:11:1::2"), 1},
	{netip.MustParsePrefix("2620:fe::/48"), netip.MustParseAddr("fd00:11:2::2"), 2},
	{netip.MustParsePrefix("2001:db8:300::/40"), netip.MustParseAddr("fd00:99::1"), 2},
	{netip.MustParsePrefix("2001:db8:400:1::/64"), netip.MustParseAddr("fd00:11:1::2"), 1},
}

// Addresses of the skeleton topology.
const (
	RouterASN   = 65000
	UpstreamASN = 65001
	SinkPort    = 9999
	MetricsAddr = "127.0.0.1:9464" // inside the router namespace
	GoBGPAddr   = "127.0.0.1:50051"
)

// Skeleton is the walking-skeleton topology:
//
//	src (10.10.0.2, fd00:10::2) -- r0 [router] r1 -- sink1 (10.11.1.2, fd00:11:1::2)
//	                                       r2 -- sink2 (10.11.2.2, fd00:11:2::2)
//	                                       r3 -- upstream (10.12.0.2, fd00:12::2: BIRD, AS65001)
//
// The router runs the node binary (AS65000) with XDP on r0-r3 and IPv4 and IPv6
// forwarding off, so a packet that reaches a sink was forwarded by XDP. BIRD announces
// AllRoutes over an IPv4 session and SkeletonRoutes6 over an IPv6 one; the router's
// kernel has two static routes, 10.99.0.0/24 and fd00:99::/64 via sink2.
type Skeleton struct {
	*Lab
	Src, Router, Sink1, Sink2, Upstream *Netns
	NodeName                            string
	Dir                                 string
	NodeLog, BirdLog, BirdSock          string
	// BirdRx is set when a Table is given: a second BIRD 2 ("birdrx" namespace) that
	// the upstream feeds the same table over a session of its own, left disabled until
	// "birdc enable baseline" on the upstream, and that installs it into its kernel
	// table: the baseline fibfleet's full-table convergence is compared with.
	BirdRx                *Netns
	BirdRxSock, BirdRxLog string
	BirdRxPID             int
	// NodePID is the node process (nsenter execs it in place).
	NodePID int
	// nodeArgs are the node's arguments (its configuration), for RestartNode.
	nodeArgs []string
	// ConfigDir is the node's -config-dir (SkeletonConfig.ConfigDir), else empty.
	ConfigDir string
	// Secure6File holds the IPv6 session's TCP-MD5 password (SkeletonConfig.Secure6),
	// else empty.
	Secure6File string
	// NodeConfigYAML is the configuration the node was started with: a test that
	// reconfigures it starts from this.
	NodeConfigYAML string
	// Upstream2 runs the second upstream's BIRD (SkeletonConfig.Announce), with its
	// control socket and log.
	Upstream2           *Netns
	Bird2Sock, Bird2Log string
	announce            bool
	importFilter        string
	vrpFile             string
	rpkiInvalid         string
	validator           *exec.Cmd
	validatorRefresh    time.Duration
	restartTime         time.Duration
	pprof               bool
}

// SkeletonConfig says how to run the skeleton.
type SkeletonConfig struct {
	// NodeBinary is the fibfleet node executable.
	NodeBinary string
	// Capabilities, when set, are the only capabilities the node runs with (names as
	// in capabilities(7) without CAP_, e.g. NET_ADMIN): setpriv takes every other one
	// out of its bounding set, as a Kubernetes pod that drops ALL and adds these.
	Capabilities []string
	// Dir holds configs, logs and sockets.
	Dir string
	// XDPMode is native (default) or generic.
	XDPMode string
	// FIBBackend is the node's fib.backend: compiled (default) or kernel. With kernel,
	// the router's IPv4 forwarding is on (bpf_fib_lookup needs it); otherwise off, so
	// only XDP can forward.
	FIBBackend string
	// Table, when set, is announced by BIRD too (static protocol "fulltable"), every route
	// with sink1 (10.11.1.2) as next hop. Leave out prefixes that overlap AllRoutes.
	Table []table.Route
	// TableAttrs, when set, gives Table's routes real AS paths and communities
	// (table.Model.Assign): a table whose routes share one AS path is packed
	// hundreds of prefixes to an UPDATE and flatters the receiver's memory and time.
	TableAttrs *table.Model
	// Table6, when set, is announced over the IPv6 session too (static protocol
	// "fulltable6"), every route with sink1 (fd00:11:1::2) as next hop. Leave out
	// prefixes that overlap SkeletonRoutes6.
	Table6 []table.Route
	// BareSink2 leaves sink2's end of its link with neither an XDP program nor GRO:
	// the kernel then drops the frames the node redirects to it (what an operator's
	// misconfigured veth does).
	BareSink2 bool
	// Crafted makes BIRD announce CraftedRoutes too, over the IPv4 session, each with
	// the AS path its case needs.
	Crafted bool
	// Secure6, when set, is the TCP-MD5 password of the IPv6 session, which also runs
	// GTSM (ttl security) on both sides; the node reads it from a file in Dir.
	Secure6 string
	// ConfigDir runs the node with -config-dir: its configuration is fleet.yaml in a
	// directory laid out as Kubernetes mounts a ConfigMap (WriteConfig swaps it).
	ConfigDir bool
	// Announce runs the fleet's announcements: the node originates the Origin
	// prefixes; a second upstream (BIRD, AS65003, namespace up2 on r4) and the
	// upstream's BIRD take what their exports allow; the second upstream's BIRD also
	// plays the operator's core, an iBGP session (CoreAddr on a link of its own, r5,
	// in the node's AS) announcing CoreRoute (static protocol "corenet": `Birdc2
	// disable corenet` withdraws it); the upstream announces one of the node's own
	// prefixes (OwnPrefixRoute) over its IPv4 session. A third upstream (ExtraAddr,
	// AS ExtraASN) waits on its own link for a reload to add it.
	Announce bool
	// ImportFilter "off" runs the IPv4 upstream without import rules (the A/B
	// baseline of their cost); "" gives it the lab's rules (LabImport).
	ImportFilter string
	// VRPs, when set, run stayrtr (an RTR server) in the upstream namespace on
	// ValidatorAddr, serving them from a file it reads every second (WriteVRPs
	// changes it), and the node validates route origins against it.
	VRPs []rpki.VRP
	// RPKIInvalid is the node's rpki.invalid ("": its default, reject).
	RPKIInvalid string
	// ValidatorRefresh is how often stayrtr reads its file again (0: every second,
	// for WriteVRPs). A large set read every second costs stayrtr most of a core
	// (33 MB of JSON for 500,000 VRPs): benchmarks of a set that does not change
	// read it once.
	ValidatorRefresh time.Duration
	// RestartTime is the node's bgp.graceful_restart.restart_time (0: its default).
	RestartTime time.Duration
	// Pprof serves the node's Go profiles on MetricsAddr (its config's pprof).
	Pprof bool
}

// ValidatorAddr is the RTR server of SkeletonConfig.VRPs.
const ValidatorAddr = UpstreamAddr + ":8282"

// The fleet's prefixes in the skeleton (SkeletonConfig.Announce), with what each
// reaches, and what the node's exports send where.
var (
	// OriginLocal and OriginLocal6 are local destinations: announced while the node
	// forwards.
	OriginLocal  = netip.MustParsePrefix("198.19.10.0/24")
	OriginLocal6 = netip.MustParsePrefix("2001:db8:f00::/48")
	// OriginRouted lies inside CoreRoute: announced while the core announces it.
	OriginRouted = netip.MustParsePrefix("198.19.20.0/24")
	// OriginUnrouted has no route from inside the AS: never announced.
	OriginUnrouted = netip.MustParsePrefix("100.64.200.0/24")
	// CoreRoute is what the core (iBGP) announces, next hop sink2.
	CoreRoute = netip.MustParsePrefix("198.19.0.0/16")
	// OwnPrefixRoute is OriginLocal as the upstream announces it (next hop sink1):
	// the node refuses it (own_prefix).
	OwnPrefixRoute = OriginLocal
	// ExtraRoute is what a third upstream, not in the node's configuration (ExtraAddr,
	// on a link of its own, r6), announces once a reload adds it; next hop sink1.
	ExtraRoute = netip.MustParsePrefix("198.18.77.0/24")
)

// Addresses of the announcement topology.
const (
	CoreAddr       = "10.15.0.2"
	RouterCoreAddr = "10.15.0.1"
	Upstream2Addr  = "10.14.0.2"
	RouterUp2Addr  = "10.14.0.1"
	Upstream2ASN   = 65003
	// ExtraAddr is the third upstream (AS ExtraASN, run by the second upstream's BIRD)
	// that no configuration names at first.
	ExtraAddr       = "10.16.0.2"
	RouterExtraAddr = "10.16.0.1"
	ExtraASN        = 65004
	// AnnounceHoldDown is the node's bgp.originate.hold_down in the skeleton: short
	// (the default is 30 s), as TestAnnounce waits for it twice.
	AnnounceHoldDown = 10 * time.Second
)

// StartSkeleton builds the topology and starts BIRD and the node. On error, the caller
// still owns the returned lab (when non-nil) and must Close it.
func StartSkeleton(cfg SkeletonConfig) (*Skeleton, error) {
	l, err := New()
	if err != nil {
		return nil, err
	}
	s := &Skeleton{Lab: l, Dir: cfg.Dir, NodeName: l.Prefix + "-rtr", importFilter: cfg.ImportFilter, rpkiInvalid: cfg.RPKIInvalid,
		validatorRefresh: cfg.ValidatorRefresh, restartTime: cfg.RestartTime, pprof: cfg.Pprof}
	if err := s.build(cfg); err != nil {
		return s, err
	}
	return s, nil
}

func (s *Skeleton) build(cfg SkeletonConfig) error {
	var err error
	for _, n := range []struct {
		p    **Netns
		role string
	}{{&s.Src, "src"}, {&s.Router, "rtr"}, {&s.Sink1, "sink1"}, {&s.Sink2, "sink2"}, {&s.Upstream, "up"}} {
		if *n.p, err = s.Netns(n.role); err != nil {
			return err
		}
	}
	links := []struct {
		a            *Netns
		aRole, aAddr string
		b            *Netns
		bRole, bAddr string
	}{
		{s.Src, "s0", "10.10.0.2/24", s.Router, "r0", "10.10.0.1/24"},
		{s.Router, "r1", "10.11.1.1/24", s.Sink1, "k1", "10.11.1.2/24"},
		{s.Router, "r2", "10.11.2.1/24", s.Sink2, "k2", "10.11.2.2/24"},
		{s.Router, "r3", RouterUpAddr + "/24", s.Upstream, "u0", UpstreamAddr + "/24"},
	}
	for _, k := range links {
		if err := s.Link(k.a, k.aRole, k.aAddr, k.b, k.bRole, k.bAddr); err != nil {
			return err
		}
	}
	// IPv6 on the same links (nodad: usable at once).
	for _, a := range []struct {
		ns         *Netns
		role, addr string
	}{{s.Src, "s0", "fd00:10::2/64"}, {s.Router, "r0", "fd00:10::1/64"}, {s.Router, "r1", "fd00:11:1::1/64"},
		{s.Sink1, "k1", "fd00:11:1::2/64"}, {s.Router, "r2", "fd00:11:2::1/64"}, {s.Sink2, "k2", "fd00:11:2::2/64"},
		{s.Router, "r3", RouterUpAddr6 + "/64"}, {s.Upstream, "u0", UpstreamAddr6 + "/64"}} {
		if _, err := a.ns.Exec("ip", "-6", "addr", "add", a.addr, "dev", s.If(a.role), "nodad"); err != nil {
			return err
		}
	}
	if err := disableTxChecksum(s.Src, s.If("s0")); err != nil {
		return err
	}
	forwarding := "0"
	if cfg.FIBBackend == "kernel" {
		forwarding = "1"
	}
	if err := s.Router.Sysctl("net.ipv4.ip_forward", forwarding); err != nil {
		return err
	}
	if err := s.Router.Sysctl("net.ipv6.conf.all.forwarding", forwarding); err != nil {
		return err
	}
	for _, sink := range []*Netns{s.Sink1, s.Sink2} {
		for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
			if err := sink.Sysctl(k, "0"); err != nil {
				return err
			}
		}
	}
	for _, r := range AllRoutes() {
		// The sink accepts every address of its prefixes as its own.
		if sink := map[int]*Netns{1: s.Sink1, 2: s.Sink2}[r.Sink]; sink != nil {
			if _, err := sink.Exec("ip", "route", "add", "local", r.Prefix.String(), "dev", "lo"); err != nil {
				return err
			}
		}
		if _, err := s.Src.Exec("ip", "route", "add", r.Prefix.String(), "via", "10.10.0.1"); err != nil {
			return err
		}
	}
	if cfg.Crafted {
		// Sink1 takes every crafted destination as its own (the refused ones too: a
		// datagram the router forwarded there anyway would be counted), and the
		// source sends them through the router; the default route aside.
		for _, r := range CraftedRoutes {
			if r.Prefix.Bits() == 0 {
				continue
			}
			if _, err := s.Sink1.Exec("ip", "route", "add", "local", r.Prefix.String(), "dev", "lo"); err != nil {
				return err
			}
			if _, err := s.Src.Exec("ip", "route", "add", r.Prefix.String(), "via", "10.10.0.1"); err != nil {
				return err
			}
		}
	}
	for _, r := range append(SkeletonRoutes6, ExtendedNexthopRoute) {
		sink := map[int]*Netns{1: s.Sink1, 2: s.Sink2}[r.Sink]
		fam, via := "-6", "fd00:10::1"
		if r.Prefix.Addr().Is4() {
			fam, via = "-4", "10.10.0.1"
		}
		if _, err := sink.Exec("ip", fam, "route", "add", "local", r.Prefix.String(), "dev", "lo"); err != nil {
			return err
		}
		if _, err := s.Src.Exec("ip", fam, "route", "add", r.Prefix.String(), "via", via); err != nil {
			return err
		}
	}
	// The recursive next hops 10.99.0.1 and fd00:99::1 lie behind sink2.
	if _, err := s.Router.Exec("ip", "route", "add", "10.99.0.0/24", "via", "10.11.2.2"); err != nil {
		return err
	}
	if _, err := s.Router.Exec("ip", "-6", "route", "add", "fd00:99::/64", "via", "fd00:11:2::2"); err != nil {
		return err
	}
	// veth drops XDP-redirected frames unless the receiving end runs XDP (or GRO).
	if err := s.AttachPass(s.Sink1, s.If("k1")); err != nil {
		return err
	}
	if !cfg.BareSink2 {
		if err := s.AttachPass(s.Sink2, s.If("k2")); err != nil {
			return err
		}
	} else if err := SetGRO(s.Sink2, s.If("k2"), false); err != nil {
		return err
	}
	if cfg.Announce {
		s.announce = true
		if err := s.buildAnnounce(); err != nil {
			return err
		}
	}
	if err := s.CheckIsolated(); err != nil {
		return err
	}
	if cfg.Secure6 != "" {
		s.Secure6File = filepath.Join(s.Dir, "bgp6.password")
		if err := os.WriteFile(s.Secure6File, []byte(cfg.Secure6+"\n"), 0o600); err != nil {
			return err
		}
	}
	if err := s.startBird(cfg.Table, cfg.TableAttrs, cfg.Table6, cfg.Secure6, cfg.Crafted); err != nil {
		return err
	}
	if len(cfg.Table) > 0 {
		if err := s.startBirdRx(); err != nil {
			return err
		}
	}
	if cfg.VRPs != nil {
		s.vrpFile = filepath.Join(s.Dir, "vrps.json")
		if err := s.WriteVRPs(cfg.VRPs); err != nil {
			return err
		}
		if err := s.startValidator(); err != nil {
			return err
		}
	}
	return s.startNode(cfg)
}

func (s *Skeleton) startValidator() error {
	cmd, err := startStayRTR(s.Upstream, s.Dir, s.vrpFile, s.validatorRefresh)
	s.validator = cmd
	return err
}

// startStayRTR runs stayrtr in ns on ValidatorAddr, serving file (read again every
// refresh), its log in dir.
func startStayRTR(ns *Netns, dir, file string, refresh time.Duration) (*exec.Cmd, error) {
	cmd, err := ns.Start(filepath.Join(dir, "stayrtr.log"), "stayrtr", "-cache", file, "-checktime=false",
		"-refresh", strconv.Itoa(int(max(refresh, time.Second)/time.Second)), "-bind", ValidatorAddr, "-metrics.addr", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w (install stayrtr: apt-get install stayrtr)", err)
	}
	return cmd, nil
}

// RestartValidator stops stayrtr, gives it vrps and starts it again: the node's RTR
// session starts over and gets them as a first set, as from a validator that came
// up late.
func (s *Skeleton) RestartValidator(vrps []rpki.VRP) error {
	if s.validator == nil {
		return errors.New("lab: the skeleton runs no validator (SkeletonConfig.VRPs)")
	}
	_ = s.validator.Process.Kill()
	// Gone once reaped (Start's goroutine waits for it); its port is free then.
	for end := time.Now().Add(5 * time.Second); syscall.Kill(s.validator.Process.Pid, 0) == nil && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.WriteVRPs(vrps); err != nil {
		return err
	}
	return s.startValidator()
}

func (s *Skeleton) startBird(extra []table.Route, attrs *table.Model, extra6 []table.Route, secure6 string, craft bool) error {
	c, err := newBirdConfig(filepath.Join(s.Dir, "bird.conf"), UpstreamAddr)
	if err != nil {
		return err
	}
	// One static protocol per route, so that a test withdraws one (StaticProtocol).
	for i, r := range AllRoutes() {
		c.static(fmt.Sprintf("r%d", i), r.Prefix)
	}
	for i, r := range SkeletonRoutes6 {
		c.static(fmt.Sprintf("r6_%d", i), r.Prefix)
	}
	c.static("r8950", ExtendedNexthopRoute.Prefix)
	prefixes := func(rs []table.Route) []netip.Prefix {
		out := make([]netip.Prefix, len(rs))
		for i, r := range rs {
			out[i] = r.Prefix
		}
		return out
	}
	if len(extra6) > 0 {
		c.static("fulltable6", prefixes(extra6)...)
	}
	switch {
	case len(extra) > 0 && attrs != nil:
		c.staticAttrs("fulltable", false, *attrs, extra)
	case len(extra) > 0:
		c.static("fulltable", prefixes(extra)...)
	}
	var crafted []netip.Prefix
	if craft {
		for _, r := range CraftedRoutes {
			crafted = append(crafted, r.Prefix)
		}
		c.static("crafted", crafted...)
	}
	if s.announce {
		c.static("ownpfx", OwnPrefixRoute)
	}
	var exp6, exp4, exp8950 nexthopFilter
	for _, r := range SkeletonRoutes6 {
		exp6.net(r.Prefix, r.Nexthop)
	}
	exp6.proto("fulltable6", netip.MustParseAddr("fd00:11:1::2"))
	exp8950.proto("r8950", ExtendedNexthopRoute.Nexthop)
	for _, r := range AllRoutes() {
		exp4.net(r.Prefix, r.Nexthop)
	}
	exp4.proto("fulltable", netip.MustParseAddr("10.11.1.2"))
	for _, r := range CraftedRoutes[:len(crafted)] {
		exp4.netPath(r.Prefix, netip.MustParseAddr("10.11.1.2"), r.Path)
	}
	if s.announce {
		exp4.proto("ownpfx", netip.MustParseAddr("10.11.1.2"))
	}
	c.bgp(birdSession{name: "node6", local: UpstreamAddr6, localAS: UpstreamASN, neighbor: RouterUpAddr6, neighborAS: RouterASN,
		password: secure6, ttlSecurity: secure6 != "", quickRetry: true, channels: []birdChannel{
			{family: "ipv6", imp: "all", exp: exp6.String()},
			{family: "ipv4", imp: "none", exp: exp8950.String(), extendedNexthop: true},
		}})
	c.bgp(birdSession{name: "node", local: UpstreamAddr, localAS: UpstreamASN, neighbor: RouterUpAddr, neighborAS: RouterASN, quickRetry: true,
		channels: []birdChannel{{family: "ipv4", imp: "all", exp: exp4.String()}}})
	if len(extra) > 0 {
		var base nexthopFilter
		base.proto("fulltable", netip.MustParseAddr("10.13.0.2"))
		c.bgp(birdSession{name: "baseline", disabled: true, local: "10.13.0.2", localAS: UpstreamASN, neighbor: "10.13.0.1", neighborAS: baselineASN,
			channels: []birdChannel{{family: "ipv4", imp: "none", exp: base.String()}}})
	}
	s.BirdSock, s.BirdLog, _, err = startBird(s.Upstream, s.Dir, "bird", c)
	return err
}

// buildAnnounce adds the second upstream and the core's address, and sends
// OwnPrefixRoute's packets through the router to sink1 (which takes them as its own:
// a packet forwarded on the upstream's route would be counted).
func (s *Skeleton) buildAnnounce() error {
	var err error
	if s.Upstream2, err = s.Netns("up2"); err != nil {
		return err
	}
	if err := s.Link(s.Router, "r4", RouterUp2Addr+"/24", s.Upstream2, "u2", Upstream2Addr+"/24"); err != nil {
		return err
	}
	// The core's session runs on a link of its own: BIRD runs one session at a time
	// per neighbour address, so it cannot share the upstream's.
	if err := s.Link(s.Router, "r5", RouterCoreAddr+"/24", s.Upstream2, "c0", CoreAddr+"/24"); err != nil {
		return err
	}
	if err := s.Link(s.Router, "r6", RouterExtraAddr+"/24", s.Upstream2, "x0", ExtraAddr+"/24"); err != nil {
		return err
	}
	if _, err := s.Sink1.Exec("ip", "route", "add", "local", ExtraRoute.String(), "dev", "lo"); err != nil {
		return err
	}
	if _, err := s.Src.Exec("ip", "route", "add", ExtraRoute.String(), "via", "10.10.0.1"); err != nil {
		return err
	}
	if _, err := s.Sink1.Exec("ip", "route", "add", "local", OwnPrefixRoute.String(), "dev", "lo"); err != nil {
		return err
	}
	if _, err := s.Src.Exec("ip", "route", "add", OwnPrefixRoute.String(), "via", "10.10.0.1"); err != nil {
		return err
	}
	c, err := newBirdConfig(filepath.Join(s.Dir, "bird2.conf"), Upstream2Addr)
	if err != nil {
		return err
	}
	c.bgp(birdSession{name: "node", local: Upstream2Addr, localAS: Upstream2ASN, neighbor: RouterUp2Addr, neighborAS: RouterASN, quickRetry: true,
		channels: []birdChannel{{family: "ipv4", imp: "all", exp: "none"}}})
	c.static("corenet", CoreRoute)
	var core nexthopFilter
	core.proto("corenet", netip.MustParseAddr("10.11.2.2"))
	c.bgp(birdSession{name: "core", local: CoreAddr, localAS: RouterASN, neighbor: RouterCoreAddr, neighborAS: RouterASN, quickRetry: true,
		channels: []birdChannel{{family: "ipv4", imp: "none", exp: core.String()}}})
	c.static("extranet", ExtraRoute)
	var extra nexthopFilter
	extra.proto("extranet", netip.MustParseAddr("10.11.1.2"))
	c.bgp(birdSession{name: "extra", local: ExtraAddr, localAS: ExtraASN, neighbor: RouterExtraAddr, neighborAS: RouterASN, quickRetry: true,
		channels: []birdChannel{{family: "ipv4", imp: "none", exp: extra.String()}}})
	s.Bird2Sock, s.Bird2Log, _, err = startBird(s.Upstream2, s.Dir, "bird2", c)
	return err
}

// WriteVRPs replaces the VRPs stayrtr serves (SkeletonConfig.VRPs): it reads the file
// again within a second and notifies the node.
func (s *Skeleton) WriteVRPs(vrps []rpki.VRP) error {
	if s.vrpFile == "" {
		return errors.New("lab: the skeleton runs no validator (SkeletonConfig.VRPs)")
	}
	return writeVRPs(s.vrpFile, vrps)
}

// writeVRPs writes a VRP file as stayrtr reads it (rpki-client's JSON), whole.
func writeVRPs(path string, vrps []rpki.VRP) error {
	rows := make([]string, len(vrps))
	for i, v := range vrps {
		rows[i] = fmt.Sprintf(`{"prefix": %q, "maxLength": %d, "asn": "AS%d"}`, v.Prefix, v.MaxLength, v.ASN)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{"roas": [`+strings.Join(rows, ", ")+`]}`), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Birdc2 runs a birdc command against the second upstream's BIRD.
func (s *Skeleton) Birdc2(args ...string) (string, error) {
	return run(append([]string{"birdc", "-s", s.Bird2Sock}, args...)...)
}

// baselineASN is the AS of the baseline BIRD (birdrx), which takes the table into
// its kernel for comparison.
const baselineASN = 65002

// startBirdRx starts the baseline BIRD in its own namespace, linked to the upstream.
func (s *Skeleton) startBirdRx() error {
	var err error
	if s.BirdRx, err = s.Netns("birdrx"); err != nil {
		return err
	}
	if err := s.Link(s.Upstream, "u1", "10.13.0.2/24", s.BirdRx, "x0", "10.13.0.1/24"); err != nil {
		return err
	}
	c, err := newBirdConfig(filepath.Join(s.Dir, "birdrx.conf"), "10.13.0.1")
	if err != nil {
		return err
	}
	c.kernelExport("kfib")
	c.bgp(birdSession{name: "upstream", local: "10.13.0.1", localAS: baselineASN, neighbor: "10.13.0.2", neighborAS: UpstreamASN,
		channels: []birdChannel{{family: "ipv4", imp: "all", exp: "none"}}})
	var cmd *exec.Cmd
	if s.BirdRxSock, s.BirdRxLog, cmd, err = startBird(s.BirdRx, s.Dir, "birdrx", c); err != nil {
		return err
	}
	s.BirdRxPID = cmd.Process.Pid
	return nil
}

// CraftedRoute is a route BIRD announces with SkeletonConfig.Crafted, and the import
// rule it breaks ("" for a valid one), under the lab's import rules (LabImport).
type CraftedRoute struct {
	Prefix netip.Prefix
	// Path changes BIRD's AS path before it prepends its own AS (BIRD statements).
	Path   string
	Reason string
}

// CraftedRoutes break one import rule each (beside valid ones), all with sink1 as
// next hop. An empty path and a first AS that is not the neighbour's cannot come
// from BIRD (it prepends its AS on eBGP): bgp's unit tests cover them.
var CraftedRoutes = func() []CraftedRoute {
	long := strings.Repeat("bgp_path.prepend(3356); ", 100)
	return []CraftedRoute{
		{netip.MustParsePrefix("8.8.8.0/24"), "bgp_path.prepend(15169);", ""},
		{netip.MustParsePrefix("8.8.4.0/24"), "bgp_path.prepend(15169); bgp_path.prepend(3356);", ""},
		{netip.MustParsePrefix("10.20.0.0/16"), "", "special_purpose"},
		{netip.MustParsePrefix("172.20.0.0/16"), "", "special_purpose"},
		{netip.MustParsePrefix("0.0.0.0/0"), "", "default_route"},
		{netip.MustParsePrefix("9.9.10.128/25"), "", "too_long"},
		{netip.MustParsePrefix("12.0.0.0/7"), "", "too_short"},
		{netip.MustParsePrefix("8.8.5.0/24"), "bgp_path.prepend(23456);", "reserved_asn"},
		{netip.MustParsePrefix("8.8.6.0/24"), "bgp_path.prepend(64500);", "reserved_asn"},
		{netip.MustParsePrefix("8.8.7.0/24"), long, "path_too_long"},
	}
}()

// StaticProtocol names the BIRD static protocol that originates a route: `birdc
// disable` on it withdraws the route.
func StaticProtocol(r Route) string {
	for i, a := range AllRoutes() {
		if a == r {
			return fmt.Sprintf("r%d", i)
		}
	}
	for i, a := range SkeletonRoutes6 {
		if a == r {
			return fmt.Sprintf("r6_%d", i)
		}
	}
	return ""
}

// Birdc runs a birdc command against the upstream's BIRD.
func (s *Skeleton) Birdc(args ...string) (string, error) {
	return run(append([]string{"birdc", "-s", s.BirdSock}, args...)...)
}

// NodeConfig is the node's YAML config in the skeleton (the cache's controller judges
// every 250ms, so that a lab's traffic shows its decisions within seconds).
// labImport6 is LabImport with any length: the IPv6 session carries a /64 for the
// FIB's long-route trie.
const labImport6 = "{private_asns: true, any_length: true, " + labAllow + "}"

func (s *Skeleton) NodeConfig(xdpMode, backend string, maxPrefixes, expected, expected6 int) string {
	if xdpMode == "" {
		xdpMode = "native"
	}
	if backend == "" {
		backend = "compiled"
	}
	secure, export4, export6, announce, import4, rov, gr := "", "", "", "", LabImport, "", ""
	if s.restartTime > 0 {
		gr = fmt.Sprintf("  graceful_restart: {restart_time: %s}\n", s.restartTime)
	}
	if s.vrpFile != "" {
		rov = fmt.Sprintf("rpki:\n  validators: [\"%s\"]\n  refresh: 2s\n", ValidatorAddr)
		if s.rpkiInvalid != "" {
			rov += "  invalid: " + s.rpkiInvalid + "\n"
		}
	}
	if s.importFilter != "" {
		import4 = "{filter: " + s.importFilter + "}"
	}
	if s.Secure6File != "" {
		secure = fmt.Sprintf("      password_file: %s\n      ttl_security: true\n", s.Secure6File)
	}
	if s.announce {
		export4 = fmt.Sprintf("      export: {prefixes: [%s, %s, %s], communities: [\"65000:100\"], large_communities: [\"65000:1:2\"], prepend: 2, med: 50}\n",
			OriginLocal, OriginRouted, OriginUnrouted)
		export6 = fmt.Sprintf("      export: {prefixes: [%s]}\n", OriginLocal6)
		announce = fmt.Sprintf(`    - address: %s
      asn: %d
    - address: %s
      asn: %d
      import: %s
      export: {prefixes: [%s], communities: ["65000:200"]}
  originate:
    hold_down: %s
    prefixes:
      - {prefix: %s, reaches: local}
      - {prefix: %s, reaches: local}
      - {prefix: %s, reaches: route}
      - {prefix: %s, reaches: route}
`, CoreAddr, RouterASN, Upstream2Addr, Upstream2ASN, LabImport, OriginLocal, AnnounceHoldDown, OriginLocal, OriginLocal6, OriginRouted, OriginUnrouted)
	}
	if s.pprof {
		rov += "pprof: true\n"
	}
	return fmt.Sprintf(`node_name: %s
interfaces: [%s, %s, %s, %s]
xdp_mode: %s
http_address: %s
%sfib:
  backend: %s
cache:
  interval: 250ms
cluster:
  embedded:
    data_dir: %s
bgp:
  asn: %d
  router_id: %s
  grpc_address: %s
%s  neighbors:
    - address: %s
      asn: %d
      max_prefixes: %d
      expected_prefixes: %d
      import: %s
%s    - address: %s
      asn: %d
      families: [ipv6-unicast, ipv4-unicast]
      expected_prefixes: %d
      import: %s
%s%s%s`, s.NodeName, s.If("r0"), s.If("r1"), s.If("r2"), s.If("r3"), xdpMode, MetricsAddr, rov, backend, filepath.Join(s.Dir, "etcd"), RouterASN, RouterUpAddr, GoBGPAddr, gr, UpstreamAddr, UpstreamASN, maxPrefixes, expected, import4,
		export4, UpstreamAddr6, UpstreamASN, expected6, labImport6, secure, export6, announce)
}

func (s *Skeleton) startNode(cfg SkeletonConfig) error {
	body := s.NodeConfig(cfg.XDPMode, cfg.FIBBackend, len(AllRoutes())+len(cfg.Table)+1000, len(AllRoutes())+len(cfg.Table), len(SkeletonRoutes6)+1+len(cfg.Table6))
	s.NodeConfigYAML = body
	conf := filepath.Join(s.Dir, "node.yaml")
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return err
	}
	configArgs := []string{"-config", conf}
	if cfg.ConfigDir {
		s.ConfigDir = filepath.Join(s.Dir, "config")
		if err := os.MkdirAll(s.ConfigDir, 0o755); err != nil {
			return err
		}
		if err := s.WriteConfig(body); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join("..data", "fleet.yaml"), filepath.Join(s.ConfigDir, "fleet.yaml")); err != nil {
			return err
		}
		configArgs = []string{"-config-dir", s.ConfigDir}
	}
	s.NodeLog = filepath.Join(s.Dir, "node.log")
	// Runs after the node is stopped (cleanups run in reverse): its dataplane
	// outlives it (64 MiB and more of pinned maps, and the XDP links), as on a
	// router; remove it as node -uninstall does.
	s.Defer(func() error {
		_, err := dataplane.Uninstall("", s.NodeName)
		return err
	})
	s.nodeArgs = configArgs
	argv := append([]string{cfg.NodeBinary}, configArgs...)
	if len(cfg.Capabilities) > 0 {
		set := "-all"
		for _, c := range cfg.Capabilities {
			set += ",+" + strings.ToLower(c)
		}
		argv = append([]string{"setpriv", "--bounding-set", set, "--inh-caps", "-all", "--"}, argv...)
	}
	cmd, err := s.Router.Start(s.NodeLog, argv...)
	if err == nil {
		s.NodePID = cmd.Process.Pid
	}
	return err
}

// NewFlows prepares n flows from Src through the router to the destinations
// (addresses within the SkeletonRoutes' prefixes), counted at sink1 (side 0) and
// sink2 (side 1), and starts the sinks.
func (s *Skeleton) NewFlows(dsts []netip.Addr, n int) (*Flows, error) {
	return newFlows(s.Lab, s.Src, "10.10.0.1", [2]*Netns{s.Sink1, s.Sink2}, dsts, n)
}

// StopNode sends the node's process sig (SIGTERM: a restart; SIGKILL: a crash) and
// waits until it is gone.
func (s *Skeleton) StopNode(sig syscall.Signal, timeout time.Duration) error {
	if err := syscall.Kill(s.NodePID, sig); err != nil {
		return fmt.Errorf("signal the node: %w", err)
	}
	for deadline := time.Now().Add(timeout); syscall.Kill(s.NodePID, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the node still runs %s after signal %v", timeout, sig)
		}
	}
	return nil
}

// RestartNode starts the node again with its configuration, from binary (another
// build: an upgrade) or, when empty, the one it ran. The capabilities of
// SkeletonConfig.Capabilities are not applied again.
func (s *Skeleton) RestartNode(binary string) error {
	cmd, err := s.Router.Start(s.NodeLog, append([]string{binary}, s.nodeArgs...)...)
	if err != nil {
		return err
	}
	s.NodePID = cmd.Process.Pid
	return nil
}

// WriteConfig replaces fleet.yaml in the node's ConfigDir as the kubelet updates a
// mounted ConfigMap: the new files in a directory of their own, then the ..data
// symlink swapped to it with one rename (fleet.yaml is a symlink through ..data).
func (s *Skeleton) WriteConfig(body string) error {
	if s.ConfigDir == "" {
		return errors.New("lab: the skeleton's node runs without -config-dir (SkeletonConfig.ConfigDir)")
	}
	gen, err := os.MkdirTemp(s.ConfigDir, "..gen_")
	if err != nil {
		return err
	}
	if err := os.Chmod(gen, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gen, "fleet.yaml"), []byte(body), 0o644); err != nil {
		return err
	}
	tmp := filepath.Join(s.ConfigDir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.ConfigDir, "..data"))
}

// Get fetches a path of the node's HTTP server (metrics and node API) from inside the
// router namespace.
func (s *Skeleton) Get(path string) ([]byte, error) { return s.Router.HTTPGet(MetricsAddr, path) }

// Metrics scrapes the node's /metrics and returns the samples as "name{labels}" -> value.
func (s *Skeleton) Metrics() (map[string]float64, error) { return s.Router.Metrics(MetricsAddr) }

// WaitFor polls cond every 100 ms until it returns true, the timeout passes or ctx ends.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err // only the latest attempt's error says why it is still waiting
		select {
		case <-tctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while waiting for %s: %w", what, ctx.Err())
			}
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Sink counts UDP datagrams received in a sink namespace, by destination address.
type Sink struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  map[netip.Addr]int
}

var payloadRE = regexp.MustCompile(`^fibfleet dst=(\S+) `)

// Listen starts counting datagrams to SinkPort in a namespace.
func (s *Skeleton) Listen(ns *Netns) (*Sink, error) { return listen(s.Lab, ns) }

func listen(l *Lab, ns *Netns) (*Sink, error) {
	k := &Sink{got: map[netip.Addr]int{}}
	err := ns.Do(func() error {
		var err error
		k.conn, err = net.ListenUDP("udp", &net.UDPAddr{Port: SinkPort}) // IPv4 and IPv6
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen in %s: %w", ns.Name, err)
	}
	l.Defer(k.conn.Close)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := k.conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if m := payloadRE.FindSubmatch(buf[:n]); m != nil {
				if a, err := netip.ParseAddr(string(m[1])); err == nil {
					k.mu.Lock()
					k.got[a]++
					k.mu.Unlock()
				}
			}
		}
	}()
	return k, nil
}

// Count returns how many datagrams to dst arrived.
func (k *Sink) Count(dst netip.Addr) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.got[dst]
}

// Total returns how many datagrams arrived in all.
func (k *Sink) Total() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, c := range k.got {
		n += c
	}
	return n
}

// Send sends n UDP datagrams from src to dst:SinkPort, each naming its destination.
// The socket is unconnected, so ICMP errors from the router (a withdrawn route) do not
// fail later sends.
func (s *Skeleton) Send(dst netip.Addr, n int) error { return send(s.Src, dst, n) }

func send(src *Netns, dst netip.Addr, n int) error {
	var conn *net.UDPConn
	network := "udp4"
	if dst.Is6() {
		network = "udp6"
	}
	err := src.Do(func() error {
		var err error
		conn, err = net.ListenUDP(network, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("send to %s: %w", dst, err)
	}
	defer conn.Close()
	to := netip.AddrPortFrom(dst, SinkPort)
	for i := 0; i < n; i++ {
		if _, err := conn.WriteToUDPAddrPort([]byte(fmt.Sprintf("fibfleet dst=%s seq=%d", dst, i)), to); err != nil {
			return fmt.Errorf("send to %s: %w", dst, err)
		}
		if i%32 == 31 {
			time.Sleep(time.Millisecond) // stay well inside veth's 256-frame XDP ring
		}
	}
	return nil
}
