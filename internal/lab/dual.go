package lab

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
	"golang.org/x/sys/unix"
)

// Dual is a node with two upstreams on two links, for next-hop groups: ECMP, backup
// paths, failover. Each upstream is a BIRD that announces the same prefixes with
// itself as next hop, and takes the traffic to the destinations a test sends to as
// its own (FlowSink), so a datagram's sink says which upstream the node chose.
//
//	src (s0) ── (r0) node (r1) ── (a0) upA: BIRD AS 65001, sink
//	                      (r2) ── (b0) upB: BIRD AS 65002, sink
//	                      (r3) ── (c0) upc: BIRD AS 65003   (DualConfig.More)
//	                      (r4) ── (d0) upd: BIRD AS 65004
//	                      (r5) ── (p1) p1: BIRD, iBGP       (DualConfig.IBGP)
//	                      (r6) ── (p2) p2: BIRD, iBGP
type Dual struct {
	*Lab
	Src, Router, UpA, UpB *Netns
	NodeName, Dir         string
	NodeLog               string
	NodePID               int
	// RouterPIDs are the router's processes: the node, BIRD, or FRR's daemons.
	RouterPIDs []int
	// RouterStarted is when the router's process (the node, BIRD) last started: a
	// load's or a restart's time counts from it.
	RouterStarted time.Time
	// BirdA and BirdB are the upstreams' control sockets (Birdc); RouterBird the
	// router's, when BIRD is the router.
	BirdA, BirdB, RouterBird string
	birdCmd                  map[string]*exec.Cmd
	// routerConf is the router's configuration (the node's or BIRD's), for
	// RestartRouter.
	routerConf string
	frrDir     string
	birdConf   map[string]*birdConfig
	cfg        DualConfig
	// extra are the upstreams past A and B and the iBGP peers (More, IBGP).
	extra []dualPeer
}

// dualPeer is one of the dual lab's extra neighbours of the router: an upstream
// (C, D) or an iBGP peer, each a BIRD in a namespace of its own.
type dualPeer struct {
	// name is the router's BIRD protocol for it, and Birdc's name for its BIRD.
	name             string
	ns               *Netns
	role, routerRole string // the link's interface roles, its end and the router's
	addr, routerAddr string
	asn              int
	ibgp             bool
	sock             string
}

// dualExtra lists the extra peers a config asks for.
func dualExtra(cfg DualConfig) []dualPeer {
	var ps []dualPeer
	for i := range cfg.More {
		c := string(rune('c' + i))
		ps = append(ps, dualPeer{name: c, role: c + "0", routerRole: fmt.Sprintf("r%d", 3+i),
			addr: fmt.Sprintf("10.21.%d.2", 3+i), routerAddr: fmt.Sprintf("10.21.%d.1", 3+i), asn: dualASNA + 2 + i})
	}
	for i := range cfg.IBGP {
		p := fmt.Sprintf("p%d", 1+i)
		ps = append(ps, dualPeer{name: p, role: p, routerRole: fmt.Sprintf("r%d", 5+i),
			addr: fmt.Sprintf("10.21.%d.2", 11+i), routerAddr: fmt.Sprintf("10.21.%d.1", 11+i), asn: RouterASN, ibgp: true})
	}
	return ps
}

// DualUpstreams are the addresses of the upstreams a config's lab has: A, B, and C
// and D with More.
func DualUpstreams(cfg DualConfig) []string {
	ups := []string{DualAddrA, DualAddrB}
	for _, p := range dualExtra(cfg) {
		if !p.ibgp {
			ups = append(ups, p.addr)
		}
	}
	return ups
}

// DualIBGPPeers are the iBGP peers' names (for Birdc) a config's lab has.
func DualIBGPPeers(cfg DualConfig) []string {
	var ps []string
	for _, p := range dualExtra(cfg) {
		if p.ibgp {
			ps = append(ps, p.name)
		}
	}
	return ps
}

