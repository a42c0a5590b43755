// Package nodeapi holds the JSON documents of the node's HTTP API: the node serves
// them, and ctl, the lab and the tests read them, so all agree on one definition.
package nodeapi

import (
	"net/netip"
	"time"

	"github.com/fibfleet/fibfleet/announce"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dcache"
)

// Status is GET /api/v1/status: one node at a glance, what `ctl status` and `ctl top`
// show.
type Status struct {
	Node    string    `json:"node"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	// Sessions are the BGP sessions (upstreams and mesh).
	Sessions []Session `json:"sessions"`
	// Routes and Digests per family: IPv4, IPv6.
	Routes  [2]int    `json:"routes"`
	Digests [2]string `json:"digests"`
	// Epoch is the flush epoch the dataplane runs at.
	Epoch uint32 `json:"epoch"`
	// EtcdConnected says whether the node's agent reaches etcd; PolicySource where
	// the cache policy in force comes from (node, fleet, config).
	EtcdConnected bool   `json:"etcd_connected"`
	PolicySource  string `json:"policy_source"`
	// Members is the fleet as this node's gossip sees it.
	Members []cluster.Member `json:"members"`
	// Cache is per family (ipv4, ipv6).
	Cache []CacheFamily `json:"cache"`
	// Packets are the XDP program's totals; PPS and ForwardedPPS are the rates over
	// the last second.
	Packets      Packets `json:"packets"`
	PPS          float64 `json:"pps"`
	ForwardedPPS float64 `json:"forwarded_pps"`
	// Interfaces are the ports the program runs on, as their drivers see them.
	Interfaces []Interface `json:"interfaces"`
	// Config is where the running configuration comes from and how it was last
	// reloaded.
	Config Config `json:"config"`
	// Memory is what the node holds: its resident memory, the Go heap, the BGP paths.
	Memory Memory `json:"memory"`
}

// Memory is a node's memory at a glance (/metrics has the detail:
// process_resident_memory_bytes, go_memstats_*, fibfleet_bgp_received_prefixes).
type Memory struct {
	// RSS is the process's resident memory; the pinned BPF maps are the kernel's
	// and not in it.
	RSS uint64 `json:"rss_bytes"`
	// GoHeap is the Go heap's live and not yet swept objects; GoHeapGoal the size at
	// which the next collection ends (RSS follows it, not GoHeap).
	GoHeap     uint64 `json:"go_heap_bytes"`
	GoHeapGoal uint64 `json:"go_heap_goal_bytes"`
	// Limit is Go's soft memory limit (memory_limit), LimitSource where it comes
	// from: config, formula (what the node holds) or cgroup (85% of its limit);
	// absent when off.
	Limit       uint64 `json:"limit_bytes,omitempty"`
	LimitSource string `json:"limit_source,omitempty"`
	// BGPPaths are the paths GoBGP holds from the upstream neighbours, each
	// neighbour's Adj-RIB-In summed (both families).
	BGPPaths uint64 `json:"bgp_paths"`
}

// Config is the node's configuration: the files it was read from, each overlaying
// the one before, and the last reload (SIGHUP, or a change under -config-dir).
type Config struct {
	Files []string `json:"files"`
	// Reloads counts reloads by result: applied, unchanged, refused, failed.
	Reloads map[string]uint64 `json:"reloads"`
	// LastReload is when the last one happened (zero: none yet), its result and,
	// refused or failed, why.
	LastReload       time.Time `json:"last_reload,omitzero"`
	LastReloadResult string    `json:"last_reload_result,omitempty"`
	LastReloadError  string    `json:"last_reload_error,omitempty"`
	// PolicyHash identifies the routing policy in force (the fleet's prefixes and
	// every neighbour's import and export rules, neighbours' addresses left out):
	// equal on nodes that run the same policy.
	PolicyHash string `json:"policy_hash"`
	// Drained says the node announces its routes with GRACEFUL_SHUTDOWN.
	Drained bool `json:"drained"`
}

// Announce is GET /api/v1/announce: the fleet's prefixes as this node decides them,
// and what each neighbour is sent of them (what the node tracks as sent, not a walk
// of GoBGP's Adj-RIB-Out).
type Announce struct {
	Prefixes  []announce.State  `json:"prefixes"`
	Neighbors []NeighborAdverts `json:"neighbors"`
}

// NeighborAdverts is what one neighbour is sent.
type NeighborAdverts struct {
	Neighbor   netip.Addr      `json:"neighbor"`
	ASN        uint32          `json:"asn"`
	State      string          `json:"state"`
	Advertised []Advertisement `json:"advertised"`
}

// Neighbor is one BGP session, what it sent and what it is sent (GET
// /api/v1/neighbors, `ctl neighbors`).
type Neighbor struct {
	Neighbor netip.Addr `json:"neighbor"`
	ASN      uint32     `json:"asn"`
	State    string     `json:"state"`
	Mesh     bool       `json:"mesh"`
	// Established is when the session came up (zero while down).
	Established time.Time `json:"established,omitzero"`
	// Received are the prefixes it holds announced now, before the import rules
	// (IPv4, IPv6; mesh peers are not counted); Accepted those its rules take.
	Received [2]uint64 `json:"received"`
	Accepted uint64    `json:"accepted"`
	// Refused counts the routes its import rules refused, by reason, since the node
	// started.
	Refused map[string]uint64 `json:"refused,omitempty"`
	// Advertised counts the fleet's prefixes it is sent now.
	Advertised int `json:"advertised"`
}

// Routes is GET /api/v1/routes?q=<address|prefix>: every path the node holds
// towards a destination (an address's longest match, or a prefix exactly), which
// is best, and whether the FIB has it; and the paths an upstream sent that its
// import rules refused, with why.
type Routes struct {
	Query string      `json:"query"`
	Paths []RoutePath `json:"paths"`
}

// RoutePath is one path of Routes.
type RoutePath struct {
	Prefix netip.Prefix `json:"prefix"`
	// Neighbor sent it (absent: the node's own).
	Neighbor netip.Addr `json:"neighbor,omitzero"`
	Best     bool       `json:"best"`
	// Installed: the FIB holds this prefix with this path's next hop (for a
	// blackhole, as a blackhole).
	Installed bool `json:"installed"`
	// Blackhole: the path carries BLACKHOLE (RFC 7999).
	Blackhole        bool       `json:"blackhole,omitempty"`
	Refused          string     `json:"refused,omitempty"`
	Nexthop          netip.Addr `json:"nexthop,omitzero"`
	ASPath           []uint32   `json:"as_path"`
	Communities      []string   `json:"communities,omitempty"`
	LargeCommunities []string   `json:"large_communities,omitempty"`
	LocalPref        uint32     `json:"local_pref"`
	MED              *uint32    `json:"med,omitempty"`
	// RPKI is the route's origin validation state (valid, invalid, not_found),
	// when the node validates origins.
	RPKI string `json:"rpki,omitempty"`
}

// Advertisement is one prefix as a neighbour receives it.
type Advertisement struct {
	Prefix           netip.Prefix `json:"prefix"`
	ASPath           []uint32     `json:"as_path"`
	Communities      []string     `json:"communities,omitempty"`
	LargeCommunities []string     `json:"large_communities,omitempty"`
	MED              *uint32      `json:"med,omitempty"`
}

// Interface is one port of the XDP program.
type Interface struct {
	Name string `json:"name"`
	// Mode is how the program is attached: native or generic.
	Mode   string `json:"mode"`
	Driver string `json:"driver"`
	// Attached is false once the program's link was detached from outside
	// (`bpftool link detach id XDPLink`) or the interface went: the node then
	// forwards nothing there, and stops announcing the fleet's prefixes after
	// their hold-down.
	Attached bool   `json:"attached"`
	XDPLink  uint32 `json:"xdp_link"`
	// XDPFeatures are what the driver can do with XDP now, as the kernel reports
	// them (Linux 6.3 and later; empty before): a port lacking ndo-xmit drops the
	// frames redirected to it.
	XDPFeatures string `json:"xdp_features,omitempty"`
	// XDPErrors are the driver's own counters of XDP frames it failed to transmit
	// or redirect, totals by counter name: frames counted as forwarded that never
	// reached the wire.
	XDPErrors map[string]uint64 `json:"xdp_errors,omitempty"`
	// TxSent and TxDropped are the frames the program redirected to this port that
	// its driver took, and that it did not (the kernel freed them): every driver's,
	// from the kernel's xdp_devmap_xmit tracepoint. TxCounted is false when the node
	// could not attach that counter.
	TxSent    uint64 `json:"tx_sent"`
	TxDropped uint64 `json:"tx_dropped"`
	TxCounted bool   `json:"tx_counted"`
}

// TxDropped sums the frames every port's driver did not take of those the program
// forwarded to it.
func (s Status) TxDropped() uint64 {
	var t uint64
	for _, i := range s.Interfaces {
		t += i.TxDropped
	}
	return t
}

// Session is one BGP session.
type Session struct {
	Neighbor netip.Addr `json:"neighbor"`
	ASN      uint32     `json:"asn"`
	State    string     `json:"state"`
	Mesh     bool       `json:"mesh"`
	// Established is when the session came up (zero while it is down): a reload
	// that keeps a session keeps this time.
	Established time.Time `json:"established,omitzero"`
}

// Packets are the XDP program's frame totals: forwarded (both families), passed to
// the kernel (every reason), dropped.
type Packets struct {
	Forwarded uint64 `json:"forwarded"`
	Passed    uint64 `json:"passed"`
	Dropped   uint64 `json:"dropped"`
}

// CacheFamily is one family's destination cache.
type CacheFamily struct {
	Family  string `json:"family"`
	Mode    string `json:"mode"`
	Entries int    `json:"entries"`
	// HitRate is the last interval's.
	HitRate float64 `json:"hit_rate"`
	// Totals since the program loaded.
	Lookups   uint64 `json:"lookups"`
	Hits      uint64 `json:"hits"`
	Misses    uint64 `json:"misses"`
	Stale     uint64 `json:"stale"`
	Refused   uint64 `json:"refused"`
	Evictions uint64 `json:"evictions"`
}

// FIB is GET /api/v1/fib: the FIB's state.
type FIB struct {
	Routes             int    `json:"routes"`
	Digest             string `json:"digest"`
	Nexthops           int    `json:"nexthops"`
	UnresolvedNexthops int    `json:"unresolved_nexthops"`
	// Refused routes the dataplane could not hold; KernelSlots are compiled as "pass
	// to the kernel" for that reason.
	Refused     uint64 `json:"refused"`
	KernelSlots int    `json:"kernel_slots"`
	Groups      int    `json:"groups"`
	GroupsUsed  int    `json:"groups_used"`
}

// Cache is GET /api/v1/cache: the destination cache per family, with the
// controller's verdicts.
type Cache struct {
	// Epoch is the flush epoch the dataplane runs at.
	Epoch    uint32        `json:"epoch"`
	Families []CacheReport `json:"families"`
}

// CacheReport is one family's destination cache, in full.
type CacheReport struct {
	Family  string `json:"family"`
	Mode    string `json:"mode"`
	Entries int    `json:"entries"`
	// BytesPerCPU is the table's memory on each CPU.
	BytesPerCPU int `json:"bytes_per_cpu"`
	// The last interval: packets, hit rate, ghost hits, working set.
	Lookups       uint64  `json:"lookups"`
	HitRate       float64 `json:"hit_rate"`
	GhostHits     uint64  `json:"ghost_hits"`
	WorkingSet    float64 `json:"working_set"`
	HitWorkingSet float64 `json:"hit_working_set"`
	// The controller's last verdict (auto), and the cost model it used.
	Regime     string      `json:"regime,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Costs      cache.Costs `json:"costs_ns"`
	Calibrated bool        `json:"calibrated"`
	// Totals since the program loaded.
	Totals dcache.Stats `json:"totals"`
}

