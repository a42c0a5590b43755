// Package bgp embeds GoBGP v4 behind a small interface: it starts a speaker with
// upstream neighbours from config and streams each prefix's forwarding changes as
// plain values (prefix -> next hop, the equal paths' next hops, a backup next hop),
// so fib never sees a GoBGP type.
//
// They come from GoBGP's WatchEvent, never from walking the table: a walk runs
// inside GoBGP's server loop and slowed a full-table load 5x. GoBGP queues watch
// events in its own goroutine, up to watchQueueLimit; past it the peers' handlers
// wait (100 ms at most each time), so a consumer of Changes that falls behind slows
// the load down rather than filling the heap with queued paths.
//
// Policy: import checks every route an upstream announces against its ImportRules
// (importfilter.go; a neighbour may also carry a max-prefix limit); export is
// deny-by-default: an upstream gets only the fleet's prefixes its Export lists
// (export.go), because a router that re-announces one upstream's table to another
// leaks routes; the fleet's mesh gets the rest (mesh.go).
package bgp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

// eventBuffer is how many events (a selected path's change, mostly) Events holds for
// its reader: what it finds waiting it applies in one FIB batch.
const eventBuffer = 1024

// watchQueueLimit is how many events (an UPDATE's paths, or its forwarding
// changes) may wait for the stream's callbacks before GoBGP's handlers wait for
// them: some ten thousand paths, a few megabytes.
const watchQueueLimit = 4096

// Neighbor is one configured BGP peer.
type Neighbor struct {
	Address netip.Addr
	ASN     uint32
	// Port is the peer's TCP port; 0 means 179.
	Port uint16
	// MaxPrefixes tears the session down when the peer sends more; 0 means no limit.
	MaxPrefixes uint32
	// Passive waits for the peer to connect instead of connecting to it.
	Passive bool
	// MultihopTTL > 0 allows an eBGP peer that is not directly connected.
	MultihopTTL uint8
	// ExpectedPrefixes is the size of the peer's table (1000000 for a full table), for
	// the load ETA until a first dump completes; then the last dump's size is used.
	ExpectedPrefixes uint32
	// Families are the address families of the session (MP-BGP); empty means IPv4
	// unicast only.
	Families []Family
	// Password signs the session's TCP segments (TCP-MD5, RFC 2385); empty: none.
	// It is never logged, nor returned by any API.
	Password string
	// TTLSecurity is GTSM (RFC 5082): the peer must be directly connected and send
	// with TTL 255, and packets that arrive with less are dropped.
	TTLSecurity bool
	// MaxPrefixRestart, when positive, brings a session shut down for exceeding
	// MaxPrefixes back after that long; zero: it stays down until configured again.
	MaxPrefixRestart time.Duration
	// Import, when set, are the rules its announcements must pass (importfilter.go);
	// nil: every route is taken.
	Import *ImportRules
	// Export, when set, is what it is sent of the prefixes this node originates
	// (export.go); nil: nothing.
	Export *Export
	// ImportActions, when set, change what its accepted routes carry (local
	// preference, communities; importpolicy.go).
	ImportActions *ImportActions
}

// Family is an address family a session carries.
type Family string

// The families fibfleet takes routes of.
const (
	IPv4Unicast Family = "ipv4-unicast"
	IPv6Unicast Family = "ipv6-unicast"
)

var apiFamilies = map[Family]*api.Family{
	IPv4Unicast: {Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST},
	IPv6Unicast: {Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST},
}

// Config configures the embedded speaker.
type Config struct {
	ASN      uint32
	RouterID netip.Addr
	// ListenAddresses are the addresses to accept sessions on; empty means all.
	ListenAddresses []string
	// ListenPort is the BGP port; 0 means 179, -1 means do not listen.
	ListenPort int32
	// GRPCAddress serves GoBGP's own API (for the `gobgp` CLI); empty disables it.
	GRPCAddress string
	Neighbors   []Neighbor
	// MeshAddress is the address this node's iBGP mesh sessions start from (its
	// address on the link between the fleet's nodes); invalid: no mesh.
	MeshAddress netip.Addr
	// Originated are the prefixes the node may announce upstream (Announce): the
	// only ones an Export may list, and refused from upstreams (SetOriginated).
	Originated []netip.Prefix
	// HoldUpstreams configures the neighbours with import rules held down (their
	// sessions do not start) until ReleaseUpstreams: the node waits for its RPKI
	// validators' first sets, so that a full table is validated as it arrives
	// rather than checked again after it. The mesh and neighbours without rules
	// start at once.
	HoldUpstreams bool
	// Multipath shares each route over the next hops of its equal paths (GoBGP's
	// multipath: paths equal up to the router id, whatever their neighbour AS;
	// eBGP and iBGP paths are never equal). GoBGP keeps it in a package variable:
	// it is set for every speaker in the process.
	Multipath bool
	// Backups give each route a backup next hop: that of its best path through
	// another next hop (BGP PIC edge).
	Backups bool
	// RestartTime is the graceful restart time the node asks of its peers (RFC
	// 4724): how long they keep its routes, and forward to it, while it restarts.
	// 0 means 120 s.
	RestartTime time.Duration
	// Restarting starts the speaker as a restarting speaker: its OPENs set the
	// restart state and forwarding-preserved bits (the dataplane kept forwarding
	// from the last process's FIB), and it sends its peers nothing until every
	// neighbour has sent End-of-RIB or RestartTime passes (selection deferral).
	// Only when a dataplane was adopted: the bit promises the forwarding went on.
	Restarting bool
	// LongLivedTime, when above 0, offers long-lived graceful restart (RFC 9494):
	// after the restart time, peers that support it keep the routes as a last
	// resort (LLGR_STALE) this much longer.
	LongLivedTime time.Duration
	Logger        *slog.Logger
}