// DualConfig configures a Dual.
type DualConfig struct {
	NodeBinary string
	Dir        string
	// Prefixes are announced by both upstreams.
	Prefixes []netip.Prefix
	// Attrs, when set, gives Prefixes real AS paths and communities
	// (table.Model.Assign), the same on both upstreams (B's then prepended
	// PrependB times): a table whose routes share one AS path is packed hundreds of
	// prefixes to an UPDATE and flatters the router's memory and time.
	Attrs *table.Model
	// OnlyA: B announces nothing (its session up, without a table, and not
	// configured to: no expected_prefixes): one full-table upstream, to compare
	// with two in the same topology.
	OnlyA bool
	// More adds upstreams C and D (0 to 2 of them) beside A and B, on links of their
	// own, announcing Prefixes as B does (prepended PrependB times): four full-table
	// upstreams. Only for loading tables: Flows see A and B alone.
	More int
	// IBGP adds iBGP peers (0 to 2; BIRDs in the router's AS) on links of their own,
	// to which the router sends every route it selected (next hop self), as an edge
	// router does to its core; they send nothing. BIRD and FRR as the router only: the
	// node's iBGP peers are its fleet's members (the fleet lab).
	IBGP int
	// PrependB makes B's paths longer by that many ASes: 0 makes them equal to A's
	// (ECMP with Multipath), more makes A's the best and B's the backup.
	PrependB  int
	Multipath bool
	// NodeExtra is appended to the node's configuration (YAML, top level).
	NodeExtra string
	// BFD, when set, runs BFD on both upstream sessions at that interval (and a
	// multiplier of 3): in BIRD (bfd on) and in the node.
	BFD time.Duration
	// Router is what routes between them: "node" (fibfleet, the default), "bird"
	// (BIRD 2 installing its best routes into the kernel, which forwards: the
	// baseline) or "frr" (FRR 8.4's bgpd and zebra into the kernel, which forwards).
	Router string
	// GracefulRestart runs BIRD as the router with graceful restart (`graceful
	// restart on` in its sessions and its kernel protocol, which then waits for the
	// recovery before it syncs the kernel) and its kernel routes kept when it stops
	// (`persist`): the baseline of a hitless restart (RestartRouter).
	GracefulRestart bool
}

// The dual topology's addresses.
const (
	DualSrcAddr    = "10.20.0.2"
	DualRouterAddr = "10.20.0.1"
	DualAddrA      = "10.21.1.2"
	DualRouterA    = "10.21.1.1"
	DualAddrB      = "10.21.2.2"
	DualRouterB    = "10.21.2.1"
	dualASNA       = 65001
	dualASNB       = 65002
)

// StartDual builds the topology, starts the upstreams' and peers' BIRDs and the
// router.
func StartDual(cfg DualConfig) (*Dual, error) {
	if cfg.More < 0 || cfg.More > 2 || cfg.IBGP < 0 || cfg.IBGP > 2 {
		return nil, fmt.Errorf("lab: %d more upstreams and %d iBGP peers: the dual lab has room for 0 to 2 of each", cfg.More, cfg.IBGP)
	}
	if cfg.IBGP > 0 && (cfg.Router == "" || cfg.Router == "node") {
		return nil, errors.New("lab: the node's iBGP peers are its fleet's members: use the fleet lab (BIRD or FRR as the router here)")
	}
	l, err := New()
	if err != nil {
		return nil, err
	}
	d := &Dual{Lab: l, Dir: cfg.Dir, NodeName: l.Prefix + "-rtr", birdCmd: map[string]*exec.Cmd{}, cfg: cfg, extra: dualExtra(cfg)}
	if err := d.build(); err != nil {
		return d, err
	}
	return d, nil
}

