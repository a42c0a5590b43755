package table

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestClonedPathAttrsWithoutMap: listing the attributes of a clone that set and
// deleted some (an iBGP neighbour's copy of a path gets a LOCAL_PREF; every UPDATE
// packed for it lists them twice or three times) makes the list alone, and lists
// them as before: the clone's replacing the original's, a deleted one left out, a new
// one in type order.
func TestClonedPathAttrsWithoutMap(t *testing.T) {
	nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix("192.0.2.0/24"))
	require.NoError(t, err)
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("198.51.100.1"))
	require.NoError(t, err)
	origin := bgp.NewPathAttributeOrigin(0)
	asPath := bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{64500, 64501})})
	med := bgp.NewPathAttributeMultiExitDisc(10)
	comms := bgp.NewPathAttributeCommunities([]uint32{64500<<16 | 1})
	path := NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false,
		[]bgp.PathAttributeInterface{origin, asPath, nh, med, comms}, time.Now(), false)

	clone := path.Clone(false)
	lp := bgp.NewPathAttributeLocalPref(100)
	clone.setPathAttr(lp)
	clone.delPathAttr(bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC)
	grand := clone.Clone(false)
	nh2, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("198.51.100.2"))
	require.NoError(t, err)
	grand.setPathAttr(nh2)

	require.Equal(t, []bgp.PathAttributeInterface{origin, asPath, nh2, lp, comms}, grand.GetPathAttrs())
	require.Equal(t, []bgp.PathAttributeInterface{origin, asPath, nh, lp, comms}, clone.GetPathAttrs())
	require.Equal(t, []bgp.PathAttributeInterface{origin, asPath, nh, med, comms}, path.GetPathAttrs())

	allocs := testing.AllocsPerRun(100, func() { _ = grand.GetPathAttrs() })
	require.LessOrEqual(t, allocs, 1.0, "allocations to list a clone's attributes (the list is one)")
}
