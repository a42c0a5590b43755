package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// What the node announces upstream: the prefixes it originates (Announce), each to
// the neighbours whose Export lists it, with that neighbour's communities, prepends
// and MED. Nothing else reaches an upstream: a route learned from one upstream, or
// over the mesh, is never sent to another (that leaks routes), and an originated
// prefix is never sent to the mesh (each node decides for itself whether it can
// carry the prefix's traffic, so one node's announcement must not stand in for
// another's).
//
// GoBGP applies one export policy to every neighbour; each neighbour's Export becomes
// a statement conditioned on a neighbour set holding that neighbour alone, on a
// prefix set of its prefixes and on the path being this node's own (route type
// local). A change replaces the whole policy at once (a new generation of names,
// then the assignment swapped), so no update is ever judged by half of one.

// meshScope is the set of mesh peers as GoBGP's export filter reads it: on every
// path for every neighbour, concurrently, so a copy swapped whole rather than a map
// under the speaker's lock.
type meshScope struct {
	peers atomic.Pointer[map[netip.Addr]bool]
}

func (m *meshScope) set(a netip.Addr, in bool) {
	for {
		old := m.peers.Load()
		next := map[netip.Addr]bool{}
		if old != nil {
			maps.Copy(next, *old)
		}
		if in {
			next[a] = true
		} else {
			delete(next, a)
		}
		if m.peers.CompareAndSwap(old, &next) {
			return
		}
	}
}

// exportable is GoBGP's export filter (third_party patch 18): an upstream (any
// neighbour but the mesh's) is sent this node's own paths alone (the export policy
// then chooses among them), so every route learned from the full tables is dropped
// for it before GoBGP clones it and prepends the AS path, which the export policy
// then refused: 0.65 GB of the 5.6 GB a full-table load allocated with one more
// upstream in session, and as much again for each further one. The mesh gets what
// the export policy gives it.
func (m *meshScope) exportable(peer netip.Addr, _ uint32, family bgp.Family, _ bgp.NLRI, local bool) bool {
	if local || family != bgp.RF_IPv4_UC && family != bgp.RF_IPv6_UC {
		return true
	}
	mesh := m.peers.Load()
	return mesh != nil && (*mesh)[peer]
}

// updateGroup is GoBGP's update group (third_party patch 33): the mesh peers are
// one, sent each path computed, packed and serialized once for all of them, since
// exportable answers alike for them (GoBGP checks that their sessions and the
// export policy do too). Upstreams have each their own export.
func (m *meshScope) updateGroup(peer netip.Addr) string {
	if mesh := m.peers.Load(); mesh != nil && (*mesh)[peer] {
		return "mesh"
	}
	return ""
}

// Export is what a neighbour is sent of the prefixes this node originates.
type Export struct {
	// Prefixes are the originated prefixes the neighbour gets (each one announced
	// only while Announce holds it).
	Prefixes []netip.Prefix
	// Communities (RFC 1997, "65000:100") and LargeCommunities (RFC 8092,
	// "65000:1:2") are added to each.
	Communities, LargeCommunities []string
	// Prepend repeats this node's AS that many more times in the path.
	Prepend uint8
	// MED, when HasMED, is the multi-exit discriminator sent.
	MED    uint32
	HasMED bool
	// Blackholes sends the neighbour the fleet's blackholes (AddBlackhole) with
	// BLACKHOLE and NO_EXPORT (RFC 7999), and no other communities or prepends.
	Blackholes bool
}