func (d *Dual) build() error {
	var err error
	for _, n := range []struct {
		p    **Netns
		role string
	}{{&d.Src, "src"}, {&d.Router, "rtr"}, {&d.UpA, "upa"}, {&d.UpB, "upb"}} {
		if *n.p, err = d.Netns(n.role); err != nil {
			return err
		}
	}
	for _, k := range []struct {
		a            *Netns
		aRole, aAddr string
		b            *Netns
		bRole, bAddr string
	}{
		{d.Src, "s0", DualSrcAddr + "/24", d.Router, "r0", DualRouterAddr + "/24"},
		{d.Router, "r1", DualRouterA + "/24", d.UpA, "a0", DualAddrA + "/24"},
		{d.Router, "r2", DualRouterB + "/24", d.UpB, "b0", DualAddrB + "/24"},
	} {
		if err := d.Link(k.a, k.aRole, k.aAddr, k.b, k.bRole, k.bAddr); err != nil {
			return err
		}
	}
	for i := range d.extra {
		p := &d.extra[i]
		role := p.name
		if !p.ibgp {
			role = "up" + p.name
		}
		if p.ns, err = d.Netns(role); err != nil {
			return err
		}
		if err := d.Link(d.Router, p.routerRole, p.routerAddr+"/24", p.ns, p.role, p.addr+"/24"); err != nil {
			return err
		}
	}
	if err := disableTxChecksum(d.Src, d.If("s0")); err != nil {
		return err
	}
	type end struct {
		ns         *Netns
		role, back string
	}
	ends := []end{{d.UpA, "a0", DualRouterA}, {d.UpB, "b0", DualRouterB}}
	for _, p := range d.extra {
		ends = append(ends, end{p.ns, p.role, p.routerAddr})
	}
	for _, up := range ends {
		for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
			if err := up.ns.Sysctl(k, "0"); err != nil {
				return err
			}
		}
		// The source's replies (none are sent; for completeness) go back the way.
		if _, err := up.ns.Exec("ip", "route", "add", "10.20.0.0/24", "via", up.back); err != nil {
			return err
		}
		if err := d.AttachPass(up.ns, d.If(up.role)); err != nil {
			return err
		}
	}
	forwarding := "0"
	if d.cfg.Router == "bird" || d.cfg.Router == "frr" {
		forwarding = "1"
	}
	if err := d.Router.Sysctl("net.ipv4.ip_forward", forwarding); err != nil {
		return err
	}
	if err := d.CheckIsolated(); err != nil {
		return err
	}
	for _, b := range []struct {
		name     string
		ns       *Netns
		addr     string
		neighbor string
		asn      int
		prepend  int
		announce bool
	}{{"birda", d.UpA, DualAddrA, DualRouterA, dualASNA, 0, true}, {"birdb", d.UpB, DualAddrB, DualRouterB, dualASNB, d.cfg.PrependB, !d.cfg.OnlyA}} {
		if err := d.startUpstream(b.name, b.ns, b.addr, b.neighbor, b.asn, b.prepend, b.announce); err != nil {
			return err
		}
	}
	d.BirdA, d.BirdB = filepath.Join(d.Dir, "birda.ctl"), filepath.Join(d.Dir, "birdb.ctl")
	for i := range d.extra {
		p := &d.extra[i]
		var err error
		if p.ibgp {
			err = d.startIBGPPeer(p)
		} else {
			err = d.startUpstream("bird"+p.name, p.ns, p.addr, p.routerAddr, p.asn, d.cfg.PrependB, true)
		}
		if err != nil {
			return err
		}
		p.sock = filepath.Join(d.Dir, "bird"+p.name+".ctl")
	}
	switch d.cfg.Router {
	case "", "node":
		return d.startNode()
	case "bird":
		return d.startBirdRouter()
	case "frr":
		return d.startFRRRouter()
	}
	return fmt.Errorf("lab: router %q: use node, bird or frr", d.cfg.Router)
}

