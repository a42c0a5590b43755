package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/announce"
	"github.com/fibfleet/fibfleet/bfd"
	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/memory"
	"github.com/fibfleet/fibfleet/mesh"
	"gopkg.in/yaml.v3"
)

// Config is the node's configuration file (YAML). Flags override it.
type Config struct {
	NodeName    string   `yaml:"node_name"`
	Interfaces  []string `yaml:"interfaces"`
	XDPMode     string   `yaml:"xdp_mode"`
	BPFFS       string   `yaml:"bpffs"`
	HTTPAddress string   `yaml:"http_address"`
	LogLevel    string   `yaml:"log_level"`
	// Pprof serves Go's profiles under /debug/pprof/ on http_address. A CPU profile
	// costs the node CPU while it runs: turn it off where http_address is reachable
	// by more than its operators (the Helm chart does).
	Pprof bool `yaml:"pprof"`
	// HTTPTLS serves the node API over HTTPS (with client certificates when a
	// client CA is given): for an http_address that ctl reaches from other hosts.
	HTTPTLS HTTPTLSConfig `yaml:"http_tls"`
	// MemoryLimit is Go's soft memory limit: auto (default: a formula over the paths
	// the node holds and its mesh peers, package memory), off, or a size (1536MiB,
	// 2GiB); never above 85% of the cgroup's limit. Live on reload.
	MemoryLimit string `yaml:"memory_limit"`
	// HTTPAdvertise is the API address published in etcd and gossip for ctl
	// (default: http_address).
	HTTPAdvertise string        `yaml:"http_advertise"`
	BGP           BGPConfig     `yaml:"bgp"`
	FIB           FIBConfig     `yaml:"fib"`
	Cache         CacheConfig   `yaml:"cache"`
	Cluster       ClusterConfig `yaml:"cluster"`
	RPKI          RPKIConfig    `yaml:"rpki"`

	// files are the config files read, in order, each overlaying the one before
	// (none: defaults and flags); checkOnly stops after reading them (-check),
	// checkProbe probes the kernel and interfaces before (-probe).
	files       []string
	dir         string // -config-dir, watched for changes
	checkOnly   bool
	checkProbe  bool
	uninstall   bool // -uninstall: remove the dataplane and exit
	showVersion bool // -version: print the version and exit
}

// HTTPTLSConfig is the node API's TLS.
type HTTPTLSConfig struct {
	Cert     string `yaml:"cert"`
	Key      string `yaml:"key"`
	ClientCA string `yaml:"client_ca"`
}

// RPKIConfig is route origin validation: the validators the node follows over RTR
// (cmd/node/rpki.go) and what an invalid route becomes.
type RPKIConfig struct {
	// Validators are RTR servers, host:port (Routinator, rpki-client with
	// StayRTR, ...): their VRPs together (a union) validate every route an upstream
	// with import rules announces. None: no validation.
	Validators []string `yaml:"validators"`
	// Invalid: "reject" (default: refused, reason rpki_invalid), "lower" (taken
	// with local preference InvalidLocalPref: any valid or not-found path wins) or
	// "mark" (taken, counted and shown).
	Invalid string `yaml:"invalid"`
	// InvalidLocalPref is an invalid route's local preference with invalid: lower
	// (default 50; below the default 100 and below every upstream's
	// import.local_pref).
	InvalidLocalPref uint32 `yaml:"invalid_local_pref"`
	// Refresh is how often a validator is asked for changes besides its notifies
	// (default 60s); Expire, how long a validator's VRPs are kept once it is
	// unreachable (default 2h, RFC 8210's default).
	Refresh time.Duration `yaml:"refresh"`
	Expire  time.Duration `yaml:"expire"`
	// Wait is how long the sessions with upstreams that have import rules wait at
	// start for every validator's first set (default 30s; 0s: they do not wait).
	Wait *time.Duration `yaml:"wait"`
}

// wait is rpki.wait in force (0: the sessions do not wait).
func (c RPKIConfig) wait() time.Duration {
	if c.Wait == nil {
		return 30 * time.Second
	}
	return *c.Wait
}

func (c RPKIConfig) validate() []error {
	var errs []error
	for i, v := range c.Validators {
		if _, _, err := net.SplitHostPort(v); err != nil {
			errs = append(errs, fmt.Errorf("rpki.validators[%d] %q: write host:port (an RTR server, such as 192.0.2.10:8282)", i, v))
		}
	}
	switch c.Invalid {
	case "", "reject", "mark", "lower":
	default:
		errs = append(errs, fmt.Errorf("rpki.invalid %q: use reject (default), lower or mark", c.Invalid))
	}
	if c.Refresh < 0 || c.Expire < 0 || c.wait() < 0 {
		errs = append(errs, errors.New("rpki.refresh, rpki.expire and rpki.wait: use positive durations (defaults 60s, 2h and 30s; rpki.wait 0s: sessions do not wait)"))
	}
	if c.InvalidLocalPref != 0 && c.Invalid != "lower" {
		errs = append(errs, fmt.Errorf("rpki.invalid_local_pref %d: it is the local preference of invalid routes with invalid: lower; set that, or leave it out", c.InvalidLocalPref))
	}
	return errs
}

// ClusterConfig joins the node to its fleet: etcd (the fleet's cache policy, flush
// epoch, registrations), gossip (membership) and the iBGP mesh.
type ClusterConfig struct {
	// Name names the fleet: its keys live under /fibfleet/<name>/.
	Name string `yaml:"name"`
	// Etcd is the fleet's etcd; with no endpoints the node runs one inside itself
	// (Embedded), so a node alone needs nothing else.
	Etcd     EtcdConfig     `yaml:"etcd"`
	Embedded EmbeddedConfig `yaml:"embedded"`
	// LeaseTTL is how long the node stays registered after it stops renewing (a
	// crash): a flush waits for registered nodes.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	Gossip   GossipConfig  `yaml:"gossip"`
	Mesh     MeshConfig    `yaml:"mesh"`
}

