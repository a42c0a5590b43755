package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// The fleet's iBGP full mesh. Every node peers with every live member (cluster's
// membership decides who), so a route learned from an upstream by any node reaches
// all, with its next hop unchanged (iBGP): a node resolves a next hop that is not on
// its own links through the route its owner originates for that link (Originate).
// Routes learned over the mesh are not sent on to other mesh peers (a full mesh
// needs no reflection) nor to upstreams.
//
// Export stays deny-by-default: after the upstreams' statements (export.go), the
// mesh's accepts towards the neighbours in the mesh's neighbour set. GoBGP's
// neighbour condition matches every neighbour while its set is empty, so the set
// always holds a placeholder that can never be a peer.
const (
	meshSet         = "fibfleet-mesh"
	meshPolicy      = "fibfleet-export-to-mesh"
	meshPlaceholder = "255.255.255.255/32"
	// Mesh timers: a dead member is unpeered by membership within seconds; the hold
	// timer is for a session that dies while its member lives, and stays long enough
	// that a node busy loading a full table on 2 cores never misses it (GoBGP sends
	// keepalives while it builds a new peer's initial updates since patch 2 of
	// third_party/'s set: before, that alone outlasted 30 s).
	meshHold, meshKeepalive = 30, 10
)

// MeshPeer is another node of the fleet.
type MeshPeer struct {
	Address netip.Addr
	// Port is its BGP port (0: 179).
	Port uint16
}

// setupExport installs the export policy: the upstreams' exports (none yet,
// export.go), accept towards the mesh, reject the rest. The mesh's statement comes
// in two forms, for a node in service and for a drained one.
func (s *Speaker) setupExport(ctx context.Context) error {
	err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: meshSet, List: []string{meshPlaceholder}}})
	if err != nil {
		return fmt.Errorf("bgp: define the mesh's neighbour set: %w", err)
	}
	for _, drained := range []bool{false, true} {
		actions := &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT}
		if drained {
			// RFC 8326: the others prefer any other path. GoBGP does not act on
			// GRACEFUL_SHUTDOWN, so the mesh gets the lowest local preference GoBGP's
			// API can set (it takes 0 for "unset"): 1, below every default 100.
			actions.LocalPref = &api.LocalPrefAction{Value: drainedLocalPref}
			actions.Community = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: []string{GracefulShutdown}}
		}
		name := meshPolicyName(drained)
		err = s.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: name, Statements: []*api.Statement{{
			Name:       name + "-accept",
			Conditions: &api.Conditions{NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: meshSet}},
			Actions:    actions,
		}}}})
		if err != nil {
			return fmt.Errorf("bgp: add the mesh's export policy: %w", err)
		}
	}
	return s.applyExport(ctx)
}

// GracefulShutdown is the well-known community a drained node adds (RFC 8326), and
// drainedLocalPref the local preference it gives its routes in the mesh.
const (
	GracefulShutdown        = "65535:0"
	drainedLocalPref uint32 = 1
)

func meshPolicyName(drained bool) string {
	if drained {
		return meshPolicy + "-drained"
	}
	return meshPolicy
}

func hostPrefix(a netip.Addr) string { return netip.PrefixFrom(a, a.BitLen()).String() }

// AddMeshPeer peers with another node over iBGP (both unicast families), from the
// configured mesh address. Adding a peer twice is a no-op.
func (s *Speaker) AddMeshPeer(ctx context.Context, p MeshPeer) error {
	if !s.meshLocal.IsValid() {
		return fmt.Errorf("bgp: mesh peer %s: this speaker has no mesh address (bgp.Config.MeshAddress)", p.Address)
	}
	s.mu.Lock()
	known := s.mesh[p.Address]
	s.mu.Unlock()
	if known {
		return nil
	}
	// In the sets first, so the first update the session sends passes export.
	s.meshScope.set(p.Address, true)
	err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: meshSet, List: []string{hostPrefix(p.Address)}}})
	if err != nil {
		s.meshScope.set(p.Address, false)
		return fmt.Errorf("bgp: add mesh peer %s to the export set: %w", p.Address, err)
	}
	peer := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: s.asn, Description: "fibfleet mesh"},
		AfiSafis: []*api.AfiSafi{
			{Config: &api.AfiSafiConfig{Family: apiFamilies[IPv4Unicast], Enabled: true}},
			{Config: &api.AfiSafiConfig{Family: apiFamilies[IPv6Unicast], Enabled: true}},
		},
		Transport: &api.Transport{LocalAddress: s.meshLocal.String(), RemotePort: uint32(p.Port)},
		Timers: &api.Timers{Config: &api.TimersConfig{ConnectRetry: 2, HoldTime: meshHold, KeepaliveInterval: meshKeepalive,
			// Ready again a second after a session ends, not GoBGP's 30 s: a restarting
			// member must be back within the restart time, or its routes go.
			IdleHoldTimeAfterReset: 1}},
		// As for upstreams: the peer's dump ends with End-of-RIB, and a node that
		// restarts keeps the others' routes to it, and theirs through it.
		GracefulRestart: s.gracefulRestart(),
	}
	s.restartFamilies(peer.AfiSafis)
	if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peer}); err != nil {
		_ = s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: &api.DefinedSet{
			DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: meshSet, List: []string{hostPrefix(p.Address)}}})
		s.meshScope.set(p.Address, false)
		return fmt.Errorf("bgp: add mesh peer %s: %w", p.Address, err)
	}
	s.mu.Lock()
	s.mesh[p.Address] = true
	s.peers[p.Address] = &PeerStatus{Address: p.Address, ASN: s.asn, State: "idle", Mesh: true}
	s.loads[p.Address] = &Load{Neighbor: p.Address}
	s.adjIn[p.Address] = newAdjIn(0, 0) // what it holds counts for the memory limit (Holdings)
	s.eors[p.Address] = map[bgp.Family]bool{bgp.RF_IPv4_UC: false, bgp.RF_IPv6_UC: false}
	s.mu.Unlock()
	s.log.Info("mesh peer added", "neighbor", p.Address)
	return nil
}