// Validate reports a bad export, saying what to do; originated are the prefixes
// the node may announce.
func (e *Export) Validate(originated []netip.Prefix) error {
	var errs []error
	for _, p := range e.Prefixes {
		if !slices.Contains(originated, p) {
			errs = append(errs, fmt.Errorf("export prefix %s is not one the node originates: list it under bgp.originate first", p))
		}
	}
	for _, c := range e.Communities {
		if _, err := ParseCommunity(c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range e.LargeCommunities {
		if _, err := ParseLargeCommunity(c); err != nil {
			errs = append(errs, err)
		}
	}
	if e.Prepend > 10 {
		errs = append(errs, fmt.Errorf("export prepend %d: at most 10 (a longer path is refused by many networks' import rules)", e.Prepend))
	}
	return errors.Join(errs...)
}

// ParseCommunity parses a standard community, "ASN:value" with both parts 0-65535
// (RFC 1997).
func ParseCommunity(s string) (uint32, error) {
	a, b, ok := strings.Cut(s, ":")
	x, err1 := strconv.ParseUint(a, 10, 16)
	y, err2 := strconv.ParseUint(b, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("community %q: write it as ASN:value, both 0-65535 (65000:100)", s)
	}
	return uint32(x)<<16 | uint32(y), nil
}

// ParseLargeCommunity parses a large community, "ASN:value:value", each part a
// 32-bit number (RFC 8092).
func ParseLargeCommunity(s string) ([3]uint32, error) {
	parts := strings.Split(s, ":")
	var out [3]uint32
	if len(parts) != 3 {
		return out, fmt.Errorf("large community %q: write it as ASN:value:value (65000:1:2)", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return out, fmt.Errorf("large community %q: write it as ASN:value:value, each 0-4294967295", s)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

// Advertisement is an originated prefix as sent to one neighbour.
type Advertisement struct {
	Prefix netip.Prefix
	// ASPath is the path the neighbour receives (this node's AS, prepended).
	ASPath           []uint32
	Communities      []string
	LargeCommunities []string
	MED              uint32
	HasMED           bool
}

// Announce originates a prefix towards the neighbours whose Export lists it, with
// this node as next hop (each session's local address). Announcing it again does
// nothing.
func (s *Speaker) Announce(p netip.Prefix) error {
	p = p.Masked()
	s.mu.Lock()
	had, blackholed := s.announced[p], s.blackholes[p]
	if blackholed {
		s.announced[p] = true // the blackhole's path stands in for it until it goes
	}
	s.mu.Unlock()
	if had || blackholed {
		return nil
	}
	path, err := announcePath(p)
	if err != nil {
		return err
	}
	if _, err := s.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return fmt.Errorf("bgp: announce %s: %w", p, err)
	}
	s.mu.Lock()
	s.announced[p] = true
	s.mu.Unlock()
	return nil
}

// Withdraw stops announcing a prefix Announce announced.
func (s *Speaker) Withdraw(p netip.Prefix) error {
	p = p.Masked()
	s.mu.Lock()
	had, blackholed := s.announced[p], s.blackholes[p]
	delete(s.announced, p)
	s.mu.Unlock()
	if !had || blackholed {
		return nil // a blackhole's path is not the announcement's to withdraw
	}
	path, err := announcePath(p)
	if err != nil {
		return err
	}
	if err := s.srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return fmt.Errorf("bgp: withdraw %s: %w", p, err)
	}
	return nil
}

// announcePath is an originated prefix with an unspecified next hop, which GoBGP
// replaces with the session's local address towards each eBGP neighbour.
func announcePath(p netip.Prefix) (*apiutil.Path, error) {
	nh := netip.IPv4Unspecified()
	if p.Addr().Is6() {
		nh = netip.IPv6Unspecified()
	}
	return originPath(p, nh)
}

// Announced lists the prefixes Announce holds.
func (s *Speaker) Announced() []netip.Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]netip.Prefix, 0, len(s.announced))
	for p := range s.announced {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefixes)
	return out
}

func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// SetOriginated gives the prefixes this node may originate: routes an upstream
// announces inside them are refused (reason own_prefix) from its next update on,
// they are never sent to the mesh, and only they may be listed in an Export.
func (s *Speaker) SetOriginated(ctx context.Context, prefixes []netip.Prefix) error {
	s.importFilter.setOwn(prefixes)
	s.exportMu.Lock()
	started := s.exportGen > 0
	s.exportMu.Unlock()
	if !started {
		return nil // Start installs the policy
	}
	return s.applyExport(ctx)
}

// SetExport replaces a neighbour's export (nil: it is sent nothing) and applies it
// at once: the policy is replaced and the neighbour's updates recomputed (a soft
// reset out), without resetting its session.
func (s *Speaker) SetExport(ctx context.Context, a netip.Addr, e *Export) error {
	if _, err := setForNeighbor(s, a, s.exports, e, e == nil); err != nil {
		return err
	}
	if err := s.applyExport(ctx); err != nil {
		return err
	}
	if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT}); err != nil {
		return fmt.Errorf("bgp: send neighbour %s what its new export allows (soft reset out): %w", a, err)
	}
	return nil
}

// SetDrained takes the node out of service, or back (RFC 8326): drained, every
// route it sends carries GRACEFUL_SHUTDOWN, and its routes to the mesh local
// preference 1, so that upstreams and the fleet's other nodes move traffic away
// before maintenance, without a session going down. Every session's updates are
// recomputed (a soft reset out).
func (s *Speaker) SetDrained(ctx context.Context, drained bool) error {
	s.mu.Lock()
	changed := s.drained != drained
	s.drained = drained
	var peers []netip.Addr
	for a, p := range s.peers {
		if p.State == "established" {
			peers = append(peers, a)
		}
	}
	s.mu.Unlock()
	if !changed {
		return nil
	}
	if err := s.applyExport(ctx); err != nil {
		return err
	}
	var errs []error
	for _, a := range peers {
		if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT}); err != nil {
			errs = append(errs, fmt.Errorf("bgp: resend to %s (soft reset out): %w", a, err))
		}
	}
	s.log.Info("drain state changed", "drained", drained, "sessions_updated", len(peers)-len(errs))
	return errors.Join(errs...)
}