// EtcdConfig reaches an external etcd.
type EtcdConfig struct {
	Endpoints    []string `yaml:"endpoints"`
	CA           string   `yaml:"ca"`
	Cert         string   `yaml:"cert"`
	Key          string   `yaml:"key"`
	Username     string   `yaml:"username"`
	PasswordFile string   `yaml:"password_file"`
	// Insecure allows plain http:// off this host (endpoints, or the embedded
	// etcd's listen): whoever reaches etcd there changes the fleet's policy, drains
	// and blackholes without credentials, so the node refuses it unless this says
	// the network is closed to everyone else (a lab's namespaces).
	Insecure bool `yaml:"insecure"`
}

// EmbeddedConfig is the etcd a node alone runs.
type EmbeddedConfig struct {
	// DataDir holds its data (default /var/lib/fibfleet/<node_name>/etcd).
	DataDir string `yaml:"data_dir"`
	// Listen is its client URL (default unix://<data_dir>/etcd.sock: no port to
	// collide with, reachable by ctl on the same host).
	Listen string `yaml:"listen"`
}

// GossipConfig is the node's memberlist.
type GossipConfig struct {
	// Address is host:port to gossip on (default <mesh.address>:<port>, or
	// 127.0.0.1:<port> without a mesh).
	Address string `yaml:"address"`
	// Port is the port of the default Address (default 7946).
	Port int `yaml:"port"`
	// Advertise is host:port others reach this node at, when not Address.
	Advertise string `yaml:"advertise"`
	// Join are members to contact at start (host:port); the members registered in
	// etcd are contacted too.
	Join []string `yaml:"join"`
	// KeyFile holds the gossip encryption key: 16, 24 or 32 bytes, raw or base64.
	KeyFile string `yaml:"key_file"`
	// Profile is tuned (a crash noticed in about 1.5 s) or lan (memberlist's
	// defaults, about 6 s).
	Profile string `yaml:"profile"`
}

// MeshConfig is the node's side of the fleet's iBGP mesh.
type MeshConfig struct {
	// Address is the node's IPv4 address on the link between the fleet's nodes;
	// empty: no mesh (a node alone).
	Address string `yaml:"address"`
	// Address6 is its IPv6 address there: the next hop of IPv6 subnets it announces.
	Address6 string `yaml:"address6"`
	// Announce are the subnets the node announces to the mesh with itself as next
	// hop, so the others resolve next hops there through it; default: the subnets of
	// its links to its BGP neighbours.
	Announce []string `yaml:"announce"`
	// AlarmAfter is how long a mesh peer's prefixes must have differed from this
	// node's, both unchanged, to raise the alarm (routes lost on the way). Shorter
	// than a full table's load through a busy mesh peer, it can raise a false alarm
	// while the peer is stalled.
	AlarmAfter time.Duration `yaml:"alarm_after"`
	// ResendAfter is how long a mesh peer's prefixes may differ from this node's,
	// once the alarm is up, before the node resends its routes to it (the last
	// resort).
	ResendAfter time.Duration `yaml:"resend_after"`
}

// CacheConfig is the destination cache's policy (cache.FlatPolicy: mode off, fixed
// with entries_v4 and entries_v6, or auto, which sizes each family within
// min_entries and max_entries or turns it off) and how often it is judged.
type CacheConfig struct {
	cache.FlatPolicy `yaml:",inline"`
	// Interval is the controller's measurement interval.
	Interval time.Duration `yaml:"interval"`
}

// BGPConfig configures the embedded speaker.
type BGPConfig struct {
	ASN             uint32           `yaml:"asn"`
	RouterID        string           `yaml:"router_id"`
	ListenAddresses []string         `yaml:"listen_addresses"`
	ListenPort      int32            `yaml:"listen_port"`
	GRPCAddress     string           `yaml:"grpc_address"`
	Neighbors       []NeighborConfig `yaml:"neighbors"`
	// Originate are the fleet's prefixes: what the node may announce upstream (each
	// neighbour's export says which it gets).
	Originate OriginateConfig `yaml:"originate"`
	// Multipath shares each route's flows over the next hops of its equal paths
	// (ECMP, default off). GoBGP's rule: equal up to the router id, whatever the
	// neighbour AS ("multipath relax"); an eBGP and an iBGP path are never equal.
	Multipath bool `yaml:"multipath"`
	// BackupPaths installs, beside each route's next hops, the next hop of its best
	// path through another one (BGP PIC edge, default on): a failure moves the
	// traffic to it at once, before BGP reconverges.
	BackupPaths bool `yaml:"backup_paths"`
	// GracefulRestart: how a restart of the node looks to its peers (it keeps
	// forwarding meanwhile).
	GracefulRestart GracefulRestartConfig `yaml:"graceful_restart"`
}

// GracefulRestartConfig is the node's graceful restart (RFC 4724). The XDP program
// and its FIB outlive the process: a restart, an upgrade or a crash keeps
// forwarding, and the peers keep the node's routes meanwhile.
type GracefulRestartConfig struct {
	// RestartTime is what the node asks its peers to wait for it (default 120s), and
	// how long its dataplane forwards from the last FIB with no process (after it,
	// everything passes to the kernel: a node removed without --uninstall).
	RestartTime time.Duration `yaml:"restart_time"`
	// LongLivedTime, above 0, offers long-lived graceful restart (RFC 9494): peers
	// that support it keep the routes this much longer, as a last resort.
	LongLivedTime time.Duration `yaml:"long_lived_time"`
}

