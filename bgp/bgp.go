// Package bgp embeds GoBGP v4 behind a small interface: it starts a speaker with
// upstream neighbours from config and streams best-path changes as plain values
// (prefix -> next hop), so fib never sees a GoBGP type.
//
// Best paths come from GoBGP's WatchEvent, never from walking the table: a walk runs
// inside GoBGP's server loop and slowed a full-table load 5x. GoBGP queues watch
// events without bound in its own goroutine, so a slow consumer of Changes delays
// only the stream, never the BGP sessions.
//
// Policy: import accepts (each neighbour may carry a max-prefix limit); export is
// deny-by-default, because a router that re-announces one upstream's table to another
// leaks routes.
package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

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
	Logger      *slog.Logger
}

// Change is one best-path change for a prefix.
type Change struct {
	Prefix   netip.Prefix
	Nexthop  netip.Addr // zero when Withdraw
	Withdraw bool
}

// PeerStatus is a neighbour's session state.
type PeerStatus struct {
	Address netip.Addr
	ASN     uint32
	State   string // idle, connect, active, opensent, openconfirm, established
}

// Speaker is a running embedded BGP speaker.
type Speaker struct {
	srv     *server.BgpServer
	log     *slog.Logger
	changes chan []Change
	done    chan struct{} // closed by Stop
	cancel  context.CancelFunc
	stop    sync.Once

	// peers follows session states from GoBGP's peer events: asking GoBGP (ListPeer)
	// would walk the whole table to count prefixes, inside its server loop.
	mu     sync.Mutex
	peers  map[netip.Addr]*PeerStatus
	limits map[netip.Addr]*prefixLimit
}

// prefixLimit enforces a neighbour's max-prefix limit. GoBGP's own (PrefixLimits)
// counts the Adj-RIB-In by walking it on every UPDATE, which makes a full-table load
// quadratic (2,500 routes/s after 100k here), so fibfleet counts the neighbour's
// prefixes from the update stream instead and shuts the session down itself.
type prefixLimit struct {
	max     int
	seen    map[netip.Prefix]struct{}
	tripped bool
}

// Validate reports every bad field of a config at once, saying what to do.
func (c Config) Validate() error {
	var errs []error
	if c.ASN == 0 {
		errs = append(errs, errors.New("bgp.asn must be set (a private ASN such as 65000 for a lab)"))
	}
	if !c.RouterID.Is4() {
		errs = append(errs, errors.New("bgp.router_id must be an IPv4 address (usually the node's loopback)"))
	}
	if c.ListenPort < -1 || c.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("bgp.listen_port %d: use 1-65535, 0 for 179, or -1 to not listen", c.ListenPort))
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
	opts := []server.ServerOption{server.LoggerOption(log.With("component", "gobgp"), nil)}
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
	}})
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("bgp: start speaker (is port %d in use, or is the listen address not on this host?): %w", port, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s := &Speaker{srv: srv, log: log, changes: make(chan []Change, 64), done: make(chan struct{}), cancel: cancel,
		peers: map[netip.Addr]*PeerStatus{}, limits: map[netip.Addr]*prefixLimit{}}

	// Export deny-by-default: no policy, default reject.
	err = srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name:          "global",
		Direction:     api.PolicyDirection_POLICY_DIRECTION_EXPORT,
		DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT,
	}})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("bgp: set export policy: %w", err)
	}
	err = srv.WatchEvent(wctx, server.WatchEventMessageCallbacks{OnBestPath: s.onBestPath, OnPeerUpdate: s.onPeer, OnPathUpdate: s.onUpdate},
		server.WatchBestPath(true), server.WatchPeer(), server.WatchUpdate(false, "", ""))
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

// AddNeighbor configures a peer (IPv4 unicast).
func (s *Speaker) AddNeighbor(ctx context.Context, n Neighbor) error {
	family := &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	afi := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: family, Enabled: true}}
	p := &api.Peer{
		Conf:     &api.PeerConf{NeighborAddress: n.Address.String(), PeerAsn: n.ASN},
		AfiSafis: []*api.AfiSafi{afi},
		Transport: &api.Transport{
			RemotePort:  uint32(n.Port),
			PassiveMode: n.Passive,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{ConnectRetry: 5}},
	}
	if n.MultihopTTL > 0 {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(n.MultihopTTL)}
	}
	if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
		return fmt.Errorf("bgp: add neighbour %s AS%d: %w", n.Address, n.ASN, err)
	}
	s.mu.Lock()
	if _, ok := s.peers[n.Address]; !ok {
		s.peers[n.Address] = &PeerStatus{Address: n.Address, ASN: n.ASN, State: "idle"}
	}
	if n.MaxPrefixes > 0 {
		s.limits[n.Address] = &prefixLimit{max: int(n.MaxPrefixes), seen: map[netip.Prefix]struct{}{}}
	}
	s.mu.Unlock()
	s.log.Info("added BGP neighbour", "neighbor", n.Address, "asn", n.ASN, "max_prefixes", n.MaxPrefixes)
	return nil
}