// Lookup is GET /api/v1/lookup?addr=: the route a destination matches and whether
// the destination cache holds it.
type Lookup struct {
	Addr    netip.Addr   `json:"addr"`
	Found   bool         `json:"found"`
	Prefix  netip.Prefix `json:"prefix,omitzero"`
	Nexthop netip.Addr   `json:"nexthop,omitzero"`
	// Blackhole: the route's traffic is dropped (RFC 7999; no next hop).
	Blackhole bool `json:"blackhole,omitempty"`
	// CachedCPUs is on how many CPUs the cache holds a fresh entry for it;
	// StaleCPUs, an entry of an old epoch or route generation.
	CachedCPUs int `json:"cached_cpus"`
	StaleCPUs  int `json:"stale_cpus"`
	// Group is the route's next-hop group; Flow, when the lookup named a flow, the
	// member the node's flow hash gives it.
	Group *Group      `json:"group,omitempty"`
	Flow  *FlowChoice `json:"flow,omitempty"`
}

// Group is a route's next-hop group: its state (active, degraded, backup, down) and
// members.
type Group struct {
	ID      uint32        `json:"id"`
	State   string        `json:"state"`
	Members []GroupMember `json:"members"`
}

// GroupMember is one next hop of a group: a backup carries traffic only when no
// active member is usable; Buckets are how many of the group's 64 it holds now.
type GroupMember struct {
	Nexthop netip.Addr `json:"nexthop"`
	Backup  bool       `json:"backup,omitempty"`
	Down    bool       `json:"down,omitempty"`
	Buckets int        `json:"buckets"`
}

