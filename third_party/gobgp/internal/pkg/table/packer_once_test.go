package table

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestPackerSerializesAttributesOnce: packing a path for an UPDATE serializes its
// attributes once, for its batching key and for telling paths apart (twice before,
// each time into a new buffer), and the key is the hash updateHash gives.
func TestPackerSerializesAttributesOnce(t *testing.T) {
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
	require.NoError(t, err)
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{65001, 65002, 65003})}),
		nh,
		bgp.NewPathAttributeMultiExitDisc(10),
		bgp.NewPathAttributeLocalPref(100),
		bgp.NewPathAttributeCommunities([]uint32{0xfde80001, 0xfde80002}),
	}
	path := func(i int) *Path {
		nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
		require.NoError(t, err)
		return NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)
	}

	// The key is updateHash's, and paths with the same attributes share an UPDATE.
	a, b := path(1), path(2)
	want := path(3).GetHash()
	msgs := CreateUpdateMsgFromPaths([]*Path{a, b})
	require.Len(t, msgs, 1)
	require.Len(t, msgs[0].Body.(*bgp.BGPUpdate).NLRI, 2)
	require.Equal(t, want, a.attrsHash.Load(), "the key packing stored")

	// A path without a hash yet (a clone made for a peer) added beside a batch
	// with its attributes: the serializations, the key and nothing else.
	p := newPackerV4(bgp.RF_IPv4_UC)
	p.add(path(4))
	c := path(5)
	allocs := testing.AllocsPerRun(100, func() {
		c.attrsHash.Store(0)
		p.add(c)
	})
	serialize := testing.AllocsPerRun(100, func() {
		for _, v := range c.GetPathAttrs() {
			_, _ = v.Serialize()
		}
	})
	t.Logf("add: %.0f allocations; serializing the attributes once: %.0f", allocs, serialize)
	require.LessOrEqual(t, allocs, serialize+2, "allocations to add a path to the packer")
	require.Equal(t, want, c.attrsHash.Load())
}
