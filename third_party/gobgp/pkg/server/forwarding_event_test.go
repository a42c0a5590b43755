package server

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestForwardingEventReadsThePaths: a forwarding event is read from the RIB's paths
// (their next hops, neighbour, AS path and communities, the attributes themselves,
// not copies), and a destination with a best path alone costs its event no
// allocation: a full table's load sends a million of them.
func TestForwardingEventReadsThePaths(t *testing.T) {
	nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix("2001:db8:1::/48"))
	require.NoError(t, err)
	path := func(peer, nexthop, linkLocal string, as uint32) (*table.Path, *bgp.PathAttributeAsPath, *bgp.PathAttributeCommunities) {
		asPath := bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{as, 64999})})
		comms := bgp.NewPathAttributeCommunities([]uint32{65535<<16 | 666})
		hops := []netip.Addr{netip.MustParseAddr(nexthop)}
		if linkLocal != "" {
			hops = append(hops, netip.MustParseAddr(linkLocal))
		}
		mp, err := bgp.NewPathAttributeMpReachNLRI(bgp.RF_IPv6_UC, []bgp.PathNLRI{{NLRI: nlri}}, hops...)
		require.NoError(t, err)
		src := &table.PeerInfo{AS: as, Address: netip.MustParseAddr(peer)}
		attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), asPath, mp, comms}
		return table.NewPath(bgp.RF_IPv6_UC, src, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false), asPath, comms
	}
	best, asPath, comms := path("2001:db8::2", "2001:db8::2", "fe80::2", 65002)
	backup, _, _ := path("2001:db8::3", "2001:db8::3", "", 65003)

	f := toForwarding(table.Forwarding{Best: best, Backup: backup})
	require.Equal(t, bgp.RF_IPv6_UC, f.Family)
	require.Same(t, nlri, f.Nlri.(*bgp.IPAddrPrefix), "the RIB's NLRI")
	require.False(t, f.Withdrawn)
	require.Equal(t, apiutil.ForwardingPath{
		Nexthop: netip.MustParseAddr("2001:db8::2"), LinkLocalNexthop: netip.MustParseAddr("fe80::2"),
		PeerAddress: netip.MustParseAddr("2001:db8::2"), PeerASN: 65002,
		ASPath: asPath, Communities: comms.Value,
	}, f.Best)
	require.Same(t, asPath, f.Best.ASPath, "the path's attribute, not a copy")
	require.Same(t, &comms.Value[0], &f.Best.Communities[0], "the path's communities, not a copy")
	require.NotNil(t, f.Backup)
	require.Equal(t, netip.MustParseAddr("2001:db8::3"), f.Backup.Nexthop)
	require.False(t, f.Backup.LinkLocalNexthop.IsValid())
	require.Empty(t, f.Multipath)

	allocs := testing.AllocsPerRun(100, func() { f = toForwarding(table.Forwarding{Best: best}) })
	require.Zero(t, allocs, "allocations for a destination's event with a best path alone")
}