// FlowChoice is the member a flow takes.
type FlowChoice struct {
	Hash uint32 `json:"hash"`
	// Nexthop is the member's next hop; invalid when the group has no usable one
	// (the traffic passes to the kernel).
	Nexthop netip.Addr `json:"nexthop,omitzero"`
}

// Fleet is GET /api/v1/fleet: the node's view of its fleet.
type Fleet struct {
	Node    string `json:"node"`
	Cluster string `json:"cluster"`
	Etcd    struct {
		Endpoints []string `json:"endpoints"`
		Embedded  bool     `json:"embedded"`
		Connected bool     `json:"connected"`
		Error     string   `json:"error,omitempty"`
	} `json:"etcd"`
	Agent      cluster.AgentStatus        `json:"agent"`
	Registered bool                       `json:"registered"`
	Nodes      []cluster.NodeInfo         `json:"nodes"`
	Members    []cluster.Member           `json:"members"`
	Applied    map[string]cluster.Applied `json:"applied"`
	Mesh       []Session                  `json:"mesh"`
	MeshLog    []MeshChange               `json:"mesh_changes"`
	Digests    DigestAgreement            `json:"digests"`
}

// MeshChange is one mesh peer added or removed, and why.
type MeshChange struct {
	At     time.Time `json:"at"`
	Node   string    `json:"node"`
	Peer   string    `json:"peer"`
	Action string    `json:"action"` // add, remove
	Reason string    `json:"reason"`
}

// DigestAgreement compares the FIB digests the registered nodes reported.
type DigestAgreement struct {
	Agree bool `json:"agree"`
	// Majority is the digest pair (IPv4/IPv6) most nodes report; Odd are the nodes
	// that report another (still loading, or a table that differs).
	Majority string   `json:"majority"`
	Odd      []string `json:"odd,omitempty"`
}

// Member is a member's state in the view ("" when unknown).
func (f Fleet) Member(name string) cluster.MemberState {
	for _, m := range f.Members {
		if m.Name == name {
			return m.State
		}
	}
	return ""
}

// Established counts established mesh sessions.
func (f Fleet) Established() int {
	n := 0
	for _, p := range f.Mesh {
		if p.State == "established" {
			n++
		}
	}
	return n
}

// Peered says whether the node has a mesh peer at address a.
func (f Fleet) Peered(a string) bool {
	for _, p := range f.Mesh {
		if p.Neighbor.String() == a {
			return true
		}
	}
	return false
}