// Change is one change of a prefix's forwarding paths (IPv4 or IPv6): its best path,
// with the next hops of its equal paths and its backup.
type Change struct {
	Prefix  netip.Prefix
	Nexthop netip.Addr // zero when Withdraw
	// LinkLocal is an IPv6 route's link-local next hop, when the peer sent one beside
	// the global one (RFC 2545): the address to resolve on a shared link.
	LinkLocal netip.Addr
	Withdraw  bool
	// Peer is the neighbour the best path came from (a link-local next hop is on the
	// link towards it).
	Peer netip.Addr
	// Internal says the path's AS path is empty: the route was originated inside
	// this AS (by an iBGP neighbour such as the operator's core, or a fleet node),
	// not learned from another network. Never set for a blackhole.
	Internal bool
	// Blackhole says the path carries BLACKHOLE (RFC 7999): its traffic is to be
	// dropped, whatever its next hop. The import rules let it through only from a
	// neighbour allowed to send one (or this node's own, AddBlackhole).
	Blackhole bool
	// Multipath are the next hops of the paths equal to the best (Config.Multipath:
	// ECMP), and Backup the next hop of the best path through another next hop
	// (Config.Backups: BGP PIC edge); neither for a withdrawal or a blackhole.
	Multipath []Hop
	Backup    Hop
}

// Hop is a next hop and the neighbour whose path gave it (a link-local next hop is
// on the link towards that neighbour).
type Hop struct {
	Nexthop, Peer netip.Addr
}

// Event is one item of the stream from Events, in the order GoBGP emitted it.
type Event struct {
	Changes []Change
	// EndOfRIB, when valid, is a neighbour whose initial IPv4 dump GoBGP has processed
	// (its End-of-RIB marker arrived): every change the dump caused precedes this event.
	EndOfRIB netip.Addr
	// SessionDown, when valid, is a neighbour whose established session ended: it
	// comes before the withdrawals of the neighbour's routes (GoBGP patch 8), so the
	// FIB can move traffic to backup next hops first. SessionUp is one whose session
	// became established.
	SessionDown, SessionUp netip.Addr
	// At is when GoBGP emitted the event.
	At time.Time
	// list holds Changes for Release to hand back; nil when not to be reused.
	list *[]Change
}

// Load is a neighbour's progress through its initial dump in the current session.
type Load struct {
	Neighbor netip.Addr
	// Established is when the session came up; zero while it is down.
	Established time.Time
	// Received counts IPv4 and IPv6 unicast prefixes announced in this session, as
	// received.
	Received uint64
	// EndOfRIB is when the peer's End-of-RIB arrived; zero while the dump goes on.
	EndOfRIB time.Time
	// Expected is the dump's size: the last completed dump's, else the configured
	// ExpectedPrefixes; 0 when unknown.
	Expected uint64
	// Prefixes counts an upstream's prefixes now (announced and not withdrawn,
	// before import policy) per family: IPv4, IPv6 (zero for a mesh peer: what the
	// fleet carries is the upstreams'; Holdings counts the mesh's too).
	Prefixes [2]uint64
	// early counts the announcements of a session whose start the peer events have
	// not told yet: GoBGP tells UPDATEs as they arrive (its AdjRibInHook), a session's
	// start through its watcher, a moment later.
	early uint64
}

// PeerStatus is a neighbour's session state.
type PeerStatus struct {
	Address netip.Addr
	ASN     uint32
	State   string // idle, connect, active, opensent, openconfirm, established
	// Mesh is set for the fleet's own nodes (iBGP), unset for upstreams.
	Mesh bool
	// Established is when the session came up; zero while it is down.
	Established time.Time
}

// Speaker is a running embedded BGP speaker.
type Speaker struct {
	srv    *server.BgpServer
	log    *slog.Logger
	events chan Event
	// changeLists are the events' change lists their reader handed back
	// (Release), by class (changeListSizes), for onForwarding to fill again.
	changeLists [len(changeListSizes)]sync.Pool
	done        chan struct{} // closed by Stop
	cancel      context.CancelFunc
	stop        sync.Once

	restartTime time.Duration
	longLived   time.Duration
	restarting  atomic.Bool
	grpc        bool // GoBGP's gRPC API is served

	// peers follows session states from GoBGP's peer events: asking GoBGP (ListPeer)
	// would walk the whole table to count prefixes, inside its server loop.
	mu    sync.Mutex
	peers map[netip.Addr]*PeerStatus
	adjIn map[netip.Addr]*adjIn
	loads map[netip.Addr]*Load
	// eors holds, per neighbour, its session's families and whether each one's
	// End-of-RIB arrived: the dump is complete when all have.
	eors map[netip.Addr]map[bgp.Family]bool
	// asn and meshLocal configure mesh peers; mesh holds them, originated the
	// prefixes this node announces to them.
	asn        uint32
	meshLocal  netip.Addr
	mesh       map[netip.Addr]bool
	originated map[netip.Prefix]netip.Addr
	// importFilter checks what upstreams announce (their ImportRules); meshScope
	// says which peers the mesh is, for GoBGP's export filter (exportable).
	importFilter *importFilter
	meshScope    *meshScope
	// announced are the prefixes Announce holds, exports each neighbour's Export,
	// drained SetDrained's state (export.go). exportMu orders replacements of the
	// export policy, exportGen names the one in force.
	announced map[netip.Prefix]bool
	// blackholes are the fleet's blackholes AddBlackhole holds (blackhole.go).
	blackholes map[netip.Prefix]bool
	exports    map[netip.Addr]*Export
	drained    bool
	exportMu   sync.Mutex
	exportGen  int
	// importActions are each neighbour's ImportActions, importGen the generation of
	// the import policy in force and importHad whether it exists (importpolicy.go).
	importActions map[netip.Addr]*ImportActions
	importGen     int
	importHad     bool
	// invalidPref, when not 0, is the local preference of RPKI-invalid routes
	// (InvalidLower).
	invalidPref uint32
	// holding says upstreams with import rules are added held down, held which
	// are (Config.HoldUpstreams, ReleaseUpstreams).
	holding bool
	held    map[netip.Addr]bool
	// backups says Changes carry backup next hops (Config.Backups).
	backups bool
}