// OriginateConfig are the prefixes the fleet announces to its upstreams (package
// announce decides when).
type OriginateConfig struct {
	// HoldDown is how long a prefix stays announced after the node stopped being
	// able to carry its traffic (default 30s): a reload, or one upstream's reset,
	// must not withdraw the fleet's prefixes from the Internet.
	HoldDown time.Duration  `yaml:"hold_down"`
	Prefixes []OriginPrefix `yaml:"prefixes"`
}

// OriginPrefix is one originated prefix and what its traffic reaches.
type OriginPrefix struct {
	Prefix string `yaml:"prefix"`
	// Reaches: "route" (announced while a route from inside the AS, such as the
	// operator's core over iBGP, covers it or lies within it) or "local" (a
	// destination on this node itself: announced while the node forwards).
	Reaches string `yaml:"reaches"`
}

// BFDConfig is a neighbour's BFD session (RFC 5880, single hop: RFC 5881).
type BFDConfig struct {
	// Interval is how often each side sends, and the slowest it accepts (default
	// 300ms; the neighbour may ask for slower).
	Interval time.Duration `yaml:"interval"`
	// Multiplier is how many intervals without a packet mean the neighbour is down
	// (default 3).
	Multiplier uint8 `yaml:"multiplier"`
}

// bfdPeer is the neighbour's BFD session, if it has one, or what is wrong with its
// settings.
func (n NeighborConfig) bfdPeer(a netip.Addr, field string) (*bfd.Peer, error) {
	if n.BFD == nil {
		return nil, nil
	}
	p := bfd.Peer{Addr: a, MinTx: cmp.Or(n.BFD.Interval, 300*time.Millisecond), Multiplier: cmp.Or(n.BFD.Multiplier, 3)}
	p.MinRx = p.MinTx
	switch {
	case p.MinTx < 10*time.Millisecond || p.MinTx > 10*time.Second:
		return nil, fmt.Errorf("%s.interval %v: use 10ms to 10s (300ms is a safe start; 50ms needs an unloaded machine)", field, n.BFD.Interval)
	case p.Multiplier > 50:
		return nil, fmt.Errorf("%s.multiplier %d: use 1 to 50 (3 is usual)", field, p.Multiplier)
	case n.MultihopTTL > 0:
		return nil, fmt.Errorf("%s: BFD here is single hop: the neighbour must be directly connected (multihop_ttl is set)", field)
	}
	return &p, nil
}

// ExportConfig is what a neighbour is sent of the originated prefixes: nothing
// unless prefixes lists some (export is deny-by-default).
type ExportConfig struct {
	// Prefixes are originated prefixes (bgp.originate) the neighbour gets.
	Prefixes []string `yaml:"prefixes"`
	// Communities ("65000:100", RFC 1997) and LargeCommunities ("65000:1:2", RFC
	// 8092) are added to them.
	Communities      []string `yaml:"communities"`
	LargeCommunities []string `yaml:"large_communities"`
	// Prepend repeats the fleet's AS that many more times (0-10).
	Prepend uint8 `yaml:"prepend"`
	// MED, when set, is sent as the multi-exit discriminator.
	MED *uint32 `yaml:"med"`
	// Blackholes sends the neighbour the fleet's blackholes (ctl blackhole add)
	// with BLACKHOLE and NO_EXPORT (RFC 7999), so that it drops the traffic before
	// the link: set it for upstreams that take blackholes from the fleet.
	Blackholes bool `yaml:"blackholes"`
}

// NeighborConfig is one upstream peer.
type NeighborConfig struct {
	Address     string `yaml:"address"`
	ASN         uint32 `yaml:"asn"`
	Port        uint16 `yaml:"port"`
	MaxPrefixes uint32 `yaml:"max_prefixes"`
	// ExpectedPrefixes sizes the first dump for the load ETA (later dumps use the last one's size).
	ExpectedPrefixes uint32 `yaml:"expected_prefixes"`
	Passive          bool   `yaml:"passive"`
	MultihopTTL      uint8  `yaml:"multihop_ttl"`
	// Families are the session's address families: ipv4-unicast (the default when
	// empty) and ipv6-unicast.
	Families []string `yaml:"families"`
	// PasswordFile holds the session's TCP-MD5 password (RFC 2385), read at start
	// and at each reload: a changed password resets the session.
	PasswordFile string `yaml:"password_file"`
	// TTLSecurity turns GTSM on (RFC 5082): the peer must be directly connected and
	// send with TTL 255.
	TTLSecurity bool `yaml:"ttl_security"`
	// MaxPrefixRestart brings a session shut down for exceeding max_prefixes back
	// after that long (default: it stays down until the configuration is reloaded
	// with that neighbour changed, or the node restarts).
	MaxPrefixRestart time.Duration `yaml:"max_prefix_restart"`
	// Import are the rules the neighbour's routes must pass (safe by default for an
	// eBGP neighbour; see ImportConfig).
	Import ImportConfig `yaml:"import"`
	// Export is what the neighbour is sent of the fleet's prefixes.
	Export ExportConfig `yaml:"export"`
	// BFD, when set, runs a BFD session with the neighbour (single hop: it must be
	// directly connected): its failure moves the traffic through it to backup next
	// hops within the detection time, then resets the BGP session.
	BFD *BFDConfig `yaml:"bfd"`
	// Weight is the share of a next-hop group's flows that the next hops resolved
	// through this neighbour take beside the group's other members (ECMP): 1 to 64,
	// default 1 (equal shares); live on reload. A 100G upstream beside a 10G one: 10.
	Weight int `yaml:"weight"`

	// password is password_file's content, read with the configuration (or why it
	// could not be): the running configuration keeps the password it was started
	// with, so a reload sees a changed file as a change.
	password    string
	passwordErr error
}