// Drained reports whether SetDrained took the node out of service.
func (s *Speaker) Drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drained
}

// Advertised lists what a neighbour is sent now: the announced prefixes its Export
// lists, and the fleet's blackholes when it takes them, while its session is
// established, with the attributes the export adds.
// It is what this node tracks, not GoBGP's Adj-RIB-Out, whose listing runs the
// export policy over the whole table inside GoBGP's server loop.
func (s *Speaker) Advertised(a netip.Addr) ([]Advertisement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, known := s.peers[a]
	if !known {
		return nil, fmt.Errorf("bgp: %s is not a configured neighbour", a)
	}
	e := s.exports[a]
	if e == nil || p.State != "established" {
		return nil, nil
	}
	path := []uint32{s.asn}
	if p.ASN == s.asn {
		path = nil // iBGP: the path stays empty
	}
	for range e.Prepend {
		path = append(path, s.asn)
	}
	var out []Advertisement
	for _, px := range e.Prefixes {
		if !s.announced[px] {
			continue
		}
		communities := slices.Clone(e.Communities)
		if s.drained {
			communities = append(communities, GracefulShutdown)
		}
		out = append(out, Advertisement{Prefix: px, ASPath: path, Communities: communities, LargeCommunities: e.LargeCommunities, MED: e.MED, HasMED: e.HasMED})
	}
	if e.Blackholes {
		for px := range s.blackholes {
			out = append(out, Advertisement{Prefix: px, ASPath: []uint32{s.asn}, Communities: []string{BlackholeCommunity, NoExport}})
		}
	}
	slices.SortFunc(out, func(x, y Advertisement) int { return comparePrefixes(x.Prefix, y.Prefix) })
	return out, nil
}

// exportPolicy returns the statements of the export policy for the current exports,
// with the defined sets they use, named for generation gen, and whether the node
// is drained (which mesh policy goes with it).
func (s *Speaker) exportPolicy(gen int) ([]*api.DefinedSet, *api.Policy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := fmt.Sprintf("fibfleet-export-%d", gen)
	pol := &api.Policy{Name: name}
	var sets []*api.DefinedSet
	addrs := make([]netip.Addr, 0, len(s.exports))
	for a := range s.exports {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	// The fleet's blackholes first (before a statement for an originated prefix
	// could take one): to the neighbours that want them, with NO_EXPORT; to
	// nobody else, the mesh included.
	bhSet := name + "-bh"
	sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_COMMUNITY, Name: bhSet, List: []string{BlackholeCommunity}})
	bhConds := func() *api.Conditions {
		return &api.Conditions{CommunitySet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: bhSet}, RouteType: api.Conditions_ROUTE_TYPE_LOCAL}
	}
	var bhNeighbors []string
	for _, a := range addrs {
		if s.exports[a].Blackholes {
			bhNeighbors = append(bhNeighbors, hostPrefix(a))
		}
	}
	if len(bhNeighbors) > 0 {
		nset := name + "-bhn"
		sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: nset, List: bhNeighbors})
		c := bhConds()
		c.NeighborSet = &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: nset}
		pol.Statements = append(pol.Statements, &api.Statement{Name: name + "-bh-send", Conditions: c, Actions: &api.Actions{
			RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT,
			Community:   &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: []string{NoExport}},
		}})
	}
	pol.Statements = append(pol.Statements, &api.Statement{Name: name + "-bh-keep", Conditions: bhConds(),
		Actions: &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_REJECT}})
	for i, a := range addrs {
		e := s.exports[a]
		nset := fmt.Sprintf("%s-n%d", name, i)
		sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: nset, List: []string{hostPrefix(a)}})
		actions := &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT}
		communities := slices.Clone(e.Communities)
		if s.drained {
			communities = append(communities, GracefulShutdown)
		}
		if len(communities) > 0 {
			actions.Community = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: communities}
		}
		if len(e.LargeCommunities) > 0 {
			actions.LargeCommunity = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: e.LargeCommunities}
		}
		if e.Prepend > 0 {
			actions.AsPrepend = &api.AsPrependAction{Asn: s.asn, Repeat: uint32(e.Prepend)}
		}
		if e.HasMED {
			actions.Med = &api.MedAction{Type: api.MedAction_TYPE_REPLACE, Value: int64(e.MED)}
		}
		// A prefix set holds one family.
		for f, ps := range splitFamilies(e.Prefixes) {
			pset := fmt.Sprintf("%s-p%d-%d", name, i, f)
			sets = append(sets, prefixSet(pset, ps))
			pol.Statements = append(pol.Statements, &api.Statement{
				Name: fmt.Sprintf("%s-s%d-%d", name, i, f),
				Conditions: &api.Conditions{
					NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: nset},
					PrefixSet:   &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: pset},
					RouteType:   api.Conditions_ROUTE_TYPE_LOCAL,
				},
				Actions: actions,
			})
		}
	}
	// The originated prefixes go nowhere else (the mesh's statement follows).
	for f, ps := range splitFamilies(s.importFilter.ownPrefixes()) {
		pset := fmt.Sprintf("%s-own-%d", name, f)
		sets = append(sets, prefixSet(pset, ps))
		pol.Statements = append(pol.Statements, &api.Statement{
			Name:       fmt.Sprintf("%s-own-%d", name, f),
			Conditions: &api.Conditions{PrefixSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: pset}, RouteType: api.Conditions_ROUTE_TYPE_LOCAL},
			Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_REJECT},
		})
	}
	return sets, pol, s.drained
}

