package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
)

// The fleet topology:
//
//	src (10.10.0.2, fd00:10::2) -- n2
//	                                |
//	     n1 ------ [bridge: the mesh link, 10.20.0.0/24, fd00:20::/64] ------ n3 ...
//	     |                                                               |
//	upstream (10.12.0.2, fd00:12::2: BIRD AS65001,           up2 (10.14.0.2: BIRD AS65003,
//	          and the sink of FleetRoutes)                        with FleetConfig.Upstream2)
//
// Node i (1-based) has 10.20.0.i and fd00:20::i on the mesh link; n1 also has
// 10.12.0.1 and fd00:12::1 towards the upstream, n2 10.10.0.1 and fd00:10::1 towards
// src. Every node runs the node binary with IPv4 and IPv6 forwarding off; the first
// EtcdMembers nodes' namespaces each run an etcd member on their mesh address (and on
// a unix socket in Dir, the test's way in). BIRD peers with n1 only, announcing
// FleetRoutes with itself as next hop: the others learn them over the iBGP mesh and
// resolve that next hop through the subnet n1 announces. With FleetConfig.Upstream2 a
// second BIRD peers with n3 on 10.14.0.0/24 (n3 at 10.14.0.1). No namespace is
// connected to the host.
const FleetSinkPort = SinkPort

// fleetSrcRouter is n2's address on src's link.
const fleetSrcRouter = "10.10.0.1"

// FleetRoutes are the prefixes BIRD announces to n1 (besides a table), which the
// upstream namespace takes as its own: two documentation prefixes and 1.1.1.0/24
// from the 2026 table, and two IPv6 ones.
var FleetRoutes = []netip.Prefix{
	netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("1.1.1.0/24"),
	netip.MustParsePrefix("2001:db8:100::/48"), netip.MustParsePrefix("2620:fe::/48"),
}

// FleetBlackhole is the /32 the upstream's BIRD announces with BLACKHOLE (RFC 7999)
// over its IPv4 session, which n1 takes blackholes from; FleetBlackhole6 the /128 it
// announces so over its IPv6 session, which n1 takes none from. Both inside
// FleetRoutes, both off until `birdc enable` of FleetBlackholeProtocol and
// FleetBlackholeProtocol6.
var (
	FleetBlackhole  = netip.MustParsePrefix("203.0.113.77/32")
	FleetBlackhole6 = netip.MustParsePrefix("2001:db8:100::77/128")
)

// FleetInvalid is the route BIRD announces with FleetConfig.RPKI that FleetVRPs make
// RPKI-invalid (another origin): n1 refuses it, and no node may hold it.
var FleetInvalid = netip.MustParsePrefix("192.0.2.0/24")

// FleetVRPs are the validator's VRPs with FleetConfig.RPKI: FleetInvalid's origin is
// another AS; 198.51.100.0/24 (of FleetRoutes) is BIRD's, valid.
var FleetVRPs = []rpki.VRP{
	{Prefix: FleetInvalid, MaxLength: 24, ASN: 64999},
	{Prefix: netip.MustParsePrefix("198.51.100.0/24"), MaxLength: 32, ASN: UpstreamASN},
}

// The BIRD static protocols that originate FleetBlackhole and FleetBlackhole6.
const (
	FleetBlackholeProtocol  = "bh4"
	FleetBlackholeProtocol6 = "bh6"
)

// FleetTableProtocol is the BIRD static protocol that originates FleetConfig.Table.
const FleetTableProtocol = "table4"

// FleetInjectAddr and FleetInjectAddr6 are the bridge namespace's addresses on the
// mesh link, from which SendVia sends into any node.
const (
	FleetInjectAddr  = "10.20.0.250"
	FleetInjectAddr6 = "fd00:20::250"
)

// FleetRefused are routes the upstream's BIRD announces to n1 beside FleetRoutes that
// the lab's import rules refuse (special-purpose space, too long): they must reach no
// node's FIB, n1's nor, over the mesh, any other's.
var FleetRefused = []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("198.51.100.128/25")}