// ImportConfig is what an upstream may announce. By default, for an eBGP neighbour:
// no special-purpose or unallocated space, IPv4 /8 to /24, IPv6 /16 to /48, no
// default route, no private or reserved AS in the path, at most 100 ASes, the
// neighbour's AS first; each is switched off here. An iBGP neighbour (the node's own
// AS) is not filtered unless Filter says so.
type ImportConfig struct {
	// Filter: "" (on for eBGP, off for iBGP), "on" or "off".
	Filter string `yaml:"filter"`
	// Allow are prefixes accepted although in special-purpose space (a lab's
	// documentation prefixes); the length checks still apply.
	Allow         []string `yaml:"allow"`
	DefaultRoute  bool     `yaml:"default_route"`
	AnyLength     bool     `yaml:"any_length"`
	PrivateASNs   bool     `yaml:"private_asns"`
	MaxPathLength int      `yaml:"max_path_length"`
	AnyFirstAS    bool     `yaml:"any_first_as"`
	// PrefixList, when set, is the only space the neighbour may announce: entries
	// "198.51.100.0/22" (that prefix) or "198.51.100.0/22 le 24" (it and its
	// subnets up to /24).
	PrefixList []string `yaml:"prefix_list"`
	// OriginASNs, when set, are the only origin ASes accepted; DenyASNs, ASes no
	// accepted path contains.
	OriginASNs []uint32 `yaml:"origin_asns"`
	DenyASNs   []uint32 `yaml:"deny_asns"`
	// Blackholes accepts routes carrying BLACKHOLE (RFC 7999) from the neighbour:
	// the fleet drops their traffic. They may be as long as /32 or /128 (and
	// longer than the prefix list's le), are not origin-validated, and may be
	// inside the fleet's own prefixes. Without it, they are refused (reason
	// blackhole_not_allowed). With the filter off (an iBGP neighbour's default)
	// everything is accepted, blackholes included.
	Blackholes bool `yaml:"blackholes"`
	// LocalPref, when set, replaces the accepted routes' local preference;
	// Communities and LargeCommunities are added to them (also with the filter off).
	LocalPref        uint32   `yaml:"local_pref"`
	Communities      []string `yaml:"communities"`
	LargeCommunities []string `yaml:"large_communities"`
}

// actions are the bgp package's import actions (nil: none).
func (c ImportConfig) actions() *bgp.ImportActions {
	if c.LocalPref == 0 && len(c.Communities) == 0 && len(c.LargeCommunities) == 0 {
		return nil
	}
	return &bgp.ImportActions{LocalPref: c.LocalPref, Communities: c.Communities, LargeCommunities: c.LargeCommunities}
}

// parsePrefixRange reads a prefix list entry: "prefix" or "prefix le N".
func parsePrefixRange(s string) (bgp.PrefixRange, error) {
	f := strings.Fields(s)
	bad := fmt.Errorf("%q: write a prefix (198.51.100.0/22) or a prefix and the longest length taken (198.51.100.0/22 le 24)", s)
	if len(f) != 1 && (len(f) != 3 || f[1] != "le") {
		return bgp.PrefixRange{}, bad
	}
	p, err := netip.ParsePrefix(f[0])
	if err != nil {
		return bgp.PrefixRange{}, bad
	}
	r := bgp.PrefixRange{Prefix: p.Masked()}
	if len(f) == 3 {
		n, err := strconv.Atoi(f[2])
		if err != nil || n < p.Bits() || n > p.Addr().BitLen() {
			return bgp.PrefixRange{}, fmt.Errorf("%q: the length after le must be from %d to %d", s, p.Bits(), p.Addr().BitLen())
		}
		r.MaxLength = n
	}
	return r, nil
}

// rules are the bgp package's rules (nil: not filtered), or what is wrong.
func (c ImportConfig) rules(ebgp bool, at string) (*bgp.ImportRules, []error) {
	var errs []error
	switch c.Filter {
	case "", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("%s.filter %q: use on, off, or leave it out (on for eBGP neighbours)", at, c.Filter))
	}
	r := &bgp.ImportRules{DefaultRoute: c.DefaultRoute, AnyLength: c.AnyLength, PrivateASNs: c.PrivateASNs, MaxPathLength: c.MaxPathLength, AnyFirstAS: c.AnyFirstAS,
		OriginASNs: c.OriginASNs, DenyASNs: c.DenyASNs, Blackholes: c.Blackholes}
	for _, e := range c.PrefixList {
		pr, err := parsePrefixRange(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.prefix_list %w", at, err))
			continue
		}
		r.Prefixes = append(r.Prefixes, pr)
	}
	for _, a := range c.Allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.allow %q: write a prefix such as 192.0.2.0/24", at, a))
			continue
		}
		r.Allow = append(r.Allow, p.Masked())
	}
	if c.MaxPathLength < 0 || c.MaxPathLength > 255 {
		errs = append(errs, fmt.Errorf("%s.max_path_length %d: use 1 to 255 (0: the default, 100)", at, c.MaxPathLength))
	}
	if c.Filter == "off" || c.Filter == "" && !ebgp {
		if len(c.PrefixList)+len(c.OriginASNs)+len(c.DenyASNs) > 0 {
			errs = append(errs, fmt.Errorf("%s: prefix_list, origin_asns and deny_asns are import rules, and the filter is off for this neighbour: set filter: on", at))
		}
		return nil, errs
	}
	return r, errs
}