// adjIn follows a neighbour's prefixes and enforces its max-prefix limit. GoBGP tells
// how many paths of each family the neighbour holds after each UPDATE (its
// AdjRibInHook, third_party patch 19; its own limit applies per family, and resets
// the session rather than shutting it down), so nothing here keeps a prefix.
type adjIn struct {
	max int // 0: no limit
	// restart brings the session back that long after a max-prefix shutdown (0:
	// never).
	restart time.Duration
	// v4 and v6 are the IPv4 and IPv6 unicast paths the neighbour holds (before
	// import policy).
	v4, v6  int
	tripped bool
	// expected is the configured expected_prefixes (0: none): the memory limit
	// counts the neighbour at least at it (Holdings), whatever its last dump held.
	expected int
}

func newAdjIn(max, expected int) *adjIn { return &adjIn{max: max, expected: expected} }

// Validate reports every bad field of a config at once, saying what to do.
func (c Config) Validate() error {
	var errs []error
	if c.ASN == 0 {
		errs = append(errs, errors.New("bgp.asn must be set (a private ASN such as 65000 for a lab)"))
	}
	if c.MeshAddress.IsValid() && !c.MeshAddress.Is4() {
		errs = append(errs, fmt.Errorf("bgp mesh address %s: use the node's IPv4 address on the mesh link (IPv6 routes travel over it too)", c.MeshAddress))
	}
	if !c.RouterID.Is4() {
		errs = append(errs, errors.New("bgp.router_id must be an IPv4 address (usually the node's loopback)"))
	}
	if c.ListenPort < -1 || c.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("bgp.listen_port %d: use 1-65535, 0 for 179, or -1 to not listen", c.ListenPort))
	}
	if c.RestartTime < 0 || c.RestartTime > 4095*time.Second || c.RestartTime%time.Second != 0 {
		errs = append(errs, fmt.Errorf("bgp.graceful_restart.restart_time %v: use whole seconds from 1s to 4095s (the capability's 12 bits; default 120s)", c.RestartTime))
	}
	if c.LongLivedTime < 0 || c.LongLivedTime >= 1<<24*time.Second || c.LongLivedTime%time.Second != 0 {
		errs = append(errs, fmt.Errorf("bgp.graceful_restart.long_lived_time %v: use whole seconds below 2^24 s (RFC 9494), or 0 for off", c.LongLivedTime))
	}
	seen := map[netip.Addr]bool{}
	for i, n := range c.Neighbors {
		if !n.Address.IsValid() {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].address must be an IP address", i))
		} else if seen[n.Address] {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d]: %s is listed twice", i, n.Address))
		}
		seen[n.Address] = true
		if n.ASN == 0 {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].asn must be set", i))
		}
		if n.TTLSecurity && n.MultihopTTL > 0 {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d]: ttl_security (GTSM) is for a directly connected peer: drop multihop_ttl, or ttl_security", i))
		}
		if n.MaxPrefixRestart < 0 || n.MaxPrefixRestart > 0 && n.MaxPrefixes == 0 {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d].max_prefix_restart %v: give a positive duration with max_prefixes set, or leave it out (the session stays down)", i, n.MaxPrefixRestart))
		}
		if len(n.Password) > 80 {
			errs = append(errs, fmt.Errorf("bgp.neighbors[%d]: the TCP-MD5 password is %d bytes; Linux takes at most 80", i, len(n.Password)))
		}
		for _, f := range n.Families {
			if apiFamilies[f] == nil {
				errs = append(errs, fmt.Errorf("bgp.neighbors[%d].families: %q: use %s or %s", i, f, IPv4Unicast, IPv6Unicast))
			}
		}
		if n.Export != nil {
			if err := n.Export.Validate(c.Originated); err != nil {
				errs = append(errs, fmt.Errorf("bgp.neighbors[%d]: %w", i, err))
			}
		}
		if n.ImportActions != nil {
			if err := n.ImportActions.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("bgp.neighbors[%d].import: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Start starts the speaker, its neighbours and the best-path stream.
func Start(ctx context.Context, cfg Config) (*Speaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	imf := newImportFilter(cfg.ASN)
	scope := &meshScope{}
	// The speaker takes GoBGP's Adj-RIB-In counts; it exists before any neighbour
	// (AddPeer, which hands the neighbour to GoBGP's loop, comes after).
	var sp *Speaker
	opts := []server.ServerOption{server.LoggerOption(log.With("component", "gobgp"), nil), server.ImportFilterOption(imf.accept), server.OriginValidatorOption(imf.originState),
		server.ExportFilterOption(scope.exportable), server.UpdateGroupOption(scope.updateGroup),
		server.AdjRibInHookOption(func(peer netip.Addr, family bgp.Family, announced int, withdrawn []bgp.NLRI, held int) {
			sp.onAdjIn(peer, family, announced, withdrawn, held)
		})}
	if cfg.GRPCAddress != "" {
		opts = append(opts, server.GrpcListenAddress(cfg.GRPCAddress))
	}
	srv := server.NewBgpServer(opts...)
	go srv.Serve()
	port := cfg.ListenPort
	if port == 0 {
		port = 179
	}
	err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:             cfg.ASN,
		RouterId:        cfg.RouterID.String(),
		ListenPort:      port,
		ListenAddresses: cfg.ListenAddresses,
		// A package variable in GoBGP v4.8: it changes every server in the process.
		UseMultiplePaths: cfg.Multipath,
	}})
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("bgp: start speaker (is port %d in use, or is the listen address not on this host?): %w", port, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s := &Speaker{srv: srv, log: log, events: make(chan Event, eventBuffer), done: make(chan struct{}), cancel: cancel,
		peers: map[netip.Addr]*PeerStatus{}, adjIn: map[netip.Addr]*adjIn{}, loads: map[netip.Addr]*Load{},
		eors: map[netip.Addr]map[bgp.Family]bool{}, asn: cfg.ASN, meshLocal: cfg.MeshAddress,
		mesh: map[netip.Addr]bool{}, originated: map[netip.Prefix]netip.Addr{}, importFilter: imf, meshScope: scope,
		announced: map[netip.Prefix]bool{}, blackholes: map[netip.Prefix]bool{}, exports: map[netip.Addr]*Export{}, importActions: map[netip.Addr]*ImportActions{},
		holding: cfg.HoldUpstreams, held: map[netip.Addr]bool{}, backups: cfg.Backups,
		restartTime: cmp.Or(cfg.RestartTime, 120*time.Second), longLived: cfg.LongLivedTime, grpc: cfg.GRPCAddress != ""}
	sp = s
	s.restarting.Store(cfg.Restarting)
	if cfg.Restarting {
		// The node ends the deferral itself (RestartDone), once its FIB is complete
		// and the fleet's prefixes it announces are in the RIB: a peer sweeps what
		// it has not been sent by End-of-RIB (third_party patch 9).
		srv.HoldRestartSync()
	}

	// Export deny-by-default: upstreams get what their Export allows of the
	// originated prefixes (export.go), the mesh the rest (mesh.go).
	// The configured neighbours' exports and import actions go into the first
	// policies, so that starting N neighbours builds each policy once.
	s.importFilter.setOwn(cfg.Originated)
	for _, n := range cfg.Neighbors {
		if n.Export != nil {
			s.exports[n.Address] = n.Export
		}
		if !n.ImportActions.empty() {
			s.importActions[n.Address] = n.ImportActions
		}
	}
	if err := s.setupExport(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if len(s.importActions) > 0 {
		if err := s.applyImport(ctx); err != nil {
			s.Stop()
			return nil, err
		}
	}
	// One watcher, so GoBGP delivers forwarding paths (best, equal, backup: GoBGP
	// patch 7), End-of-RIBs and peer events to the callbacks in the order it produced
	// them. No pre-policy updates: what the node needs of them (counts, withdrawals)
	// comes from the AdjRibInHook, without every path of every UPDATE cloned and
	// converted for a watcher. Its queue is bounded (patch 14): a full table's UPDATEs wait in
	// the upstream's TCP window while the FIB catches up, not as cloned paths in the
	// heap (330 MB of them half way through a load without the bound).
	err = srv.WatchEvent(wctx, server.WatchEventMessageCallbacks{OnForwarding: s.onForwarding, OnPeerUpdate: s.onPeer, OnPathEor: s.onEndOfRIB},
		server.WatchForwarding(true), server.WatchPeer(), server.WatchEor(false), server.WatchQueueLimit(watchQueueLimit))
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("bgp: watch best paths: %w", err)
	}
	for _, n := range cfg.Neighbors {
		if err := s.AddNeighbor(ctx, n); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// AddNeighbor configures a peer with its address families (IPv4 unicast by default).
func (s *Speaker) AddNeighbor(ctx context.Context, n Neighbor) error {
	families := n.Families
	if len(families) == 0 {
		families = []Family{IPv4Unicast}
	}
	var afis []*api.AfiSafi
	for _, f := range families {
		if apiFamilies[f] == nil {
			return fmt.Errorf("bgp: neighbour %s: unknown family %q", n.Address, f)
		}
		afis = append(afis, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: apiFamilies[f], Enabled: true}})
	}
	p := &api.Peer{
		Conf:     &api.PeerConf{NeighborAddress: n.Address.String(), PeerAsn: n.ASN},
		AfiSafis: afis,
		Transport: &api.Transport{
			RemotePort:  uint32(n.Port),
			PassiveMode: n.Passive,
		},
		// A session the node reset itself (ResetNeighbor: BFD down) may come back as
		// soon as a connection retry would: GoBGP's default idle hold after a reset
		// (30 s) kept a link's return from its routes for 30 s more, refusing the
		// peer's connections. (A reload that changes a neighbour removes and adds
		// it: no idle hold.) A flapping neighbour's routes are held down in the FIB
		// (fib.hold_down), not here.
		Timers: &api.Timers{Config: &api.TimersConfig{ConnectRetry: 5, IdleHoldTimeAfterReset: 5}},
		// Graceful restart (see gracefulRestart): also what makes most speakers end
		// their initial dump with End-of-RIB, the node's signal that a full-table load
		// is complete.
		GracefulRestart: s.gracefulRestart(),
	}
	s.restartFamilies(afis)
	if n.MultihopTTL > 0 {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(n.MultihopTTL)}
	}
	p.Conf.AuthPassword = n.Password
	if n.TTLSecurity {
		p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 255}
	}
	// The rules first: the session's first route must meet them, and its first
	// update carry what it may be sent.
	// (Start installed the configured neighbours' policies already.)
	s.importFilter.set(n.Address, n.Import)
	s.mu.Lock()
	newExport := n.Export != nil && s.exports[n.Address] != n.Export
	newActions := !n.ImportActions.empty() && s.importActions[n.Address] != n.ImportActions
	if newExport {
		s.exports[n.Address] = n.Export
	}
	if newActions {
		s.importActions[n.Address] = n.ImportActions
	}
	s.mu.Unlock()
	if newExport {
		if err := s.applyExport(ctx); err != nil {
			return err
		}
	}
	if newActions {
		if err := s.applyImport(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	hold := s.holding && n.Import != nil
	s.mu.Unlock()
	p.Conf.AdminDown = hold
	if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
		s.importFilter.set(n.Address, nil)
		return fmt.Errorf("bgp: add neighbour %s AS%d: %w", n.Address, n.ASN, err)
	}
	s.mu.Lock()
	if hold {
		s.held[n.Address] = true
	}
	if _, ok := s.peers[n.Address]; !ok {
		s.peers[n.Address] = &PeerStatus{Address: n.Address, ASN: n.ASN, State: "idle"}
		s.loads[n.Address] = &Load{Neighbor: n.Address, Expected: uint64(n.ExpectedPrefixes)}
	}
	s.eors[n.Address] = map[bgp.Family]bool{}
	for _, f := range families {
		s.eors[n.Address][map[Family]bgp.Family{IPv4Unicast: bgp.RF_IPv4_UC, IPv6Unicast: bgp.RF_IPv6_UC}[f]] = false
	}
	s.adjIn[n.Address] = newAdjIn(int(n.MaxPrefixes), int(n.ExpectedPrefixes))
	s.adjIn[n.Address].restart = n.MaxPrefixRestart
	s.mu.Unlock()
	s.log.Info("added BGP neighbour", "neighbor", n.Address, "asn", n.ASN, "families", families, "max_prefixes", n.MaxPrefixes,
		"tcp_md5", n.Password != "", "ttl_security", n.TTLSecurity, "held_for_validators", hold)
	return nil
}