// FleetConfig says how to build a fleet.
type FleetConfig struct {
	NodeBinary, EtcdBinary string
	// Dir holds configs, logs, sockets and etcd's data.
	Dir string
	// Nodes is the fleet's size (at least 2, default 3); EtcdMembers how many of them
	// run an etcd member beside them (default min(3, Nodes)).
	Nodes, EtcdMembers int
	// Table and Table6, when set, are announced by BIRD too (next hop: itself).
	Table, Table6 []table.Route
	// TableAttrs, when set, gives Table's routes real AS paths and communities
	// (SkeletonConfig.TableAttrs).
	TableAttrs *table.Model
	// GossipProfile is the nodes' cluster.gossip.profile (default tuned).
	GossipProfile string
	// Etcd, when set, is the client URL of an etcd the nodes use (a unix socket
	// reaches across namespaces); no members are started then.
	Etcd string
	// Feeder, when set, is the command line of an IPv4 BGP upstream to run in the
	// upstream namespace instead of BIRD (peering as 10.12.0.2, AS65001, with n1).
	Feeder []string
	// CatchAll makes the upstream take every IPv4 destination as its own, so traffic
	// to any prefix of a table ends in its sink (local routes in its main table; none
	// leads out of the lab).
	CatchAll bool
	// RPKI runs a validator (stayrtr) in the upstream namespace serving FleetVRPs,
	// n1 validates its upstream's routes against it, and BIRD announces
	// FleetInvalid, which they make invalid.
	RPKI bool
	// Expected is n1's expected_prefixes for its upstream (default: the table's size).
	Expected int
	// Cluster is the fleet's name (default lab).
	Cluster string
	// MeshAlarmAfter and MeshResendAfter are the nodes' cluster.mesh.alarm_after and
	// resend_after (0: the node's defaults).
	MeshAlarmAfter, MeshResendAfter time.Duration
	// NodeExtra is appended to every node's configuration (YAML, top level).
	NodeExtra string
	// TableLater: BIRD announces Table only on `birdc enable` FleetTableProtocol
	// (Fleet.Birdc), once the fleet has formed: a load measured on its own.
	TableLater bool
	// Upstream2 adds a second upstream on n3's own link (at least 3 nodes): a BIRD
	// (Upstream2ASN, IPv4) announcing the same Table with itself as next hop. Each of n1
	// and n3 then prefers its own upstream's paths (eBGP over iBGP) and announces
	// them to the mesh; the other nodes select n1's (the lower router id) with n3's
	// as their backup.
	Upstream2 bool
}

// FleetNode is one node of the fleet.
type FleetNode struct {
	Index      int // 1-based
	Name       string
	NS         *Netns
	MeshAddr   string // 10.20.0.i
	MeshAddr6  string // fd00:20::i
	ConfigPath string
	LogPath    string
	// APISocket is the node's HTTP server (API, metrics): a unix socket in the lab's
	// directory, the host's way into the namespace (ctl reaches it too: the node
	// registers it in etcd).
	APISocket string
	Cmd       *exec.Cmd
	bin       string
}

// Fleet is a running fleet.
type Fleet struct {
	*Lab
	Cfg                   FleetConfig
	Nodes                 []*FleetNode
	Bridge, Upstream, Src *Netns
	BirdSock, BirdLog     string
	// Upstream2 is the second upstream's namespace, Bird2Log its BIRD's log (with
	// FleetConfig.Upstream2).
	Upstream2 *Netns
	Bird2Log  string
	etcd      []*exec.Cmd
	etcdArgs  [][]string
	etcdLogs  []string
	// EtcdSockets are the etcd members' unix-socket client URLs (the test's endpoints).
	EtcdSockets []string
}

// StartFleet builds the topology and starts etcd, BIRD and the nodes. On error the
// caller still owns the returned fleet (when non-nil) and must Close it.
func StartFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Nodes < 2 || cfg.Nodes > 200 {
		return nil, fmt.Errorf("lab: a fleet of %d nodes: use 2 to 200", cfg.Nodes)
	}
	if cfg.Upstream2 && (cfg.Nodes < 3 || len(cfg.Feeder) > 0) {
		return nil, fmt.Errorf("lab: a second upstream sits on n3 and announces BIRD's table: it needs 3 nodes or more and no feeder")
	}
	if cfg.EtcdMembers == 0 && cfg.Etcd == "" {
		cfg.EtcdMembers = min(3, cfg.Nodes)
	}
	if cfg.GossipProfile == "" {
		cfg.GossipProfile = "tuned"
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "lab"
	}
	l, err := New()
	if err != nil {
		return nil, err
	}
	f := &Fleet{Lab: l, Cfg: cfg}
	return f, f.build()
}

