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
	Address  netip.Addr
	ASN      uint32
	State    string // idle, connect, active, opensent, openconfirm, established
	Received uint64 // prefixes received (IPv4 unicast)
	Accepted uint64
}

// Speaker is a running embedded BGP speaker.
type Speaker struct {
	srv     *server.BgpServer
	log     *slog.Logger
	changes chan []Change
	done    chan struct{} // closed by Stop
	cancel  context.CancelFunc
	stop    sync.Once
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
	s := &Speaker{srv: srv, log: log, changes: make(chan []Change, 64), done: make(chan struct{}), cancel: cancel}

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
	err = srv.WatchEvent(wctx, server.WatchEventMessageCallbacks{OnBestPath: s.onBestPath}, server.WatchBestPath(true))
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
	if n.MaxPrefixes > 0 {
		afi.PrefixLimits = &api.PrefixLimit{Family: family, MaxPrefixes: n.MaxPrefixes}
	}
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
	s.log.Info("added BGP neighbour", "neighbor", n.Address, "asn", n.ASN, "max_prefixes", n.MaxPrefixes)
	return nil
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

// Peers reports every neighbour's session state and prefix counts.
func (s *Speaker) Peers(ctx context.Context) ([]PeerStatus, error) {
	var out []PeerStatus
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		ps := PeerStatus{}
		if p.Conf != nil {
			ps.Address, _ = netip.ParseAddr(p.Conf.NeighborAddress)
			ps.ASN = p.Conf.PeerAsn
		}
		if p.State != nil {
			ps.State = sessionState(p.State.SessionState)
		}
		for _, af := range p.AfiSafis {
			if af.State != nil {
				ps.Received += af.State.Received
				ps.Accepted += af.State.Accepted
			}
		}
		out = append(out, ps)
	})
	if err != nil {
		return nil, fmt.Errorf("bgp: list peers: %w", err)
	}
	return out, nil
}

func sessionState(st api.PeerState_SessionState) string {
	switch st {
	case api.PeerState_SESSION_STATE_IDLE:
		return "idle"
	case api.PeerState_SESSION_STATE_CONNECT:
		return "connect"
	case api.PeerState_SESSION_STATE_ACTIVE:
		return "active"
	case api.PeerState_SESSION_STATE_OPENSENT:
		return "opensent"
	case api.PeerState_SESSION_STATE_OPENCONFIRM:
		return "openconfirm"
	case api.PeerState_SESSION_STATE_ESTABLISHED:
		return "established"
	}
	return "unknown"
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
		close(s.done)
		s.cancel()
		s.srv.Stop()
	})
}