// ReleaseUpstreams starts the sessions Config.HoldUpstreams held, and adds the
// neighbours configured from now on as usual.
func (s *Speaker) ReleaseUpstreams(ctx context.Context) error {
	s.mu.Lock()
	s.holding = false
	held := s.held
	s.held = map[netip.Addr]bool{}
	s.mu.Unlock()
	var errs []error
	for a := range held {
		if err := s.srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: a.String()}); err != nil {
			errs = append(errs, fmt.Errorf("bgp: start the session with %s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

// Held lists the neighbours whose sessions wait for ReleaseUpstreams.
func (s *Speaker) Held() []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]netip.Addr, 0, len(s.held))
	for a := range s.held {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// SetImport replaces a neighbour's import rules and actions, live: the routes it
// holds are checked again (a soft reset in: GoBGP runs its Adj-RIB-In through import
// again), and the session stays up.
func (s *Speaker) SetImport(ctx context.Context, a netip.Addr, r *ImportRules, act *ImportActions) error {
	was, err := setForNeighbor(s, a, s.importActions, act, act.empty())
	if err != nil {
		return err
	}
	if !was.empty() || !act.empty() {
		if err := s.applyImport(ctx); err != nil {
			return err
		}
	}
	s.importFilter.set(a, r)
	if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_IN}); err != nil {
		return fmt.Errorf("bgp: check neighbour %s's routes against its new import rules (soft reset in): %w", a, err)
	}
	return nil
}