// RemoveMeshPeer closes the session with a node (its routes are withdrawn at once)
// and forgets it.
func (s *Speaker) RemoveMeshPeer(ctx context.Context, a netip.Addr) error {
	s.mu.Lock()
	known := s.mesh[a]
	s.mu.Unlock()
	if !known {
		return nil
	}
	if err := s.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
		return fmt.Errorf("bgp: remove mesh peer %s: %w", a, err)
	}
	err := s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: &api.DefinedSet{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: meshSet, List: []string{hostPrefix(a)}}})
	s.meshScope.set(a, false)
	s.mu.Lock()
	delete(s.mesh, a)
	delete(s.peers, a)
	delete(s.loads, a)
	delete(s.adjIn, a)
	delete(s.eors, a)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("bgp: remove mesh peer %s from the export set: %w", a, err)
	}
	s.log.Info("mesh peer removed", "neighbor", a)
	return nil
}

// MeshPeers are the mesh's peers and their session states.
// IsMesh says whether a is one of the fleet's mesh peers.
func (s *Speaker) IsMesh(a netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mesh[a]
}

func (s *Speaker) MeshPeers() []PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PeerStatus
	for a := range s.mesh {
		out = append(out, *s.peers[a])
	}
	return out
}

// Originate announces a prefix to the mesh with the given next hop (one of this
// node's addresses on the mesh): a node announces the subnets of its upstream links,
// so that the others can resolve next hops there through it. Announcing a prefix
// again replaces its next hop.
func (s *Speaker) Originate(prefix netip.Prefix, nexthop netip.Addr) error {
	p, err := originPath(prefix, nexthop)
	if err != nil {
		return err
	}
	if _, err := s.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		return fmt.Errorf("bgp: originate %s via %s: %w", prefix, nexthop, err)
	}
	s.mu.Lock()
	s.originated[prefix.Masked()] = nexthop
	s.mu.Unlock()
	return nil
}

// StopOriginating withdraws a prefix Originate announced.
func (s *Speaker) StopOriginating(prefix netip.Prefix) error {
	prefix = prefix.Masked()
	s.mu.Lock()
	nh, ok := s.originated[prefix]
	delete(s.originated, prefix)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	p, err := originPath(prefix, nh)
	if err != nil {
		return err
	}
	if err := s.srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		return fmt.Errorf("bgp: withdraw %s: %w", prefix, err)
	}
	return nil
}

func originPath(prefix netip.Prefix, nexthop netip.Addr) (*apiutil.Path, error) {
	prefix = prefix.Masked()
	if prefix.Addr().Is4() != nexthop.Is4() {
		return nil, fmt.Errorf("bgp: originate %s: the next hop %s must be of the same family", prefix, nexthop)
	}
	nlri, err := bgp.NewIPAddrPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("bgp: originate %s: %w", prefix, err)
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}
	family := bgp.RF_IPv4_UC
	if prefix.Addr().Is4() {
		nh, err := bgp.NewPathAttributeNextHop(nexthop)
		if err != nil {
			return nil, fmt.Errorf("bgp: originate %s via %s: %w", prefix, nexthop, err)
		}
		attrs = append(attrs, nh)
	} else {
		family = bgp.RF_IPv6_UC
		mp, err := bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, nexthop)
		if err != nil {
			return nil, fmt.Errorf("bgp: originate %s via %s: %w", prefix, nexthop, err)
		}
		attrs = append(attrs, mp)
	}
	return &apiutil.Path{Family: family, Nlri: nlri, Attrs: attrs}, nil
}

// ResendMesh sends a mesh peer every route this node advertises to it again (a soft
// reset out). It repairs a peer that lacks routes: GoBGP v4.8 can miss a route that
// arrives while a session is becoming established (the initial dump has passed it, and
// the update is not sent because the session is not yet marked established), and BGP
// never sends a route twice on its own.
func (s *Speaker) ResendMesh(ctx context.Context, a netip.Addr) error {
	s.mu.Lock()
	known := s.mesh[a]
	s.mu.Unlock()
	if !known {
		return fmt.Errorf("bgp: %s is not a mesh peer", a)
	}
	if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT}); err != nil {
		return fmt.Errorf("bgp: resend the routes to mesh peer %s: %w", a, err)
	}
	return nil
}