func (s *Speaker) onPeer(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
	st := ev.Peer.State
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.peers[st.NeighborAddress]; ok {
		p.State = fsmState(st.SessionState)
	}
	if lim := s.limits[st.NeighborAddress]; lim != nil && st.SessionState != bgp.BGP_FSM_ESTABLISHED {
		// GoBGP drops the session's paths: count afresh on the next one.
		lim.seen, lim.tripped = map[netip.Prefix]struct{}{}, false
	}
}

// onUpdate counts each limited neighbour's IPv4 prefixes from the paths it sends
// (before import policy, as received).
func (s *Speaker) onUpdate(paths []*apiutil.Path, _ time.Time) {
	select {
	case <-s.done:
		return
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		lim := s.limits[p.PeerAddress]
		if lim == nil || p.Family != bgp.RF_IPv4_UC {
			continue
		}
		nlri, ok := p.Nlri.(*bgp.IPAddrPrefix)
		if !ok {
			continue
		}
		if p.Withdrawal {
			delete(lim.seen, nlri.Prefix)
			continue
		}
		lim.seen[nlri.Prefix] = struct{}{}
		if len(lim.seen) > lim.max && !lim.tripped {
			lim.tripped = true
			peer := p.PeerAddress
			s.log.Warn("neighbour exceeded max_prefixes: shutting the session down", "neighbor", peer, "max_prefixes", lim.max)
			go func() {
				err := s.srv.ShutdownPeer(context.Background(), &api.ShutdownPeerRequest{Address: peer.String(), Communication: "max-prefix limit exceeded"})
				if err != nil {
					s.log.Error("shut down neighbour over its max_prefixes", "neighbor", peer, "err", err)
				}
			}()
		}
	}
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

// Changes streams best-path changes in the order GoBGP decided them, in batches.
// It is never closed: stop reading when Done is closed.
func (s *Speaker) Changes() <-chan []Change { return s.changes }

func (s *Speaker) onBestPath(paths []*apiutil.Path, _ time.Time) {
	batch := make([]Change, 0, len(paths))
	for _, p := range paths {
		c, ok := toChange(p)
		if ok {
			batch = append(batch, c)
		}
	}
	if len(batch) == 0 {
		return
	}
	select {
	case <-s.done:
		return // callbacks after Stop do nothing
	default:
	}
	select {
	case s.changes <- batch:
	case <-s.done:
	}
}

// toChange turns a GoBGP path into a Change; paths of other families are skipped.
func toChange(p *apiutil.Path) (Change, bool) {
	if p.Family != bgp.RF_IPv4_UC {
		return Change{}, false
	}
	nlri, ok := p.Nlri.(*bgp.IPAddrPrefix)
	if !ok {
		return Change{}, false
	}
	c := Change{Prefix: nlri.Prefix.Masked()}
	if p.Withdrawal {
		c.Withdraw = true
		return c, true
	}
	for _, a := range p.Attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeNextHop:
			c.Nexthop = a.Value
		case *bgp.PathAttributeMpReachNLRI:
			if !c.Nexthop.IsValid() {
				c.Nexthop = a.Nexthop
			}
		}
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

// Done is closed when the speaker stops.
func (s *Speaker) Done() <-chan struct{} { return s.done }

// Stop closes every session and ends the change stream. It is safe to call twice.
func (s *Speaker) Stop() {
	s.stop.Do(func() {
		// Callbacks turn into no-ops first, but keep draining GoBGP's watch events while
		// it stops: stopping withdraws every path, and a watcher nobody reads blocks
		// GoBGP's server loop (with a full table, StopBgp then never returned).
		close(s.done)
		s.srv.Stop()
		s.cancel()
	})
}
