package lab

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/fibfleet/fibfleet/internal/table"
)

// FeederConfig says what a Feeder announces and to whom.
type FeederConfig struct {
	ASN      uint32
	RouterID string
	// LocalAddress and PeerAddress:PeerPort are the session's ends; the feeder connects.
	LocalAddress, PeerAddress string
	PeerASN                   uint32
	PeerPort                  uint32
	// Nexthop is every route's next hop (GoBGP keeps an explicit next hop on eBGP).
	Nexthop netip.Addr
	Routes  []table.Route
}

// Feeder is an in-process GoBGP speaker that announces a table to one peer, with each
// route's origin AS at the end of its AS path: a BGP upstream for tests, benchmarks
// and the lab that needs no other process.
type Feeder struct {
	srv *server.BgpServer
}

// StartFeeder starts the speaker, loads the routes and connects to the peer.
func StartFeeder(ctx context.Context, cfg FeederConfig) (*Feeder, error) {
	srv := server.NewBgpServer()
	go srv.Serve()
	f := &Feeder{srv: srv}
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: cfg.ASN, RouterId: cfg.RouterID, ListenPort: -1}}); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("feeder: start: %w", err)
	}
	nh, err := bgp.NewPathAttributeNextHop(cfg.Nexthop)
	if err != nil {
		f.Stop()
		return nil, fmt.Errorf("feeder: next hop %s: %w", cfg.Nexthop, err)
	}
	origin := bgp.NewPathAttributeOrigin(0)
	paths := make([]*apiutil.Path, 0, 10000)
	flush := func() error {
		if len(paths) == 0 {
			return nil
		}
		_, err := srv.AddPath(apiutil.AddPathRequest{Paths: paths})
		paths = paths[:0]
		return err
	}
	for _, r := range cfg.Routes {
		nlri, err := bgp.NewIPAddrPrefix(r.Prefix)
		if err != nil {
			f.Stop()
			return nil, err
		}
		attrs := []bgp.PathAttributeInterface{origin, nh}
		if r.OriginAS != 0 {
			attrs = append(attrs, bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{
				bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{r.OriginAS})}))
		}
		paths = append(paths, &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs})
		if len(paths) == cap(paths) {
			if err := flush(); err != nil {
				f.Stop()
				return nil, fmt.Errorf("feeder: add paths: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		f.Stop()
		return nil, fmt.Errorf("feeder: add paths: %w", err)
	}
	err = srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: cfg.PeerAddress, PeerAsn: cfg.PeerASN},
		Transport: &api.Transport{LocalAddress: cfg.LocalAddress, RemotePort: cfg.PeerPort},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
		// With graceful restart negotiated GoBGP ends its dump with End-of-RIB, as
		// full-table upstreams do.
		GracefulRestart: &api.GracefulRestart{Enabled: true, HelperOnly: true, RestartTime: 120},
		AfiSafis: []*api.AfiSafi{{Config: &api.AfiSafiConfig{
			Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}},
	}})
	if err != nil {
		f.Stop()
		return nil, fmt.Errorf("feeder: add peer %s: %w", cfg.PeerAddress, err)
	}
	return f, nil
}

// Stop closes the session and the speaker.
func (f *Feeder) Stop() { f.srv.Stop() }