// policyHash identifies the routing policy: bgp.originate, and each neighbour's
// import and export with whether it is eBGP, as a set with the neighbours'
// addresses left out, so that nodes whose upstreams differ only in address (every
// fleet) agree, and a node whose file overrides a rule does not.
func (c Config) policyHash() string {
	var parts []string
	for _, n := range c.BGP.Neighbors {
		b, _ := json.Marshal(struct {
			Import ImportConfig
			Export ExportConfig
			EBGP   bool
		}{n.Import, n.Export, n.ASN != c.BGP.ASN})
		parts = append(parts, string(b))
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	o, _ := json.Marshal(c.BGP.Originate)
	h := sha256.Sum256([]byte(string(o) + "\n" + strings.Join(parts, "\n")))
	return hex.EncodeToString(h[:6])
}

// prefixes are the originated prefixes for package announce, or what is wrong.
func (c OriginateConfig) prefixes() ([]announce.Prefix, []error) {
	var out []announce.Prefix
	var errs []error
	if c.HoldDown < 0 {
		errs = append(errs, fmt.Errorf("bgp.originate.hold_down %v: use a positive duration (default 30s)", c.HoldDown))
	}
	seen := map[netip.Prefix]bool{}
	for i, o := range c.Prefixes {
		at := fmt.Sprintf("bgp.originate.prefixes[%d]", i)
		p, err := netip.ParsePrefix(o.Prefix)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.prefix %q: write a prefix such as 192.0.2.0/24", at, o.Prefix))
			continue
		}
		if p != p.Masked() {
			errs = append(errs, fmt.Errorf("%s.prefix %s has host bits set: write %s", at, p, p.Masked()))
			continue
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("%s.prefix %s is listed twice", at, p))
		}
		seen[p] = true
		switch o.Reaches {
		case "route", "local":
		default:
			errs = append(errs, fmt.Errorf("%s.reaches %q: say what its traffic reaches: route (a route from inside the AS covers it) or local (this node)", at, o.Reaches))
		}
		out = append(out, announce.Prefix{Prefix: p, Local: o.Reaches == "local"})
	}
	return out, errs
}

// export is the bgp package's export (nil: nothing is sent), or what is wrong;
// whether the prefixes are originated is checked with the whole configuration.
func (c ExportConfig) export(at string) (*bgp.Export, []error) {
	var errs []error
	e := &bgp.Export{Communities: c.Communities, LargeCommunities: c.LargeCommunities, Prepend: c.Prepend, Blackholes: c.Blackholes}
	if c.MED != nil {
		e.MED, e.HasMED = *c.MED, true
	}
	for _, s := range c.Prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.prefixes %q: write a prefix such as 192.0.2.0/24", at, s))
			continue
		}
		e.Prefixes = append(e.Prefixes, p.Masked())
	}
	if len(c.Prefixes) == 0 && !c.Blackholes {
		return nil, errs
	}
	return e, errs
}

// FIBConfig sizes the FIB.
type FIBConfig struct {
	Backend       string        `yaml:"backend"`
	GroupsV4      uint32        `yaml:"groups_v4"`
	LinesV4       uint32        `yaml:"lines_v4"`
	BucketsV6     uint32        `yaml:"buckets_v6"`
	KernelSync    bool          `yaml:"kernel_sync"`
	KernelTable   uint32        `yaml:"kernel_table"`
	RetryInterval time.Duration `yaml:"retry_interval"`
	// HoldDown holds a flapping neighbour down: back up after its second failure
	// within HoldDownWindow, its next hops stay unused for HoldDown, twice that after
	// the third, up to the window (0: off).
	HoldDown       time.Duration `yaml:"hold_down"`
	HoldDownWindow time.Duration `yaml:"hold_down_window"`
}

func defaults() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:    host,
		XDPMode:     string(dataplane.ModeNative),
		BPFFS:       "/sys/fs/bpf",
		HTTPAddress: "127.0.0.1:9464",
		LogLevel:    "info",
		Pprof:       true,
		BGP:         BGPConfig{ListenPort: 179, BackupPaths: true, GracefulRestart: GracefulRestartConfig{RestartTime: 120 * time.Second}},
		FIB:         FIBConfig{Backend: string(dataplane.BackendCompiled), GroupsV4: 16384, LinesV4: 1 << 18, BucketsV6: dataplane.DefaultBucketsV6, RetryInterval: time.Second, KernelSync: true, KernelTable: 254, HoldDown: time.Second, HoldDownWindow: time.Minute},
		Cache:       CacheConfig{FlatPolicy: cache.FlatPolicy{Mode: string(cache.Auto), MinEntries: 1 << 10, MaxEntries: 1 << 16}, Interval: time.Second},
		Cluster: ClusterConfig{Name: "default", LeaseTTL: 5 * time.Second, Gossip: GossipConfig{Profile: cluster.ProfileTuned, Port: 7946},
			Mesh: MeshConfig{AlarmAfter: mesh.Quiet, ResendAfter: 2 * time.Minute}},
	}
}