// setForNeighbor sets a configured neighbour's entry of m (one of the speaker's
// per-neighbour settings) to v, or deletes it, and returns what it was.
func setForNeighbor[V any](s *Speaker, a netip.Addr, m map[netip.Addr]V, v V, del bool) (was V, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.peers[a]; !known {
		return was, fmt.Errorf("bgp: %s is not a configured neighbour", a)
	}
	was = m[a]
	if del {
		delete(m, a)
	} else {
		m[a] = v
	}
	return was, nil
}

// shutdownOver shuts a neighbour's session down for holding more than maxPrefixes:
// it stays down until the neighbour is configured again or, with restart set, that
// long.
func (s *Speaker) shutdownOver(a netip.Addr, maxPrefixes uint32, restart time.Duration) {
	err := s.srv.ShutdownPeer(context.Background(), &api.ShutdownPeerRequest{Address: a.String(), Communication: "max-prefix limit exceeded"})
	if err != nil {
		s.log.Error("shut down neighbour over its max_prefixes", "neighbor", a, "max_prefixes", maxPrefixes, "err", err)
		return
	}
	if restart <= 0 {
		return
	}
	s.log.Info("neighbour's session comes back after its max-prefix restart time", "neighbor", a, "restart_in", restart)
	select {
	case <-time.After(restart):
	case <-s.done:
		return
	}
	if err := s.srv.EnablePeer(context.Background(), &api.EnablePeerRequest{Address: a.String()}); err != nil {
		s.log.Error("bring a neighbour back after its max-prefix restart time", "neighbor", a, "err", err)
	}
}

