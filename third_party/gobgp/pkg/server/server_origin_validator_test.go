package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestOriginValidatorOption: with an OriginValidator, the import policy's
// rpki-validation-result condition takes the embedder's answer, not the ROA table's
// (which is empty here and would say nothing): a path it says is invalid is
// rejected, the others are imported.
func TestOriginValidatorOption(t *testing.T) {
	ctx := context.Background()
	invalid := func(_ bgp.Family, nlri bgp.NLRI, _ []bgp.PathAttributeInterface) oc.RpkiValidationResultType {
		if nlri.String() == "198.51.100.0/24" {
			return oc.RPKI_VALIDATION_RESULT_TYPE_INVALID
		}
		return oc.RPKI_VALIDATION_RESULT_TYPE_VALID
	}
	s := NewBgpServer(OriginValidatorOption(invalid))
	go s.Serve()
	require.NoError(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "1.1.1.1", ListenPort: -1}}))
	t.Cleanup(func() { require.NoError(t, s.StopBgp(ctx, &api.StopBgpRequest{})) })
	require.NoError(t, s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: "rov", Statements: []*api.Statement{{
		Name:       "reject-invalid",
		Conditions: &api.Conditions{RpkiResult: api.ValidationState_VALIDATION_STATE_INVALID},
		Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_REJECT},
	}}}}))
	require.NoError(t, s.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: table.GLOBAL_RIB_NAME, Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT, Policies: []*api.Policy{{Name: "rov"}},
		DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT,
	}}))
	p := newPeerandInfo(t, 65001, 65002, "10.0.0.2", s.globalRib)
	p.policy = s.policy
	inRIB := func(prefix string) bool {
		for _, path := range s.globalRib.GetPathList(table.GLOBAL_RIB_NAME, 0, []bgp.Family{bgp.RF_IPv4_UC}) {
			if path.GetNlri().String() == prefix {
				return true
			}
		}
		return false
	}
	from := func(path *table.Path) *table.Path {
		return table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: path.GetNlri()}, false, path.GetPathAttrs(), path.GetTimestamp(), false)
	}
	s.propagateUpdate(p, []*table.Path{from(makePath(t, "192.0.2.0/24", "10.0.0.2", 0)), from(makePath(t, "198.51.100.0/24", "10.0.0.2", 0))})
	require.True(t, inRIB("192.0.2.0/24"), "a path the validator calls valid is imported")
	require.False(t, inRIB("198.51.100.0/24"), "a path the validator calls invalid is rejected by the rpki condition")
}