// startBirdRouter runs BIRD 2 as the router: both sessions (with BFD when the
// upstreams run it), its best routes into the kernel's main table (one next hop
// each), the kernel forwarding.
func (d *Dual) startBirdRouter() error {
	c, err := newBirdConfig(filepath.Join(d.Dir, "router.conf"), DualRouterA)
	if err != nil {
		return err
	}
	if d.cfg.GracefulRestart {
		c.b.WriteString("protocol kernel kernel4 { persist; graceful restart on; ipv4 { import none; export all; }; }\n")
	} else {
		c.kernelExport("kernel4")
	}
	if d.cfg.BFD > 0 {
		c.bfdProto(d.cfg.BFD, 3)
	}
	for _, s := range []struct {
		name, local, neighbor string
		asn                   int
	}{{"a", DualRouterA, DualAddrA, dualASNA}, {"b", DualRouterB, DualAddrB, dualASNB}} {
		c.bgp(birdSession{name: s.name, local: s.local, localAS: RouterASN, neighbor: s.neighbor, neighborAS: s.asn, quickRetry: true, bfd: d.cfg.BFD > 0,
			gracefulRestart: d.cfg.GracefulRestart, channels: []birdChannel{{family: "ipv4", imp: "all", exp: "none"}}})
	}
	for _, p := range d.extra {
		s := birdSession{name: p.name, local: p.routerAddr, localAS: RouterASN, neighbor: p.addr, neighborAS: p.asn, quickRetry: true,
			channels: []birdChannel{{family: "ipv4", imp: "all", exp: "none"}}}
		if p.ibgp {
			s.direct, s.nextHopSelf = true, true
			s.channels[0].imp, s.channels[0].exp = "none", "all"
		}
		c.bgp(s)
	}
	d.routerConf = c.path
	sock, log, cmd, err := startBird(d.Router, d.Dir, "router", c)
	if err != nil {
		return err
	}
	d.RouterBird = sock
	d.NodeLog, d.NodePID = log, cmd.Process.Pid
	d.RouterPIDs, d.RouterStarted = []int{d.NodePID}, time.Now()
	return nil
}

// startUpstream writes and starts one upstream's BIRD, announcing the prefixes or
// (its session up, without a table) none.
func (d *Dual) startUpstream(name string, ns *Netns, addr, neighbor string, asn, prepend int, announce bool) error {
	c, err := newBirdConfig(filepath.Join(d.Dir, name+".conf"), addr)
	if err != nil {
		return err
	}
	switch {
	case !announce:
	case d.cfg.Attrs != nil:
		routes := make([]table.Route, len(d.cfg.Prefixes))
		for i, p := range d.cfg.Prefixes {
			routes[i] = table.Route{Prefix: p}
		}
		c.staticAttrs("announced", false, *d.cfg.Attrs, routes)
	default:
		c.static("announced", d.cfg.Prefixes...)
	}
	if d.cfg.BFD > 0 {
		c.bfdProto(d.cfg.BFD, 3)
	}
	exp := "all"
	if prepend > 0 {
		exp = "filter { " + strings.Repeat(fmt.Sprintf("bgp_path.prepend(%d); ", asn), prepend) + "accept; }"
	}
	c.bgp(birdSession{name: "node", local: addr, localAS: asn, neighbor: neighbor, neighborAS: RouterASN, quickRetry: true, bfd: d.cfg.BFD > 0,
		channels: []birdChannel{{family: "ipv4", imp: "none", exp: exp}}})
	return d.runBird(ns, name, c)
}

// startIBGPPeer writes and starts an iBGP peer's BIRD: it takes every route the
// router sends and keeps it (a core router's table), sends nothing, installs nothing.
func (d *Dual) startIBGPPeer(p *dualPeer) error {
	c, err := newBirdConfig(filepath.Join(d.Dir, "bird"+p.name+".conf"), p.addr)
	if err != nil {
		return err
	}
	c.bgp(birdSession{name: "edge", local: p.addr, localAS: RouterASN, neighbor: p.routerAddr, neighborAS: RouterASN, quickRetry: true, direct: true,
		channels: []birdChannel{{family: "ipv4", imp: "all", exp: "none"}}})
	return d.runBird(p.ns, "bird"+p.name, c)
}