func (f *Fleet) build() error {
	var err error
	if f.Bridge, err = f.Netns("br"); err != nil {
		return err
	}
	if f.Upstream, err = f.Netns("up"); err != nil {
		return err
	}
	if f.Src, err = f.Netns("src"); err != nil {
		return err
	}
	if _, err := f.Bridge.Exec("ip", "link", "add", "br0", "type", "bridge"); err != nil {
		return err
	}
	if _, err := f.Bridge.Exec("ip", "link", "set", "br0", "up"); err != nil {
		return err
	}
	// The bridge's own addresses on the mesh link: SendVia's way into every node.
	// XDP forwards frames as they are: the checksums must be whole when they leave.
	for _, a := range [][]string{{"-4", FleetInjectAddr + "/24"}, {"-6", FleetInjectAddr6 + "/64", "nodad"}} {
		if _, err := f.Bridge.Exec(append([]string{"ip", a[0], "addr", "add", a[1], "dev", "br0"}, a[2:]...)...); err != nil {
			return err
		}
	}
	if err := disableTxChecksum(f.Bridge, "br0"); err != nil {
		return err
	}
	for i := 1; i <= f.Cfg.Nodes; i++ {
		n := &FleetNode{Index: i, Name: fmt.Sprintf("%s-n%d", f.Prefix, i), MeshAddr: fmt.Sprintf("10.20.0.%d", i), MeshAddr6: fmt.Sprintf("fd00:20::%d", i),
			ConfigPath: filepath.Join(f.Cfg.Dir, fmt.Sprintf("n%d.yaml", i)), LogPath: filepath.Join(f.Cfg.Dir, fmt.Sprintf("n%d.log", i)),
			APISocket: filepath.Join(f.Cfg.Dir, fmt.Sprintf("n%d-api.sock", i)), bin: f.Cfg.NodeBinary}
		if n.NS, err = f.Netns(fmt.Sprintf("n%d", i)); err != nil {
			return err
		}
		port := fmt.Sprintf("b%d", i)
		if err := f.Link(n.NS, fmt.Sprintf("m%d", i), n.MeshAddr+"/24", f.Bridge, port, ""); err != nil {
			return err
		}
		if _, err := f.Bridge.Exec("ip", "link", "set", f.If(port), "master", "br0"); err != nil {
			return err
		}
		// A switch floods a frame for a MAC it has not learned (a dead node's, once
		// its port went down) to every port, where a host's NIC drops it. A veth
		// delivers it, and the nodes' XDP programs do not look at the destination MAC
		// (ARCHITECTURE, simplified for now): so the bridge floods no unknown unicast.
		if _, err := f.Bridge.Exec("bridge", "link", "set", "dev", f.If(port), "flood", "off"); err != nil {
			return err
		}
		if _, err := n.NS.Exec("ip", "-6", "addr", "add", n.MeshAddr6+"/64", "dev", f.If(fmt.Sprintf("m%d", i)), "nodad"); err != nil {
			return err
		}
		// Frames XDP redirects into the mesh veth arrive at its bridge port.
		if err := f.AttachPass(f.Bridge, f.If(port)); err != nil {
			return err
		}
		for _, k := range []string{"net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"} {
			if err := n.NS.Sysctl(k, "0"); err != nil {
				return err
			}
		}
		f.Nodes = append(f.Nodes, n)
	}
	n1, n2 := f.Nodes[0], f.Nodes[1]
	if err := f.Link(n1.NS, "u1", RouterUpAddr+"/24", f.Upstream, "u0", UpstreamAddr+"/24"); err != nil {
		return err
	}
	if err := f.Link(n2.NS, "s1", "10.10.0.1/24", f.Src, "s0", "10.10.0.2/24"); err != nil {
		return err
	}
	for _, a := range []struct {
		ns         *Netns
		role, addr string
	}{{n1.NS, "u1", RouterUpAddr6 + "/64"}, {f.Upstream, "u0", UpstreamAddr6 + "/64"}, {n2.NS, "s1", "fd00:10::1/64"}, {f.Src, "s0", "fd00:10::2/64"}} {
		if _, err := a.ns.Exec("ip", "-6", "addr", "add", a.addr, "dev", f.If(a.role), "nodad"); err != nil {
			return err
		}
	}
	if err := f.AttachPass(f.Upstream, f.If("u0")); err != nil {
		return err
	}
	if err := disableTxChecksum(f.Src, f.If("s0")); err != nil {
		return err
	}
	for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
		if err := f.Upstream.Sysctl(k, "0"); err != nil {
			return err
		}
	}
	for _, p := range FleetRoutes {
		fam, via := "-4", "10.10.0.1"
		if p.Addr().Is6() {
			fam, via = "-6", "fd00:10::1"
		}
		if _, err := f.Upstream.Exec("ip", fam, "route", "add", "local", p.String(), "dev", "lo"); err != nil {
			return err
		}
		if _, err := f.Src.Exec("ip", fam, "route", "add", p.String(), "via", via); err != nil {
			return err
		}
	}
	if f.Cfg.CatchAll {
		for _, p := range []string{"0.0.0.0/1", "128.0.0.0/1"} {
			// In main, not local: the connected routes, longer, still lead to n1.
			if _, err := f.Upstream.Exec("ip", "route", "add", "local", p, "dev", "lo", "table", "main"); err != nil {
				return err
			}
			// The source sends anywhere through n2; nothing leaves the lab.
			if _, err := f.Src.Exec("ip", "route", "add", p, "via", "10.10.0.1"); err != nil {
				return err
			}
		}
		// The source's own subnet must not look local to the sink (a local source is a
		// martian): it lies back through n1.
		if _, err := f.Upstream.Exec("ip", "route", "add", "10.10.0.0/24", "via", RouterUpAddr); err != nil {
			return err
		}
	}
	if f.Cfg.Upstream2 {
		if err := f.buildUpstream2(); err != nil {
			return err
		}
	}
	if err := f.CheckIsolated(); err != nil {
		return err
	}
	if f.Cfg.Etcd == "" {
		if err := f.startEtcd(); err != nil {
			return err
		}
	}
	if f.Cfg.RPKI {
		file := filepath.Join(f.Cfg.Dir, "vrps.json")
		if err := writeVRPs(file, FleetVRPs); err != nil {
			return err
		}
		if _, err := startStayRTR(f.Upstream, f.Cfg.Dir, file, time.Hour); err != nil {
			return err
		}
	}
	if len(f.Cfg.Feeder) > 0 {
		if _, err := f.Upstream.Start(filepath.Join(f.Cfg.Dir, "feeder.log"), f.Cfg.Feeder...); err != nil {
			return fmt.Errorf("start the feeder: %w", err)
		}
	} else if err := f.startBird(); err != nil {
		return err
	}
	if f.Cfg.Upstream2 {
		if err := f.startBird2(); err != nil {
			return err
		}
	}
	for _, n := range f.Nodes {
		if err := os.WriteFile(n.ConfigPath, []byte(f.nodeConfig(n)), 0o644); err != nil {
			return err
		}
		// After the node stopped (cleanups run in reverse): its dataplane outlives
		// it, as on a router; remove it as node -uninstall does.
		f.Defer(func() error {
			_, err := dataplane.Uninstall("", n.Name)
			return err
		})
		if err := f.StartNode(n); err != nil {
			return err
		}
	}
	return nil
}