// ResetNeighbor ends the session with a neighbour (a NOTIFICATION saying why; its
// routes are withdrawn) and lets it start again: what a failed BFD session asks for,
// once the FIB has moved the traffic.
func (s *Speaker) ResetNeighbor(ctx context.Context, a netip.Addr, why string) error {
	if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: a.String(), Communication: why}); err != nil {
		return fmt.Errorf("bgp: reset the session with %s: %w", a, err)
	}
	return nil
}

// RemoveNeighbor closes the session with an upstream (its routes are withdrawn at
// once) and forgets it.
func (s *Speaker) RemoveNeighbor(ctx context.Context, a netip.Addr) error {
	s.mu.Lock()
	_, known := s.peers[a]
	mesh := s.mesh[a]
	s.mu.Unlock()
	if !known || mesh {
		return fmt.Errorf("bgp: %s is not a configured neighbour", a)
	}
	if err := s.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
		return fmt.Errorf("bgp: remove neighbour %s: %w", a, err)
	}
	s.mu.Lock()
	delete(s.peers, a)
	delete(s.held, a)
	delete(s.loads, a)
	delete(s.eors, a)
	delete(s.adjIn, a)
	_, exported := s.exports[a]
	delete(s.exports, a)
	_, acted := s.importActions[a]
	delete(s.importActions, a)
	s.mu.Unlock()
	s.importFilter.set(a, nil)
	if exported {
		if err := s.applyExport(ctx); err != nil {
			return err
		}
	}
	if acted {
		if err := s.applyImport(ctx); err != nil {
			return err
		}
	}
	s.log.Info("removed BGP neighbour", "neighbor", a)
	return nil
}

// SetLimits changes a neighbour's max-prefix limit, its restart time and the
// expected size of its dump, live: the session stays up (a limit now below what the
// neighbour holds shuts it down, as on an update).
func (s *Speaker) SetLimits(a netip.Addr, maxPrefixes, expected uint32, restart time.Duration) error {
	s.mu.Lock()
	in, l := s.adjIn[a], s.loads[a]
	if in == nil || l == nil {
		s.mu.Unlock()
		return fmt.Errorf("bgp: %s is not a configured neighbour", a)
	}
	in.max, in.tripped, in.restart, in.expected = int(maxPrefixes), false, restart, int(expected)
	over := in.max > 0 && in.v4+in.v6 > in.max
	if over {
		in.tripped = true
	}
	l.Expected = uint64(expected)
	s.mu.Unlock()
	if over {
		s.log.Warn("neighbour holds more than its new max_prefixes: shutting the session down", "neighbor", a, "max_prefixes", maxPrefixes)
		go s.shutdownOver(a, maxPrefixes, in.restart)
	}
	return nil
}

func (s *Speaker) onPeer(ev *apiutil.WatchEventMessage_PeerEvent, at time.Time) {
	if up, down := s.peerState(ev, at); up || down {
		e := Event{At: at}
		if up {
			e.SessionUp = ev.Peer.State.NeighborAddress
		} else {
			e.SessionDown = ev.Peer.State.NeighborAddress
		}
		s.send(e)
	}
}

// peerState records a neighbour's session state; it says whether the session became
// established, or left established.
func (s *Speaker) peerState(ev *apiutil.WatchEventMessage_PeerEvent, at time.Time) (up, down bool) {
	st := ev.Peer.State
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.peers[st.NeighborAddress]; ok {
		was := p.State
		p.State = fsmState(st.SessionState)
		up = p.State == "established" && was != p.State
		down = was == "established" && p.State != was
		switch {
		case p.State == "established" && was != p.State:
			p.Established = at
		case p.State != "established":
			p.Established = time.Time{}
		}
		if l := s.loads[st.NeighborAddress]; l != nil && was != p.State {
			switch {
			case p.State == "established":
				// What the session sent before this event came is counted too.
				l.Established, l.Received, l.early, l.EndOfRIB = at, l.early, 0, time.Time{}
				for f := range s.eors[st.NeighborAddress] {
					s.eors[st.NeighborAddress][f] = false
				}
			case was == "established":
				l.Established, l.early = time.Time{}, 0
			}
		}
	}
	if a := s.adjIn[st.NeighborAddress]; a != nil && st.SessionState != bgp.BGP_FSM_ESTABLISHED {
		// GoBGP drops the session's paths: count afresh on the next one.
		next := newAdjIn(a.max, a.expected)
		next.restart = a.restart
		s.adjIn[st.NeighborAddress] = next
	}
	return up, down
}