// runBird starts a BIRD of the lab on its finished configuration and waits until it
// answers.
func (d *Dual) runBird(ns *Netns, name string, c *birdConfig) error {
	sock, log, cmd, err := startBird(ns, d.Dir, name, c)
	if err != nil {
		return err
	}
	d.birdCmd[name] = cmd
	// Fail here, not in a test's wait, when BIRD refused its configuration.
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if exec.Command("birdc", "-s", sock, "show", "status").Run() == nil {
			return nil
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(log)
			return fmt.Errorf("lab: %s does not answer on %s: %s", name, sock, b)
		}
	}
}

func (d *Dual) startNode() error {
	bfd := ""
	if d.cfg.BFD > 0 {
		bfd = fmt.Sprintf(", bfd: {interval: %v, multiplier: 3}", d.cfg.BFD)
	}
	ifaces := []string{d.If("r0"), d.If("r1"), d.If("r2")}
	more := ""
	for _, p := range d.extra { // upstreams only: StartDual refuses iBGP peers for the node
		ifaces = append(ifaces, d.If(p.routerRole))
		more += fmt.Sprintf("    - {address: %s, asn: %d, import: %s, expected_prefixes: %d%s}\n", p.addr, p.asn, LabImport, len(d.cfg.Prefixes), bfd)
	}
	// B is expected to send the table unless it sends none (OnlyA): the node sizes
	// its memory limit by what its neighbours are expected to send.
	expectedB := len(d.cfg.Prefixes)
	if d.cfg.OnlyA {
		expectedB = 0
	}
	body := fmt.Sprintf(`node_name: %s
interfaces: [%s]
http_address: %s
cluster:
  embedded:
    data_dir: %s
bgp:
  asn: %d
  router_id: %s
  multipath: %v
  neighbors:
    - {address: %s, asn: %d, import: %s, expected_prefixes: %d%s}
    - {address: %s, asn: %d, import: %s, expected_prefixes: %d%s}
%s%s`, d.NodeName, strings.Join(ifaces, ", "), MetricsAddr, filepath.Join(d.Dir, "etcd"), RouterASN, DualRouterA, d.cfg.Multipath,
		DualAddrA, dualASNA, LabImport, len(d.cfg.Prefixes), bfd, DualAddrB, dualASNB, LabImport, expectedB, bfd, more, d.cfg.NodeExtra)
	conf := filepath.Join(d.Dir, "node.yaml")
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return err
	}
	d.routerConf = conf
	d.NodeLog = filepath.Join(d.Dir, "node.log")
	// After the node stopped: its dataplane outlives it; remove it as node
	// -uninstall does.
	d.Defer(func() error {
		_, err := dataplane.Uninstall("", d.NodeName)
		return err
	})
	cmd, err := d.Router.Start(d.NodeLog, d.cfg.NodeBinary, "-config", conf)
	if err == nil {
		d.NodePID = cmd.Process.Pid
		d.RouterPIDs, d.RouterStarted = []int{d.NodePID}, time.Now()
	}
	return err
}

// StopRouter stops the router's process as a restart does and waits until it is
// gone: the node with sig (SIGTERM, or SIGKILL for a crash); BIRD with `birdc
// graceful restart` (sig SIGTERM) or sig.
func (d *Dual) StopRouter(sig syscall.Signal) error {
	if d.cfg.Router == "bird" && sig == syscall.SIGTERM {
		if out, err := d.Birdc("router", "graceful", "restart"); err != nil {
			return fmt.Errorf("lab: birdc graceful restart: %w: %s", err, out)
		}
	} else if err := syscall.Kill(d.NodePID, sig); err != nil {
		return fmt.Errorf("lab: signal the router: %w", err)
	}
	for deadline := time.Now().Add(60 * time.Second); syscall.Kill(d.NodePID, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: the router still runs 60 s after it was told to stop")
		}
	}
	return nil
}