// nodeConfig is a node's YAML config.
func (f *Fleet) nodeConfig(n *FleetNode) string {
	var etcd, join []string
	for i := 1; i <= f.Cfg.EtcdMembers; i++ {
		etcd = append(etcd, fmt.Sprintf("http://10.20.0.%d:2379", i))
	}
	// Plain HTTP off the node's loopback is refused unless said: the members listen
	// in the lab's own network namespaces, which are never connected to the host's
	// network, so only the lab reaches them.
	insecure := "\n    insecure: true"
	if f.Cfg.Etcd != "" {
		etcd, insecure = []string{f.Cfg.Etcd}, ""
	}
	for _, m := range f.Nodes {
		join = append(join, m.MeshAddr+":7946")
	}
	ifaces := []string{f.If(fmt.Sprintf("m%d", n.Index))}
	var neighbors string
	switch n.Index {
	case 1:
		ifaces = append(ifaces, f.If("u1"))
		size := len(FleetRoutes) + len(f.Cfg.Table) + len(f.Cfg.Table6)
		if f.Cfg.Expected > 0 {
			size = f.Cfg.Expected
		}
		// The IPv4 session may send blackholes and is sent the fleet's; the IPv6 one
		// neither.
		neighbors = fmt.Sprintf(`  neighbors:
    - {address: %s, asn: %d, expected_prefixes: %d, import: %s, export: {blackholes: true}}
`, UpstreamAddr, UpstreamASN, size, strings.Replace(LabImport, "{", "{blackholes: true, ", 1))
		if len(f.Cfg.Feeder) == 0 { // BIRD has an IPv6 session too
			neighbors += fmt.Sprintf("    - {address: \"%s\", asn: %d, families: [ipv6-unicast], import: %s}\n", UpstreamAddr6, UpstreamASN, LabImport)
		}
		if f.Cfg.RPKI {
			neighbors += fmt.Sprintf("rpki:\n  validators: [\"%s\"]\n", ValidatorAddr)
		}
	case 2:
		ifaces = append(ifaces, f.If("s1"))
	case 3:
		if f.Cfg.Upstream2 {
			ifaces = append(ifaces, f.If("u3"))
			neighbors = fmt.Sprintf(`  neighbors:
    - {address: %s, asn: %d, expected_prefixes: %d, import: %s}
`, Upstream2Addr, Upstream2ASN, len(f.Cfg.Table), LabImport)
		}
	}
	meshExtra := ""
	if f.Cfg.MeshResendAfter > 0 {
		meshExtra = fmt.Sprintf("\n    resend_after: %v", f.Cfg.MeshResendAfter)
	}
	if f.Cfg.MeshAlarmAfter > 0 {
		meshExtra += fmt.Sprintf("\n    alarm_after: %v", f.Cfg.MeshAlarmAfter)
	}
	return fmt.Sprintf(`node_name: %s
interfaces: [%s]
http_address: unix://%s
cache:
  interval: 250ms
cluster:
  name: %s
  etcd:
    endpoints: [%s]%s
  lease_ttl: 3s
  gossip:
    address: %s:7946
    join: [%s]
    profile: %s
  mesh:
    address: %s
    address6: "%s"%s
bgp:
  asn: %d
  router_id: %s
  grpc_address: 127.0.0.1:50051
  # Short, for the fleet's tests of deaths: a member's session goes 15 s after it
  # died, and a killed node's XDP hands over to the kernel after 15 s.
  graceful_restart: {restart_time: %s}
%s%s`, n.Name, strings.Join(ifaces, ", "), n.APISocket, f.Cfg.Cluster, strings.Join(etcd, ", "), insecure, n.MeshAddr, strings.Join(join, ", "), f.Cfg.GossipProfile,
		n.MeshAddr, n.MeshAddr6, meshExtra, RouterASN, n.MeshAddr, FleetRestartTime, neighbors, f.Cfg.NodeExtra)
}