// onAdjIn takes GoBGP's count of a neighbour's paths of a family after an UPDATE (its
// AdjRibInHook, on the neighbour's goroutine): the announcements for load progress,
// the withdrawals for what the import rules refused, the paths held for the
// neighbour's max-prefix limit.
func (s *Speaker) onAdjIn(peer netip.Addr, family bgp.Family, announced int, withdrawn []bgp.NLRI, held int) {
	if family != bgp.RF_IPv4_UC && family != bgp.RF_IPv6_UC {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	for _, n := range withdrawn {
		if p, ok := n.(*bgp.IPAddrPrefix); ok {
			s.importFilter.withdrawn(peer, p.Prefix)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.loads[peer]; l != nil {
		if l.Established.IsZero() {
			l.early += uint64(announced) // before the peer event that starts the session
		} else {
			l.Received += uint64(announced)
		}
	}
	a := s.adjIn[peer]
	if a == nil {
		return
	}
	if family == bgp.RF_IPv4_UC {
		a.v4 = held
	} else {
		a.v6 = held
	}
	if a.max > 0 && a.v4+a.v6 > a.max && !a.tripped {
		a.tripped = true
		s.log.Warn("neighbour exceeded max_prefixes: shutting the session down", "neighbor", peer, "max_prefixes", a.max)
		go s.shutdownOver(peer, uint32(a.max), a.restart)
	}
}

// prefixKey packs a prefix as its 16-byte address (IPv4-mapped for IPv4) and length.
func prefixKey(p netip.Prefix) (k [17]byte) {
	a := p.Addr().As16()
	copy(k[:], a[:])
	k[16] = byte(p.Bits())
	if p.Addr().Is4() {
		k[16] += 128 // apart from the IPv6 prefixes of the same bytes
	}
	return k
}

func fsmState(st bgp.FSMState) string {
	switch st {
	case bgp.BGP_FSM_IDLE:
		return "idle"
	case bgp.BGP_FSM_CONNECT:
		return "connect"
	case bgp.BGP_FSM_ACTIVE:
		return "active"
	case bgp.BGP_FSM_OPENSENT:
		return "opensent"
	case bgp.BGP_FSM_OPENCONFIRM:
		return "openconfirm"
	case bgp.BGP_FSM_ESTABLISHED:
		return "established"
	}
	return "unknown"
}

// Events streams best-path changes in the order GoBGP decided them, in batches, and
// each neighbour's End-of-RIB after the changes its dump caused. It is never closed:
// stop reading when Done is closed.
func (s *Speaker) Events() <-chan Event { return s.events }

// onEndOfRIB records a family's End-of-RIB; once every family of the session has
// sent one, the neighbour's initial dump is complete, and says so in the stream.
func (s *Speaker) onEndOfRIB(p *apiutil.Path, at time.Time) {
	if at.IsZero() {
		at = time.Now() // GoBGP v4.8 leaves End-of-RIB events without a timestamp
	}
	s.mu.Lock()
	eors := s.eors[p.PeerAddress]
	if _, ok := eors[p.Family]; !ok {
		s.mu.Unlock()
		return // a family fibfleet does not take
	}
	eors[p.Family] = true
	all := true
	for _, done := range eors {
		all = all && done
	}
	if l := s.loads[p.PeerAddress]; all && l != nil && !l.Established.IsZero() && l.EndOfRIB.IsZero() {
		l.EndOfRIB, l.Expected = at, l.Received
	}
	s.mu.Unlock()
	if all {
		s.send(Event{EndOfRIB: p.PeerAddress, At: at})
	}
}

// Loads reports each neighbour's initial-dump progress.
func (s *Speaker) Loads() []Load {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Load, 0, len(s.loads))
	for n, l := range s.loads {
		c := *l
		if a := s.adjIn[n]; a != nil && !s.mesh[n] {
			c.Prefixes = [2]uint64{uint64(a.v4), uint64(a.v6)}
		}
		out = append(out, c)
	}
	return out
}

// Holdings is what the node holds from its neighbours, for sizing its memory: the
// paths (before import policy) every neighbour sent it, each upstream counted at
// least at its expected dump (configured, or its last one's size: the dump is
// coming), and how many mesh peers it has (each is sent this node's table).
func (s *Speaker) Holdings() (paths int64, meshPeers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, a := range s.adjIn {
		held := int64(a.v4 + a.v6)
		if l := s.loads[n]; l != nil && !s.mesh[n] {
			// The last dump's size, and the configured one: a dump that ended
			// small (a session up before its table, which follows as updates)
			// must not set the limit under the table the operator said comes.
			held = max(held, int64(l.Expected), int64(a.expected))
		}
		paths += held
	}
	return paths, len(s.mesh)
}

func (s *Speaker) send(ev Event) {
	select {
	case <-s.done:
		return // callbacks after Stop do nothing
	default:
	}
	select {
	case s.events <- ev:
	case <-s.done:
	}
}

// onForwarding turns each destination's forwarding paths into a Change: its best
// path's, with the next hops of its equal paths and of its backup. A path this node
// announces or a blackhole is never another route's equal or backup.
func (s *Speaker) onForwarding(fs []apiutil.Forwarding, at time.Time) {
	list := s.changeList(len(fs))
	batch := (*list)[:0]
	for i := range fs {
		f := &fs[i]
		c, ok := toChange(f.Family, f.Nlri, &f.Best, f.Withdrawn)
		if !ok {
			continue
		}
		if !c.Withdraw && !c.Blackhole {
			for j := range f.Multipath {
				if h, ok := toHop(f.Family, f.Nlri, &f.Multipath[j]); ok {
					c.Multipath = append(c.Multipath, h)
				}
			}
			if f.Backup != nil && s.backups {
				if h, ok := toHop(f.Family, f.Nlri, f.Backup); ok {
					c.Backup = h
				}
			}
		}
		batch = append(batch, c)
	}
	*list = batch
	if len(batch) > 0 {
		s.send(Event{Changes: batch, At: at, list: list})
		return
	}
	s.Release(Event{Changes: batch, list: list})
}

// changeListSizes are the capacities of the change lists kept for reuse, a class
// each: GoBGP's forwarding events hold one destination (one a path it
// selected), a watcher's first the whole RIB (not kept).
var changeListSizes = [...]int{4, 32, 256, 2048}

// changeClass is the class of a list for n changes, -1 past the largest.
func changeClass(n int) int {
	for c, size := range changeListSizes {
		if n <= size {
			return c
		}
	}
	return -1
}

// changeList returns an empty list with room for n changes: a released one of
// n's class when there is one. A full table's load makes an event for each path
// GoBGP selects, and a new list for each was 1.2 GB of the garbage of a load of
// four tables (each collection's work grows with what was allocated since the
// last). As many are in flight as the events' channel and the reader's batch
// hold (thousands), more than the free list of 1,024 this was: sync.Pools, which
// hold as many as come back, and whose lists the collector takes back once a
// load no longer reuses them.
func (s *Speaker) changeList(n int) *[]Change {
	c := changeClass(n)
	if c < 0 {
		l := make([]Change, 0, n)
		return &l
	}
	if l, ok := s.changeLists[c].Get().(*[]Change); ok {
		return l
	}
	l := make([]Change, 0, changeListSizes[c])
	return &l
}

// Release hands an event read from Events back, once nothing reads its Changes
// any more (copied elsewhere, or applied): its list is filled again by a later
// event. Releasing is optional; an event released must not be read again.
func (s *Speaker) Release(ev Event) {
	if ev.list == nil {
		return
	}
	l := *ev.list
	c := changeClass(cap(l))
	if c < 0 || cap(l) != changeListSizes[c] {
		return
	}
	clear(l[:cap(l)]) // no next hop list kept alive
	*ev.list = l[:0]
	s.changeLists[c].Put(ev.list)
}

// toHop is an equal or backup path's next hop, when it can forward.
func toHop(family bgp.Family, nlri bgp.NLRI, p *apiutil.ForwardingPath) (Hop, bool) {
	c, ok := toChange(family, nlri, p, false)
	return Hop{Nexthop: c.Nexthop, Peer: c.Peer}, ok && !c.Withdraw && !c.Blackhole
}

// toChange turns one of GoBGP's forwarding paths into a Change; paths of other
// families are skipped.
func toChange(family bgp.Family, nlri bgp.NLRI, p *apiutil.ForwardingPath, withdrawn bool) (Change, bool) {
	if family != bgp.RF_IPv4_UC && family != bgp.RF_IPv6_UC {
		return Change{}, false
	}
	n, ok := nlri.(*bgp.IPAddrPrefix)
	if !ok {
		return Change{}, false
	}
	c := Change{Prefix: n.Prefix.Masked(), Peer: p.PeerAddress}
	if !withdrawn && slices.Contains(p.Communities, blackholeValue) {
		c.Blackhole = true
		return c, true
	}
	// This node's own announcement (Announce, an unspecified next hop) became the
	// best path: the FIB holds no route of it (its traffic follows a shorter or longer
	// route), and a route another path gave it before is withdrawn.
	announced := p.Nexthop.IsUnspecified() && !p.LinkLocalNexthop.IsValid()
	if withdrawn || announced {
		c.Withdraw = true
		return c, true
	}
	c.Internal = true
	if p.ASPath != nil {
		for _, seg := range p.ASPath.Value {
			if len(seg.GetAS()) > 0 {
				c.Internal = false
			}
		}
	}
	c.Nexthop, c.LinkLocal = p.Nexthop, p.LinkLocalNexthop
	if (!c.Nexthop.IsValid() || c.Nexthop.IsUnspecified()) && c.LinkLocal.IsValid() {
		c.Nexthop = c.LinkLocal // RFC 2545: a link-local next hop alone
	}
	if !c.Nexthop.IsValid() {
		return Change{}, false
	}
	return c, true
}

// Peers reports every neighbour's session state, from GoBGP's peer events (cheap: no
// call into GoBGP).
func (s *Speaker) Peers() []PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PeerStatus, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, *p)
	}
	return out
}