// splitFamilies splits prefixes into IPv4 (index 0) and IPv6 (1), leaving out an
// empty family.
func splitFamilies(ps []netip.Prefix) map[int][]netip.Prefix {
	out := map[int][]netip.Prefix{}
	for _, p := range ps {
		f := 0
		if p.Addr().Is6() {
			f = 1
		}
		out[f] = append(out[f], p)
	}
	return out
}

// prefixSet matches exactly the given prefixes (no longer ones).
func prefixSet(name string, ps []netip.Prefix) *api.DefinedSet {
	d := &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: name}
	for _, p := range ps {
		d.Prefixes = append(d.Prefixes, &api.Prefix{IpPrefix: p.String(), MaskLengthMin: uint32(p.Bits()), MaskLengthMax: uint32(p.Bits())})
	}
	return d
}

// applyExport installs the export policy of the current exports in place of the
// last one: the new generation's sets and policy first, then the assignment
// swapped to it in one call, then the old generation removed.
func (s *Speaker) applyExport(ctx context.Context) error {
	s.exportMu.Lock()
	defer s.exportMu.Unlock()
	old := s.exportGen
	gen := old + 1
	sets, pol, drained := s.exportPolicy(gen)
	for _, d := range sets {
		if err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: d}); err != nil {
			return fmt.Errorf("bgp: define export set %s: %w", d.Name, err)
		}
	}
	if err := s.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: pol}); err != nil {
		return fmt.Errorf("bgp: add export policy: %w", err)
	}
	policies := []*api.Policy{{Name: pol.Name}, {Name: meshPolicyName(drained)}}
	err := s.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name:          "global",
		Direction:     api.PolicyDirection_POLICY_DIRECTION_EXPORT,
		Policies:      policies,
		DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT,
	}})
	if err != nil {
		return fmt.Errorf("bgp: set the export policy: %w", err)
	}
	s.exportGen = gen
	if old > 0 {
		// The old policy's statements and sets go with it (GoBGP deletes a policy's
		// statements; its sets are named by generation).
		if err := s.srv.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: &api.Policy{Name: fmt.Sprintf("fibfleet-export-%d", old)}, PreserveStatements: false, All: true}); err != nil {
			s.log.Warn("remove the previous export policy", "err", err)
		}
		s.deleteSets(ctx, fmt.Sprintf("fibfleet-export-%d-", old))
	}
	return nil
}

// deleteSets removes the defined sets whose names start with prefix.
func (s *Speaker) deleteSets(ctx context.Context, prefix string) {
	for _, t := range []api.DefinedType{api.DefinedType_DEFINED_TYPE_NEIGHBOR, api.DefinedType_DEFINED_TYPE_PREFIX, api.DefinedType_DEFINED_TYPE_COMMUNITY} {
		var names []string
		err := s.srv.ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: t}, func(d *api.DefinedSet) {
			if strings.HasPrefix(d.Name, prefix) {
				names = append(names, d.Name)
			}
		})
		if err != nil {
			s.log.Warn("list the previous export policy's sets", "err", err)
			continue
		}
		for _, n := range names {
			if err := s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: &api.DefinedSet{DefinedType: t, Name: n}, All: true}); err != nil {
				s.log.Warn("remove a previous export set", "set", n, "err", err)
			}
		}
	}
}