// FleetRestartTime is the fleet's nodes' bgp.graceful_restart.restart_time: short
// for the tests of deaths, long enough for a restart that reloads a table.
// TestFleetFailover's n1 (100,000 prefixes from its upstream, and again from a mesh
// peer) restarts in 8 s on an idle 2-core machine, 12 to 13 s beside two busy loops;
// past the restart time it swaps to what its FIB holds.
const FleetRestartTime = 15 * time.Second

// StartNode starts (or restarts) a node's process.
func (f *Fleet) StartNode(n *FleetNode) error {
	cmd, err := n.NS.Start(n.LogPath, n.bin, "-config", n.ConfigPath)
	if err != nil {
		return err
	}
	n.Cmd = cmd
	return nil
}

// StopNode sends a node's process sig (SIGTERM: a restart's stop) and waits until it
// is gone.
func (f *Fleet) StopNode(n *FleetNode, sig syscall.Signal) error {
	if err := n.Cmd.Process.Signal(sig); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(n.Cmd.Process.Pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s still running 30 s after signal %v", n.Name, sig)
		}
	}
	return nil
}

// KillNode kills a node's process with SIGKILL (a crash: no leave, no unpin) and waits
// until it is gone.
func (f *Fleet) KillNode(n *FleetNode) error {
	if err := n.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(n.Cmd.Process.Pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s still running 10 s after SIGKILL", n.Name)
		}
	}
	return nil
}

// SetMeshLink takes node n's port on the mesh bridge down (a machine gone without a
// word: no TCP goodbye reaches the others) or up.
func (f *Fleet) SetMeshLink(n *FleetNode, up bool) error {
	state := map[bool]string{true: "up", false: "down"}[up]
	_, err := f.Bridge.Exec("ip", "link", "set", f.If(fmt.Sprintf("b%d", n.Index)), state)
	return err
}