// loadConfig reads the file (if any), then applies the flags that were set.
func loadConfig(args []string) (Config, error) {
	cfg := defaults()
	fs := flag.NewFlagSet("fibfleet-node", flag.ContinueOnError)
	path := fs.String("config", "", "YAML config file (see README: Configuration)")
	dir := fs.String("config-dir", "", "directory of config files as a Helm chart's ConfigMap holds them: fleet.yaml (the fleet's), overlaid field by field by node.<node-name>.yaml (this node's) when there")
	check := fs.Bool("check", false, "read and validate the configuration, print what was read, probe the kernel and the configured interfaces for what the dataplane needs (nothing loaded or attached), and exit: 0 all there, 2 invalid configuration, 3 a feature missing")
	uninstall := fs.Bool("uninstall", false, "detach the node's XDP program from every interface and remove its pinned maps, then exit: for a node removed for good (a stop or a restart leaves forwarding in place)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	probe := fs.Bool("probe", true, "with -check, probe the kernel and the interfaces too; -probe=false validates the configuration alone (off the router)")
	meshAddr := fs.String("mesh-address", "", "the node's IPv4 address on the mesh link (cluster.mesh.address)")
	name := fs.String("node-name", "", "node name (default: hostname); names the bpffs pin directory")
	ifaces := fs.String("interfaces", "", "comma-separated interfaces to attach XDP to")
	mode := fs.String("xdp-mode", "", "XDP attach mode: native or generic")
	httpAddr := fs.String("http-address", "", "address for /metrics and /healthz")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	asn := fs.Uint("bgp-asn", 0, "local AS number")
	rid := fs.String("bgp-router-id", "", "BGP router id (IPv4)")
	port := fs.Int("bgp-listen-port", 0, "BGP listen port (-1: do not listen)")
	grpc := fs.String("bgp-grpc-address", "", "GoBGP's gRPC API, for the gobgp CLI: unix:///path (only root can connect) or a loopback host:port; off by default (it can change routes, unauthenticated)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q: every setting is a -flag or in -config", fs.Args())
	}
	if *showVersion {
		// Nothing else is read: the version of a binary on a host without its
		// configuration.
		cfg.showVersion = true
		return cfg, nil
	}
	var files []string
	switch {
	case *dir != "" && *path != "":
		return cfg, errors.New("-config and -config-dir: give one of them")
	case *dir != "":
		node := cfg.NodeName
		if *name != "" {
			node = *name
		}
		fleet, own := filepath.Join(*dir, "fleet.yaml"), filepath.Join(*dir, "node."+node+".yaml")
		if !fileExists(fleet) && !fileExists(own) {
			return cfg, fmt.Errorf("-config-dir %s: neither fleet.yaml nor node.%s.yaml is there", *dir, node)
		}
		for _, f := range []string{fleet, own} {
			if fileExists(f) {
				files = append(files, f)
			}
		}
	case *path != "":
		files = []string{*path}
	}
	cfg.files, cfg.dir, cfg.checkOnly, cfg.checkProbe, cfg.uninstall = files, *dir, *check, *probe, *uninstall
	// Each file overlays the one before field by field: a node's file says only
	// what differs from the fleet's (a list, such as neighbors, is replaced whole).
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config %s: %w (field names are listed in the README's configuration reference)", f, err)
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "node-name":
			cfg.NodeName = *name
		case "interfaces":
			cfg.Interfaces = splitList(*ifaces)
		case "xdp-mode":
			cfg.XDPMode = *mode
		case "http-address":
			cfg.HTTPAddress = *httpAddr
		case "log-level":
			cfg.LogLevel = *logLevel
		case "bgp-asn":
			cfg.BGP.ASN = uint32(*asn)
		case "bgp-router-id":
			cfg.BGP.RouterID = *rid
		case "bgp-listen-port":
			cfg.BGP.ListenPort = int32(*port)
		case "bgp-grpc-address":
			cfg.BGP.GRPCAddress = *grpc
		case "mesh-address":
			cfg.Cluster.Mesh.Address = *meshAddr
		}
	})
	cfg.fillDefaults()
	if cfg.uninstall {
		// Only the node name and bpffs matter: a broken configuration must not
		// keep a removed node's dataplane forwarding.
		return cfg, nil
	}
	cfg.readSecrets()
	return cfg, cfg.validate()
}

// readSecrets reads the files the configuration names for secrets (the neighbours'
// TCP-MD5 passwords) into it; validate reports those it could not read.
func (c *Config) readSecrets() {
	for i := range c.BGP.Neighbors {
		n := &c.BGP.Neighbors[i]
		if n.PasswordFile == "" {
			continue
		}
		b, err := os.ReadFile(n.PasswordFile)
		n.password, n.passwordErr = strings.TrimRight(string(b), "\r\n"), err
	}
}

