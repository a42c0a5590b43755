package table

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/config/oc"
)

// TestNeighborView: neighbours that every neighbour condition of the export
// policy treats alike have one view, those it tells apart have different ones,
// and a policy that sets the next hop to the neighbour's address allows no view.
// The generation moves with every change.
func TestNeighborView(t *testing.T) {
	ds := oc.DefinedSets{NeighborSets: []oc.NeighborSet{
		createNeighborSet("mesh", "192.0.2.0/28"),
		createNeighborSet("upstream", "198.51.100.1"),
	}}
	mesh := createStatement("mesh", "", "mesh", true)
	upstream := createStatement("upstream", "", "upstream", false)
	r := NewRoutingPolicy(logger)
	apply := map[string]oc.ApplyPolicy{GLOBAL_RIB_NAME: {Config: oc.ApplyPolicyConfig{ExportPolicyList: []string{"export"}}}}
	require.NoError(t, r.Reset(&oc.RoutingPolicy{DefinedSets: ds, PolicyDefinitions: []oc.PolicyDefinition{createPolicyDefinition("export", upstream, mesh)}}, apply))
	gen := r.Generation()

	view := func(a string) string {
		t.Helper()
		v, ok := r.NeighborView(GLOBAL_RIB_NAME, POLICY_DIRECTION_EXPORT, netip.MustParseAddr(a))
		require.True(t, ok)
		return v
	}
	require.Equal(t, view("192.0.2.2"), view("192.0.2.3"), "two mesh neighbours")
	require.NotEqual(t, view("192.0.2.2"), view("198.51.100.1"), "a mesh neighbour and the upstream")
	require.NotEqual(t, view("192.0.2.2"), view("203.0.113.1"), "a mesh neighbour and one in no set")
	require.Equal(t, gen, r.Generation(), "read, the policy changed")

	peerAddress := createStatement("peer-address", "", "mesh", true)
	peerAddress.Actions.BgpActions.SetNextHop = "peer-address"
	require.NoError(t, r.Reset(&oc.RoutingPolicy{DefinedSets: ds, PolicyDefinitions: []oc.PolicyDefinition{createPolicyDefinition("export", peerAddress)}}, apply))
	require.NotEqual(t, gen, r.Generation(), "the policy changed, its generation did not")
	_, ok := r.NeighborView(GLOBAL_RIB_NAME, POLICY_DIRECTION_EXPORT, netip.MustParseAddr("192.0.2.2"))
	require.False(t, ok, "a next hop set to the neighbour's address, and a view")
}