// KillWatch kills node n with SIGKILL and reads the other nodes' views (every 10 ms)
// until each marks it dead and has removed its mesh session; it returns, per other
// node, how long after the kill each happened.
func (f *Fleet) KillWatch(n *FleetNode, timeout time.Duration) (dead, unpeered map[string]time.Duration, err error) {
	start := time.Now()
	if err := f.KillNode(n); err != nil {
		return nil, nil, err
	}
	dead, unpeered = map[string]time.Duration{}, map[string]time.Duration{}
	others := len(f.Nodes) - 1
	for len(dead) < others || len(unpeered) < others {
		if time.Since(start) > timeout {
			return dead, unpeered, fmt.Errorf("%s after %s was killed: marked dead by %v, unpeered by %v; want all %d others", timeout, n.Name, dead, unpeered, others)
		}
		for _, o := range f.Nodes {
			if o == n {
				continue
			}
			v, err := o.View()
			if err != nil {
				continue
			}
			if _, ok := dead[o.Name]; !ok && v.Member(n.Name) == cluster.Dead {
				dead[o.Name] = time.Since(start)
			}
			if _, ok := unpeered[o.Name]; !ok && !v.Peered(n.MeshAddr) {
				unpeered[o.Name] = time.Since(start)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return dead, unpeered, nil
}

// Get fetches a path of a node's HTTP server.
func (n *FleetNode) Get(path string) ([]byte, error) { return UnixGet(n.APISocket, path) }

// Metrics scrapes a node's /metrics.
func (n *FleetNode) Metrics() (map[string]float64, error) {
	b, err := n.Get("/metrics")
	if err != nil {
		return nil, err
	}
	return ParseMetrics(b), nil
}

// WaitResolved waits until no node has a next hop whose neighbour (ARP, NDP) is
// unresolved: until then XDP passes that next hop's frames to the kernel, which in
// the lab does not forward. A fleet is Formed when its tables agree, which may be
// before the neighbours of the next hops just learned answered.
func (f *Fleet) WaitResolved(timeout time.Duration) error {
	left := map[string]float64{}
	err := WaitFor(context.Background(), timeout, "every node's next hops resolved", func() (bool, error) {
		clear(left)
		for _, n := range f.Nodes {
			m, err := n.Metrics()
			if err != nil {
				return false, err
			}
			if u := m[`fibfleet_fib_nexthops{state="unresolved"}`]; u != 0 {
				left[n.Name] = u
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%w (unresolved next hops: %v)", err, left)
	}
	return nil
}

// startEtcd starts the etcd members, one in each of the first EtcdMembers nodes'
// namespaces, on the mesh addresses.
func (f *Fleet) startEtcd() error {
	var initial []string
	for i := 1; i <= f.Cfg.EtcdMembers; i++ {
		initial = append(initial, fmt.Sprintf("e%d=http://10.20.0.%d:2380", i, i))
	}
	for i := 1; i <= f.Cfg.EtcdMembers; i++ {
		sock := filepath.Join(f.Cfg.Dir, fmt.Sprintf("etcd%d.sock", i))
		f.EtcdSockets = append(f.EtcdSockets, "unix://"+sock)
		f.etcdArgs = append(f.etcdArgs, etcdMemberArgs(f.Cfg.EtcdBinary, fmt.Sprintf("e%d", i), filepath.Join(f.Cfg.Dir, fmt.Sprintf("etcd%d", i)),
			[]string{fmt.Sprintf("http://10.20.0.%d:2379", i), "unix://" + sock}, fmt.Sprintf("http://10.20.0.%d:2380", i), initial, f.Prefix))
		f.etcdLogs = append(f.etcdLogs, filepath.Join(f.Cfg.Dir, fmt.Sprintf("etcd%d.log", i)))
	}
	f.etcd = make([]*exec.Cmd, f.Cfg.EtcdMembers)
	return f.StartEtcd()
}

// StartEtcd (re)starts every etcd member that is not running.
func (f *Fleet) StartEtcd() error {
	for i, args := range f.etcdArgs {
		if c := f.etcd[i]; c != nil && c.ProcessState == nil && syscall.Kill(c.Process.Pid, 0) == nil {
			continue
		}
		sock := strings.TrimPrefix(f.EtcdSockets[i], "unix://")
		_ = os.Remove(sock)
		cmd, err := f.Nodes[i].NS.Start(f.etcdLogs[i], args...)
		if err != nil {
			return fmt.Errorf("start etcd member %d: %w", i+1, err)
		}
		f.etcd[i] = cmd
	}
	// Members answer once they have a leader: wait for every socket.
	for i := range f.etcdArgs {
		sock := strings.TrimPrefix(f.EtcdSockets[i], "unix://")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(sock); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("etcd member %d: no socket %s after 30 s (see %s)", i+1, sock, f.etcdLogs[i])
			}
		}
	}
	return nil
}

// StopEtcd stops every etcd member (SIGTERM) and waits for them to exit.
func (f *Fleet) StopEtcd() error {
	var errs []error
	for i, c := range f.etcd {
		if c == nil {
			continue
		}
		_ = c.Process.Signal(syscall.SIGTERM)
		for deadline := time.Now().Add(20 * time.Second); syscall.Kill(c.Process.Pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = c.Process.Kill()
				errs = append(errs, fmt.Errorf("etcd member %d did not stop within 20 s of SIGTERM", i+1))
				break
			}
		}
		f.etcd[i] = nil
	}
	return errors.Join(errs...)
}

// startBird starts BIRD 2 in the upstream namespace, peering with n1 over IPv4 and
// IPv6 and announcing FleetRoutes and the configured tables with itself as next hop.
func (f *Fleet) startBird() error {
	c, err := newBirdConfig(filepath.Join(f.Cfg.Dir, "bird.conf"), UpstreamAddr)
	if err != nil {
		return err
	}
	var own4, own6, t4, t6 []netip.Prefix
	for _, p := range FleetRoutes {
		if p.Addr().Is4() {
			own4 = append(own4, p)
		} else {
			own6 = append(own6, p)
		}
	}
	for _, r := range f.Cfg.Table {
		t4 = append(t4, r.Prefix)
	}
	for _, r := range f.Cfg.Table6 {
		t6 = append(t6, r.Prefix)
	}
	c.static("own4", own4...)
	c.static("own6", own6...)
	c.staticOff(FleetBlackholeProtocol, FleetBlackhole)
	c.staticOff(FleetBlackholeProtocol6, FleetBlackhole6)
	c.static("refused4", FleetRefused...)
	if f.Cfg.RPKI {
		c.static("invalid4", FleetInvalid)
	}
	switch {
	case len(t4) > 0 && f.Cfg.TableAttrs != nil:
		c.staticAttrs(FleetTableProtocol, f.Cfg.TableLater, *f.Cfg.TableAttrs, f.Cfg.Table)
	case len(t4) > 0:
		c.staticProto(FleetTableProtocol, f.Cfg.TableLater, t4)
	}
	if len(t6) > 0 {
		c.static("table6", t6...)
	}
	// The blackhole statics go out with BLACKHOLE. BIRD keeps what n1 sends (the
	// fleet's blackholes, nothing else) to be looked at, and sends it nowhere.
	statics := fmt.Sprintf(`filter {
      if source != RTS_STATIC then reject;
      if proto = %q || proto = %q then bgp_community.add((65535, 666));
      accept;
    }`, FleetBlackholeProtocol, FleetBlackholeProtocol6)
	c.bgp(birdSession{name: "n1", local: UpstreamAddr, localAS: UpstreamASN, neighbor: RouterUpAddr, neighborAS: RouterASN,
		channels: []birdChannel{{family: "ipv4", imp: "all", exp: statics}}})
	c.bgp(birdSession{name: "n1v6", local: UpstreamAddr6, localAS: UpstreamASN, neighbor: RouterUpAddr6, neighborAS: RouterASN,
		channels: []birdChannel{{family: "ipv6", imp: "all", exp: statics}}})
	f.BirdSock, f.BirdLog, _, err = startBird(f.Upstream, f.Cfg.Dir, "bird", c)
	return err
}

// buildUpstream2 links n3 to the second upstream's namespace.
func (f *Fleet) buildUpstream2() error {
	var err error
	if f.Upstream2, err = f.Netns("up2"); err != nil {
		return err
	}
	if err := f.Link(f.Nodes[2].NS, "u3", RouterUp2Addr+"/24", f.Upstream2, "u2", Upstream2Addr+"/24"); err != nil {
		return err
	}
	if err := f.AttachPass(f.Upstream2, f.If("u2")); err != nil {
		return err
	}
	for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
		if err := f.Upstream2.Sysctl(k, "0"); err != nil {
			return err
		}
	}
	return nil
}

// startBird2 starts the second upstream's BIRD, peering with n3 and announcing the
// table.
func (f *Fleet) startBird2() error {
	c, err := newBirdConfig(filepath.Join(f.Cfg.Dir, "bird2.conf"), Upstream2Addr)
	if err != nil {
		return err
	}
	var t4 []netip.Prefix
	for _, r := range f.Cfg.Table {
		t4 = append(t4, r.Prefix)
	}
	c.static("table4", t4...)
	c.bgp(birdSession{name: "n3", local: Upstream2Addr, localAS: Upstream2ASN, neighbor: RouterUp2Addr, neighborAS: RouterASN, quickRetry: true,
		channels: []birdChannel{{family: "ipv4", imp: "none", exp: "where source = RTS_STATIC"}}})
	_, f.Bird2Log, _, err = startBird(f.Upstream2, f.Cfg.Dir, "bird2", c)
	return err
}

// NewFlows prepares n flows from src through n2 to the destinations, which both
// upstreams take as their own (FleetConfig.Upstream2): A is the first upstream, B
// the second.
func (f *Fleet) NewFlows(dsts []netip.Addr, n int) (*Flows, error) {
	if f.Upstream2 == nil {
		return nil, errors.New("lab: fleet flows end at two upstreams: set FleetConfig.Upstream2")
	}
	return newFlows(f.Lab, f.Src, fleetSrcRouter, [2]*Netns{f.Upstream, f.Upstream2}, dsts, n)
}

// Birdc runs a birdc command against the upstream's BIRD.
func (f *Fleet) Birdc(args ...string) (string, error) {
	return run(append([]string{"birdc", "-s", f.BirdSock}, args...)...)
}

// SendVia sends n datagrams to dst from the bridge namespace into node's mesh
// interface, so that node's XDP program forwards them (or drops them): every node
// is an entry point this way, not n2 alone.
func (f *Fleet) SendVia(node *FleetNode, dst netip.Addr, n int) error {
	fam, via := "-4", node.MeshAddr
	if dst.Is6() {
		fam, via = "-6", node.MeshAddr6
	}
	if _, err := f.Bridge.Exec("ip", fam, "route", "replace", netip.PrefixFrom(dst, dst.BitLen()).String(), "via", via); err != nil {
		return err
	}
	return send(f.Bridge, dst, n)
}

// Listen counts datagrams arriving in the upstream namespace (the sink of
// FleetRoutes).
func (f *Fleet) Listen() (*Sink, error) { return listen(f.Lab, f.Upstream) }

// Send sends n datagrams from src to dst.
func (f *Fleet) Send(dst netip.Addr, n int) error { return send(f.Src, dst, n) }

// FleetView is what a node's GET /api/v1/fleet says.
type FleetView = nodeapi.Fleet

// View reads the node's view of its fleet.
func (n *FleetNode) View() (FleetView, error) {
	var v FleetView
	b, err := n.Get("/api/v1/fleet")
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

// Formed says whether every node sees all members alive, has its mesh sessions
// established, is registered, and holds routes4 and routes6 routes with equal digests;
// it returns the views it read.
func (f *Fleet) Formed(routes4, routes6 int) (bool, []FleetView, error) {
	var views []FleetView
	for _, n := range f.Nodes {
		v, err := n.View()
		if err != nil {
			return false, views, err
		}
		views = append(views, v)
		alive := 0
		for _, m := range v.Members {
			if m.State == cluster.Alive {
				alive++
			}
		}
		if alive != len(f.Nodes) || v.Established() != len(f.Nodes)-1 || !v.Registered || len(v.Applied) != len(f.Nodes) ||
			!f.sameTables(v) || v.Applied[n.Name].Routes != [2]int{routes4, routes6} {
			return false, views, nil
		}
	}
	return true, views, nil
}

// sameTables says whether the nodes' FIBs agree in a view: their digests (prefixes
// and selected next hops) with one upstream; with two, where n1 and n3 each select
// their own upstream's paths, their prefixes.
func (f *Fleet) sameTables(v FleetView) bool {
	if !f.Cfg.Upstream2 {
		return v.Digests.Agree
	}
	for _, a := range v.Applied {
		if a.Prefixes != v.Applied[f.Nodes[0].Name].Prefixes {
			return false
		}
	}
	return true
}

// WaitFormed waits until the fleet is Formed.
func (f *Fleet) WaitFormed(timeout time.Duration, routes4, routes6 int) error {
	var last []FleetView
	err := WaitFor(context.Background(), timeout, "the fleet formed (members, mesh, equal digests)", func() (bool, error) {
		ok, views, err := f.Formed(routes4, routes6)
		last = views
		return ok, err
	})
	if err != nil {
		b, _ := json.MarshalIndent(last, "", " ")
		return fmt.Errorf("%w\nlast views: %s", err, b)
	}
	return nil
}