// fillDefaults sets the defaults that depend on other fields.
func (c *Config) fillDefaults() {
	if c.Cluster.Embedded.DataDir == "" {
		c.Cluster.Embedded.DataDir = filepath.Join("/var/lib/fibfleet", c.NodeName, "etcd")
	}
	if c.Cluster.Embedded.Listen == "" {
		c.Cluster.Embedded.Listen = "unix://" + filepath.Join(c.Cluster.Embedded.DataDir, "etcd.sock")
	}
	if c.Cluster.Gossip.Address == "" {
		host := "127.0.0.1"
		if c.Cluster.Mesh.Address != "" {
			host = c.Cluster.Mesh.Address
		}
		c.Cluster.Gossip.Address = net.JoinHostPort(host, strconv.Itoa(c.Cluster.Gossip.Port))
	}
	if c.HTTPAdvertise == "" {
		c.HTTPAdvertise = c.HTTPAddress
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// validate reports every bad field at once, each with what to do.
func (c Config) validate() error {
	var errs []error
	if err := cluster.CheckName(c.NodeName); err != nil {
		errs = append(errs, fmt.Errorf("node_name: %w (it names the node in its fleet and its bpffs pin directory)", err))
	}
	if len(c.Interfaces) == 0 {
		errs = append(errs, errors.New("interfaces: list at least one interface to forward on (-interfaces eth0,eth1)"))
	}
	switch dataplane.Mode(c.XDPMode) {
	case dataplane.ModeNative, dataplane.ModeGeneric:
	default:
		errs = append(errs, fmt.Errorf("xdp_mode %q: use native (default) or generic", c.XDPMode))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: use debug, info, warn or error", c.LogLevel))
	}
	if c.HTTPAddress == "" {
		errs = append(errs, errors.New("http_address: set host:port for /metrics and /healthz"))
	}
	if c.FIB.LinesV4 < 64 || c.FIB.LinesV4 > 1<<22 {
		errs = append(errs, fmt.Errorf("fib.lines_v4 %d: use 64 to 4194304 lines (64 bytes each; the full table needs about 50,000)", c.FIB.LinesV4))
	}
	if c.FIB.GroupsV4 < 1 || c.FIB.GroupsV4 > 1<<22 {
		errs = append(errs, fmt.Errorf("fib.groups_v4 %d: use 1 to 4194304 second-level groups (1 KiB each; one per /24 holding prefixes longer than /24)", c.FIB.GroupsV4))
	}
	if b := c.FIB.BucketsV6; b < 2 || b > 1<<26 || b&(b-1) != 0 {
		errs = append(errs, fmt.Errorf("fib.buckets_v6 %d: use a power of two from 2 to 67108864 (64 bytes each; the default 524288 holds about 1M keys, the 2026 table has 500,000)", b))
	}
	switch dataplane.Backend(c.FIB.Backend) {
	case dataplane.BackendCompiled:
	case dataplane.BackendKernel:
		if !c.FIB.KernelSync {
			errs = append(errs, errors.New("fib.backend kernel looks routes up in the kernel: set fib.kernel_sync: true so they are there"))
		}
	default:
		errs = append(errs, fmt.Errorf("fib.backend %q: use compiled (default, DIR-24-8 in XDP) or kernel (bpf_fib_lookup, the baseline)", c.FIB.Backend))
	}
	if c.FIB.KernelSync && (c.FIB.KernelTable == 0 || c.FIB.KernelTable == 255) {
		errs = append(errs, fmt.Errorf("fib.kernel_table %d: use a routing table id such as 254 (main); 0 and 255 (local) are not for routes", c.FIB.KernelTable))
	}
	if c.FIB.RetryInterval <= 0 {
		errs = append(errs, errors.New("fib.retry_interval: use a positive duration such as 1s"))
	}
	if c.FIB.HoldDown < 0 || c.FIB.HoldDown > 0 && c.FIB.HoldDownWindow < c.FIB.HoldDown {
		errs = append(errs, fmt.Errorf("fib.hold_down %v, fib.hold_down_window %v: use a hold down of 0 (off) or more, and a window at least as long (defaults 1s and 1m)", c.FIB.HoldDown, c.FIB.HoldDownWindow))
	}
	if _, err := c.bgpConfig(); err != nil {
		errs = append(errs, err)
	}
	if err := checkGRPCAddress(c.BGP.GRPCAddress); err != nil {
		errs = append(errs, err)
	}
	if err := c.Cache.Policy().Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Cluster.validate()...)
	errs = append(errs, c.RPKI.validate()...)
	if (c.HTTPTLS.Cert == "") != (c.HTTPTLS.Key == "") {
		errs = append(errs, errors.New("http_tls: give both cert and key, or neither"))
	}
	if c.HTTPTLS.ClientCA != "" && c.HTTPTLS.Cert == "" {
		errs = append(errs, errors.New("http_tls.client_ca needs http_tls.cert and key (client certificates are checked over TLS only)"))
	}
	if _, err := memory.ParseSetting(c.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("memory_limit: %w", err))
	}
	if c.Cache.Interval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("cache.interval %s: use at least 100ms (1s is the default)", c.Cache.Interval))
	}
	if len(errs) == 0 {
		return nil
	}
	lines := joinLines(errs)
	if !strings.Contains(lines.Error(), "\n") {
		// One error, one line: what a log line or kubectl's last state shows whole.
		return fmt.Errorf("invalid configuration: %w", lines)
	}
	return fmt.Errorf("invalid configuration:\n  %w", lines)
}

// checkGRPCAddress allows GoBGP's API (which changes routes and takes no
// credentials) only where nobody but this host's root reaches it: a unix socket (the
// node runs as root, and the socket is root's, 0755), or the loopback (the lab's
// namespaces have their own).
func checkGRPCAddress(a string) error {
	if a == "" || strings.HasPrefix(a, "unix:///") {
		return nil
	}
	host, _, err := net.SplitHostPort(a)
	ip, perr := netip.ParseAddr(host)
	if err != nil || perr != nil || !ip.IsLoopback() {
		return fmt.Errorf("bgp.grpc_address %q: GoBGP's API changes routes without credentials: use unix:///path (only root can connect) or a loopback address such as 127.0.0.1:50051, or leave it out (off)", a)
	}
	return nil
}

