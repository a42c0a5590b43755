package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v4/api"
)

// ImportActions change what a neighbour's accepted routes carry: a local preference
// (the node prefers one upstream's paths to another's) and communities added (to tag
// where a route entered, for the operator's own policy). They are GoBGP import
// policy: one statement per neighbour, conditioned on a neighbour set of that
// neighbour alone, in one global policy that a change replaces whole (as the export
// policy, export.go), then a soft reset in of the neighbour.
type ImportActions struct {
	// LocalPref, when not 0, replaces the routes' local preference.
	LocalPref                     uint32
	Communities, LargeCommunities []string
}

// Validate reports bad communities.
func (a *ImportActions) Validate() error {
	e := Export{Communities: a.Communities, LargeCommunities: a.LargeCommunities}
	return e.Validate(nil)
}

func (a *ImportActions) empty() bool {
	return a == nil || a.LocalPref == 0 && len(a.Communities) == 0 && len(a.LargeCommunities) == 0
}

// importPolicy is the import policy of generation gen for the current actions, with
// the neighbour sets it uses; nil when no neighbour has actions and invalid routes
// keep their preference. Each statement changes the route and goes on to the next
// (the default is to accept): the neighbour's actions first, then the lower local
// preference of an RPKI-invalid route (SetOriginValidation), which so has the last
// word.
func (s *Speaker) importPolicy(gen int) ([]*api.DefinedSet, *api.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs := make([]netip.Addr, 0, len(s.importActions))
	for a := range s.importActions {
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 && s.invalidPref == 0 {
		return nil, nil
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	name := fmt.Sprintf("fibfleet-import-%d", gen)
	pol := &api.Policy{Name: name}
	var sets []*api.DefinedSet
	for i, a := range addrs {
		act := s.importActions[a]
		nset := fmt.Sprintf("%s-n%d", name, i)
		sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: nset, List: []string{hostPrefix(a)}})
		actions := &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_UNSPECIFIED}
		if act.LocalPref != 0 {
			actions.LocalPref = &api.LocalPrefAction{Value: act.LocalPref}
		}
		if len(act.Communities) > 0 {
			actions.Community = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: act.Communities}
		}
		if len(act.LargeCommunities) > 0 {
			actions.LargeCommunity = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: act.LargeCommunities}
		}
		pol.Statements = append(pol.Statements, &api.Statement{Name: fmt.Sprintf("%s-s%d", name, i),
			Conditions: &api.Conditions{NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: nset}}, Actions: actions})
	}
	if s.invalidPref != 0 {
		pol.Statements = append(pol.Statements, &api.Statement{Name: name + "-rpki-invalid",
			Conditions: &api.Conditions{RpkiResult: api.ValidationState_VALIDATION_STATE_INVALID},
			Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_UNSPECIFIED, LocalPref: &api.LocalPrefAction{Value: s.invalidPref}}})
	}
	return sets, pol
}

// applyImport installs the import policy of the current actions in place of the last
// one (none while no neighbour has actions: GoBGP then runs no import policy at all).
func (s *Speaker) applyImport(ctx context.Context) error {
	s.exportMu.Lock() // one policy change at a time
	defer s.exportMu.Unlock()
	old := s.importGen
	gen := old + 1
	sets, pol := s.importPolicy(gen)
	var policies []*api.Policy
	if pol != nil {
		for _, d := range sets {
			if err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: d}); err != nil {
				return fmt.Errorf("bgp: define import set %s: %w", d.Name, err)
			}
		}
		if err := s.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: pol}); err != nil {
			return fmt.Errorf("bgp: add import policy: %w", err)
		}
		policies = []*api.Policy{{Name: pol.Name}}
	}
	err := s.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT, Policies: policies, DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT,
	}})
	if err != nil {
		return fmt.Errorf("bgp: set the import policy: %w", err)
	}
	s.importGen = gen
	if old > 0 && s.importHad {
		if err := s.srv.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: &api.Policy{Name: fmt.Sprintf("fibfleet-import-%d", old)}, All: true}); err != nil {
			s.log.Warn("remove the previous import policy", "err", err)
		}
		s.deleteSets(ctx, fmt.Sprintf("fibfleet-import-%d-", old))
	}
	s.importHad = pol != nil
	return nil
}