// SessionStates lists the values PeerStatus.State takes, for metrics.
func SessionStates() []string {
	return []string{"idle", "connect", "active", "opensent", "openconfirm", "established"}
}

// Abandon ends the change stream (callbacks turn into no-ops) and leaves every
// session to close with the process, which is about to exit: for the peers a restart
// without a goodbye (no NOTIFICATION: graceful restart keeps the node's routes), and
// no route withdrawn from anyone. GoBGP's graceful stop (StopBgp with
// AllowGracefulRestart, what Stop does) drops each neighbour's routes while the other
// sessions are still up, withdrawing them there: a fleet member lost every route
// through the stopping node's upstream for the whole restart (TestFleetFailover).
func (s *Speaker) Abandon() {
	s.stop.Do(func() {
		close(s.done)
		s.cancel()
	})
}

// Done is closed when the speaker stops.
func (s *Speaker) Done() <-chan struct{} { return s.done }

// Stop closes every session and ends the change stream. It is safe to call twice.
func (s *Speaker) Stop() {
	s.stop.Do(func() {
		// Callbacks turn into no-ops first, but keep draining GoBGP's watch events while
		// it stops: stopping withdraws every path, and a watcher nobody reads blocks
		// GoBGP's server loop (with a full table, StopBgp then never returned).
		close(s.done)
		// Sessions with graceful restart close without a NOTIFICATION, so that
		// their peers keep the routes for the restart time.
		if err := s.srv.StopBgp(context.Background(), &api.StopBgpRequest{AllowGracefulRestart: true}); err != nil {
			s.log.Warn("stop BGP", "err", err)
		}
		if s.grpc {
			s.srv.Stop() // its API server (BGP is stopped: GoBGP logs that it was)
		}
		s.cancel()
	})
}