// joinLines is errs one line each, indented after the first (an error that is
// several lines, such as a joined one, gives each its own).
func joinLines(errs []error) error {
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, strings.Split(e.Error(), "\n")...)
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// bgpConfig converts the file's BGP section into the bgp package's config.
func (c Config) bgpConfig() (bgp.Config, error) {
	var errs []error
	out := bgp.Config{ASN: c.BGP.ASN, ListenAddresses: c.BGP.ListenAddresses, ListenPort: c.BGP.ListenPort, GRPCAddress: c.BGP.GRPCAddress,
		HoldUpstreams: len(c.RPKI.Validators) > 0 && c.RPKI.wait() > 0, Multipath: c.BGP.Multipath, Backups: c.BGP.BackupPaths,
		RestartTime: c.BGP.GracefulRestart.RestartTime, LongLivedTime: c.BGP.GracefulRestart.LongLivedTime}
	if c.BGP.RouterID != "" {
		rid, err := netip.ParseAddr(c.BGP.RouterID)
		if err != nil {
			errs = append(errs, fmt.Errorf("bgp.router_id %q is not an IP address", c.BGP.RouterID))
		}
		out.RouterID = rid
	}
	badAddress := false
	for i, n := range c.BGP.Neighbors {
		a, err := netip.ParseAddr(n.Address)
		if err != nil {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].address %q is not an IP address", i, n.Address))
			badAddress = true
			continue
		}
		var fams []bgp.Family
		for _, f := range n.Families {
			fams = append(fams, bgp.Family(f))
		}
		password := n.password
		switch {
		case n.passwordErr != nil:
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].password_file: %w", i, n.passwordErr))
		case n.PasswordFile != "" && password == "":
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].password_file %s is empty: write the password in it, or leave password_file out", i, n.PasswordFile))
		}
		rules, rerrs := n.Import.rules(n.ASN != c.BGP.ASN, fmt.Sprintf("bgp.neighbors[%d].import", i))
		errs = append(errs, rerrs...)
		export, eerrs := n.Export.export(fmt.Sprintf("bgp.neighbors[%d].export", i))
		errs = append(errs, eerrs...)
		if _, err := n.bfdPeer(a, fmt.Sprintf("bgp.neighbors[%d].bfd", i)); err != nil {
			errs = append(errs, err)
		}
		if n.Weight < 0 || n.Weight > 64 {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].weight %d: use 1 to 64 (default 1, equal shares)", i, n.Weight))
		}
		out.Neighbors = append(out.Neighbors, bgp.Neighbor{Address: a, ASN: n.ASN, Port: n.Port, MaxPrefixes: n.MaxPrefixes, ExpectedPrefixes: n.ExpectedPrefixes,
			Passive: n.Passive, MultihopTTL: n.MultihopTTL, Families: fams, Password: password, TTLSecurity: n.TTLSecurity, MaxPrefixRestart: n.MaxPrefixRestart,
			Import: rules, Export: export, ImportActions: n.Import.actions()})
	}
	origins, oerrs := c.BGP.Originate.prefixes()
	errs = append(errs, oerrs...)
	for _, o := range origins {
		out.Originated = append(out.Originated, o.Prefix)
	}
	// The speaker's own checks too (every error at once), unless a neighbour was left
	// out: its indices would then not be the file's.
	if !badAddress {
		if err := out.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// etcdConfig is the cluster package's view of the etcd section.
func (c ClusterConfig) etcdConfig() cluster.EtcdConfig {
	e := c.Etcd
	return cluster.EtcdConfig{Endpoints: e.Endpoints, CA: e.CA, Cert: e.Cert, Key: e.Key, Username: e.Username, PasswordFile: e.PasswordFile, Insecure: e.Insecure}
}

func (c ClusterConfig) validate() []error {
	var errs []error
	if err := cluster.CheckName(c.Name); err != nil {
		errs = append(errs, fmt.Errorf("cluster.name: %w", err))
	}
	if len(c.Etcd.Endpoints) > 0 {
		if err := c.etcdConfig().Validate(); err != nil {
			for _, e := range unjoin(err) {
				errs = append(errs, fmt.Errorf("cluster.etcd: %w", e))
			}
		}
	} else {
		if c.Etcd.CA != "" || c.Etcd.Cert != "" || c.Etcd.Username != "" {
			errs = append(errs, errors.New("cluster.etcd: TLS files or a username without endpoints: list the endpoints (without them the node runs its own etcd)"))
		}
		// The embedded etcd serves no TLS: off this host it is plain HTTP.
		if l := c.Embedded.Listen; !c.Etcd.Insecure && cluster.PlainHTTPOffHost(l) {
			errs = append(errs, fmt.Errorf("cluster.embedded.listen %q is plain HTTP off this host: %s; listen on unix:///path or a loopback address (http://127.0.0.1:2379), or say cluster.etcd.insecure: true",
				l, cluster.PlainHTTPRisk))
		}
	}
	if c.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("cluster.lease_ttl %s: use at least 1s (5s is the default)", c.LeaseTTL))
	}
	if _, _, err := net.SplitHostPort(c.Gossip.Address); err != nil {
		errs = append(errs, fmt.Errorf("cluster.gossip.address %q: write host:port", c.Gossip.Address))
	}
	if c.Gossip.Port < 1 || c.Gossip.Port > 65535 {
		errs = append(errs, fmt.Errorf("cluster.gossip.port %d: use 1 to 65535 (7946 is memberlist's usual)", c.Gossip.Port))
	}
	if c.Gossip.Advertise != "" {
		if _, _, err := net.SplitHostPort(c.Gossip.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("cluster.gossip.advertise %q: write host:port", c.Gossip.Advertise))
		}
	}
	for _, j := range c.Gossip.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			errs = append(errs, fmt.Errorf("cluster.gossip.join %q: write host:port", j))
		}
	}
	switch c.Gossip.Profile {
	case cluster.ProfileTuned, cluster.ProfileLAN:
	default:
		errs = append(errs, fmt.Errorf("cluster.gossip.profile %q: use %s (about 1.5 s to notice a crash) or %s (about 6 s)", c.Gossip.Profile, cluster.ProfileTuned, cluster.ProfileLAN))
	}
	if c.Mesh.Address != "" {
		if a, err := netip.ParseAddr(c.Mesh.Address); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("cluster.mesh.address %q: give the node's IPv4 address on the link between the fleet's nodes", c.Mesh.Address))
		}
	}
	if c.Mesh.Address6 != "" {
		if a, err := netip.ParseAddr(c.Mesh.Address6); err != nil || !a.Is6() {
			errs = append(errs, fmt.Errorf("cluster.mesh.address6 %q: give the node's IPv6 address on the link between the fleet's nodes", c.Mesh.Address6))
		}
	}
	for _, p := range c.Mesh.Announce {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("cluster.mesh.announce %q: write a prefix such as 192.0.2.0/24", p))
		}
	}
	if len(c.Mesh.Announce) > 0 && c.Mesh.Address == "" {
		errs = append(errs, errors.New("cluster.mesh.announce needs cluster.mesh.address (the next hop of what is announced)"))
	}
	if c.Mesh.AlarmAfter < time.Second {
		errs = append(errs, fmt.Errorf("cluster.mesh.alarm_after %v: use 1s or more (default 30s)", c.Mesh.AlarmAfter))
	}
	if c.Mesh.ResendAfter < 0 {
		errs = append(errs, fmt.Errorf("cluster.mesh.resend_after %v: use 0 (resend as soon as the alarm is up) or more (default 2m)", c.Mesh.ResendAfter))
	}
	return errs
}