// RestartRouter starts the router again on its configuration: the node from binary
// (another build: an upgrade) or, when empty, the one it ran; BIRD in graceful
// restart recovery (-R).
func (d *Dual) RestartRouter(binary string) error {
	var cmd *exec.Cmd
	var err error
	switch d.cfg.Router {
	case "bird":
		cmd, err = d.Router.Start(d.NodeLog, "bird", "-f", "-R", "-c", d.routerConf, "-s", d.RouterBird)
	case "node", "":
		cmd, err = d.Router.Start(d.NodeLog, cmp.Or(binary, d.cfg.NodeBinary), "-config", d.routerConf)
	default:
		err = fmt.Errorf("lab: restarting a %s router is not supported", d.cfg.Router)
	}
	if err != nil {
		return err
	}
	d.NodePID = cmd.Process.Pid
	d.RouterPIDs, d.RouterStarted = []int{d.NodePID}, time.Now()
	return nil
}

// Birdc runs a birdc command against upstream "a", "b" (or "c", "d": More), an
// iBGP peer ("p1", "p2": IBGP), or "router" (BIRD as the router).
func (d *Dual) Birdc(up string, args ...string) (string, error) {
	sock := map[string]string{"a": d.BirdA, "b": d.BirdB, "router": d.RouterBird}[up]
	for _, p := range d.extra {
		if p.name == up {
			sock = p.sock
		}
	}
	out, err := exec.Command("birdc", append([]string{"-s", sock}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("birdc %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// StopUpstream stops upstream "a" or "b"'s BIRD (SIGTERM: it ends its session with a
// NOTIFICATION) and waits until it is gone; StartUpstream starts it again.
func (d *Dual) StopUpstream(up string) error {
	cmd := d.birdCmd["bird"+up]
	if cmd == nil {
		return fmt.Errorf("lab: no upstream %q running", up)
	}
	delete(d.birdCmd, "bird"+up)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(cmd.Process.Pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("lab: BIRD of upstream %s did not stop within 10s of SIGTERM; killed", up)
}

// StartUpstream starts upstream "a" or "b" again on its configuration.
func (d *Dual) StartUpstream(up string) error {
	ns := map[string]*Netns{"a": d.UpA, "b": d.UpB}[up]
	name := "bird" + up
	cmd, err := ns.Start(filepath.Join(d.Dir, name+".log"), "bird", "-f", "-c", filepath.Join(d.Dir, name+".conf"), "-s", filepath.Join(d.Dir, name+".ctl"))
	if err != nil {
		return err
	}
	d.birdCmd[name] = cmd
	return nil
}

// SetLink brings upstream "a" or "b"'s end of its link down or up: the node's end
// loses its carrier.
func (d *Dual) SetLink(up string, on bool) error {
	ns, dev := d.UpA, d.If("a0")
	if up == "b" {
		ns, dev = d.UpB, d.If("b0")
	}
	state := "down"
	if on {
		state = "up"
	}
	_, err := ns.Exec("ip", "link", "set", dev, state)
	return err
}

// DropBFD drops (or lets through again) the BFD packets upstream "a" or "b"
// receives, with nftables: BFD fails, the link and the BGP session stay up.
func (d *Dual) DropBFD(up string, drop bool) error {
	ns := map[string]*Netns{"a": d.UpA, "b": d.UpB}[up]
	if !drop {
		_, err := ns.Exec("nft", "delete table inet ffbfd")
		return err
	}
	_, err := ns.Exec("nft", "add table inet ffbfd; add chain inet ffbfd in { type filter hook input priority 0; }; add rule inet ffbfd in udp dport 3784 drop")
	return err
}

// Silence makes upstream "a" or "b" drop everything it receives (nftables): its
// forwarding, its BGP session and its BFD all go quiet, its link stays up. Only BFD
// (or, much later, the BGP hold timer) can tell.
func (d *Dual) Silence(up string) error {
	ns := map[string]*Netns{"a": d.UpA, "b": d.UpB}[up]
	_, err := ns.Exec("nft", "add table inet ffsilent; add chain inet ffsilent in { type filter hook input priority 0; policy drop; }")
	return err
}

// Get fetches a path of the node's HTTP API.
func (d *Dual) Get(path string) ([]byte, error) { return d.Router.HTTPGet(MetricsAddr, path) }

// Metrics returns the node's metrics.
func (d *Dual) Metrics() (map[string]float64, error) { return d.Router.Metrics(MetricsAddr) }

// Flows sends UDP flows from a source namespace through a router and records, at two
// sinks (upstreams A and B), which one each flow's datagrams reached and when they
// were sent: a flow is a source port and a destination, so the node's flow hash
// spreads flows over a group's members. Datagrams carry their flow and send time.
type Flows struct {
	src   *Netns
	dsts  []netip.Addr
	n     int
	mu    sync.Mutex
	at    [][]time.Time // per flow, the send times of the datagrams received
	where [][2]int      // per flow, datagrams received at A and at B
	last  []int         // per flow, where its last datagram arrived (0 A, 1 B, -1 none)
	conns []*net.UDPConn
	sinks []*Netns
	sent  atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// FlowPort is the first flow's source port (flow i sends from FlowPort+i).
const FlowPort = 20000

// NewFlows prepares n flows from Src over the destinations (each a host both
// upstreams take as their own) and starts the sinks.
func (d *Dual) NewFlows(dsts []netip.Addr, n int) (*Flows, error) {
	return newFlows(d.Lab, d.Src, DualRouterAddr, [2]*Netns{d.UpA, d.UpB}, dsts, n)
}

// newFlows prepares n flows from src, through the router at via, to the
// destinations, which both sinks take as their own, and starts the sinks.
func newFlows(l *Lab, src *Netns, via string, sinks [2]*Netns, dsts []netip.Addr, n int) (*Flows, error) {
	f := &Flows{src: src, dsts: dsts, n: n, at: make([][]time.Time, n), where: make([][2]int, n), last: make([]int, n)}
	for i := range f.last {
		f.last[i] = -1
	}
	// The source sends to exactly these hosts through the router (no default route:
	// the lab stays isolated, CheckIsolated).
	for _, a := range dsts {
		if _, err := src.Exec("ip", "route", "replace", a.String()+"/32", "via", via); err != nil {
			return nil, err
		}
	}
	for side, ns := range sinks {
		for _, a := range dsts {
			if _, err := ns.Exec("ip", "route", "add", "local", a.String()+"/32", "dev", "lo"); err != nil && !strings.Contains(err.Error(), "File exists") {
				return nil, err
			}
		}
		var conn *net.UDPConn
		if err := ns.Do(func() error {
			var err error
			conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: SinkPort})
			if err != nil {
				return err
			}
			// A receive buffer of 8 MiB (over rmem_max: root may): a receiver the
			// machine's load leaves unscheduled for a while must not drop datagrams the
			// router delivered and count them lost.
			rc, err := conn.SyscallConn()
			if err == nil {
				err = rc.Control(func(fd uintptr) {
					err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
				})
			}
			return err
		}); err != nil {
			return nil, err
		}
		l.Defer(conn.Close)
		f.sinks = append(f.sinks, ns)
		f.conns = append(f.conns, conn)
		go f.receive(conn, side)
	}
	return f, nil
}

func (f *Flows) receive(conn *net.UDPConn, side int) {
	buf := make([]byte, 64)
	for {
		n, _, err := conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if n < 12 {
			continue
		}
		flow := int(binary.BigEndian.Uint32(buf))
		sent := time.Unix(0, int64(binary.BigEndian.Uint64(buf[4:])))
		if flow < 0 || flow >= f.n {
			continue
		}
		f.mu.Lock()
		f.at[flow] = append(f.at[flow], sent)
		f.where[flow][side]++
		f.last[flow] = side
		f.mu.Unlock()
	}
}

// flowSocket opens the socket of flow i in src: its source port is FlowPort+i.
func flowSockets(src *Netns, n int) ([]*net.UDPConn, error) {
	conns := make([]*net.UDPConn, 0, n)
	err := src.Do(func() error {
		for i := range n {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: FlowPort + i})
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
	}
	return conns, err
}

// Start sends every flow at rate datagrams per second in all (round robin) until
// Stop.
func (f *Flows) Start(rate int) error {
	conns, err := flowSockets(f.src, f.n)
	if err != nil {
		return err
	}
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		const tick = time.Millisecond
		tk := time.NewTicker(tick)
		defer tk.Stop()
		start, sent, next := time.Now(), 0, 0
		buf := make([]byte, 12)
		for {
			select {
			case <-f.stop:
				return
			case now := <-tk.C:
				due := int(now.Sub(start).Seconds() * float64(rate))
				for ; sent < due; sent++ {
					i := next
					next = (next + 1) % f.n
					binary.BigEndian.PutUint32(buf, uint32(i))
					binary.BigEndian.PutUint64(buf[4:], uint64(time.Now().UnixNano()))
					_, _ = conns[i].WriteToUDPAddrPort(buf, netip.AddrPortFrom(f.dsts[i%len(f.dsts)], SinkPort))
					f.sent.Add(1)
				}
			}
		}
	}()
	return nil
}

// Stop stops the sending and waits a moment for the datagrams in flight.
func (f *Flows) Stop() {
	if f.stop == nil {
		return
	}
	close(f.stop)
	<-f.done
	f.stop = nil
	time.Sleep(100 * time.Millisecond)
}

// Once sends one datagram per flow (each from its own socket, opened and closed in
// turn), waits for them, and returns where each arrived (0 A, 1 B, -1 lost).
func (f *Flows) Once() ([]int, error) {
	f.mu.Lock()
	before := slices.Clone(f.where)
	f.mu.Unlock()
	buf := make([]byte, 12)
	err := f.src.Do(func() error {
		for i := range f.n {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: FlowPort + i})
			if err != nil {
				return err
			}
			binary.BigEndian.PutUint32(buf, uint32(i))
			binary.BigEndian.PutUint64(buf[4:], uint64(time.Now().UnixNano()))
			_, _ = c.WriteToUDPAddrPort(buf, netip.AddrPortFrom(f.dsts[i%len(f.dsts)], SinkPort))
			c.Close()
			if i%32 == 31 {
				time.Sleep(time.Millisecond) // stay inside veth's XDP ring
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	time.Sleep(300 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, f.n)
	for i := range out {
		out[i] = -1
		for side := range 2 {
			if f.where[i][side] > before[i][side] {
				out[i] = side
			}
		}
	}
	return out, nil
}

// SinkDrops is how many datagrams the sinks' kernels dropped for want of room in a
// socket's receive buffer (UDP RcvbufErrors in each sink's namespace, since it was
// made): lost by the measurement, not by the router.
func (f *Flows) SinkDrops() (int, error) {
	n := 0
	for _, ns := range f.sinks {
		out, err := ns.Exec("cat", "/proc/net/snmp")
		if err != nil {
			return 0, err
		}
		var head []string
		for _, line := range strings.Split(out, "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || fields[0] != "Udp:" {
				continue
			}
			if head == nil {
				head = fields
				continue
			}
			for i, h := range head {
				if h == "RcvbufErrors" && i < len(fields) {
					v, _ := strconv.Atoi(fields[i])
					n += v
				}
			}
		}
	}
	return n, nil
}

// Sent returns how many datagrams Start has sent.
func (f *Flows) Sent() int { return int(f.sent.Load()) }

// Where returns, per flow, the upstream its last datagram reached (0 A, 1 B, -1 none).
func (f *Flows) Where() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.last)
}

// Received returns the datagrams received at A and at B.
func (f *Flows) Received() (a, b int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.where {
		a += w[0]
		b += w[1]
	}
	return a, b
}

// LongestGap is the longest time any flow went without a datagram getting through,
// between from and to (send times): the gap between consecutive received datagrams
// of the flow, from its first after from to its last before to.
func (f *Flows) LongestGap(from, to time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var worst time.Duration
	for _, at := range f.at {
		ts := slices.Clone(at)
		slices.SortFunc(ts, time.Time.Compare)
		prev := from
		for _, t := range ts {
			if t.Before(from) || t.After(to) {
				continue
			}
			worst = max(worst, t.Sub(prev))
			prev = t
		}
		worst = max(worst, to.Sub(prev))
	}
	return worst
}
