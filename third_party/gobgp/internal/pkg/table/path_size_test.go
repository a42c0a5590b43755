package table

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestPathSize: a received path and its origin are one object of 96 bytes (a full
// table's every neighbour holds one per prefix; they were 96 and 48 apart), and what
// moved into it still works: a clone reads and marks its root's origin, a clone
// deletes attributes without touching its parent's, and listing a received path's
// attributes costs the list alone.
func TestPathSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Path{}), uintptr(96), "a Path's size")

	nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix("192.0.2.0/24"))
	require.NoError(t, err)
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.0.0.1"))
	require.NoError(t, err)
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeMultiExitDisc(5), nh}
	src := &PeerInfo{AS: 65001, Address: netip.MustParseAddr("10.0.0.1")}
	at := time.Unix(1_800_000_000, 0)
	var p *Path
	allocs := testing.AllocsPerRun(100, func() {
		p = NewPath(bgp.RF_IPv4_UC, src, bgp.PathNLRI{NLRI: nlri}, false, attrs, at, false)
	})
	assert.Equal(t, 1.0, allocs, "allocations for a received path")
	assert.Equal(t, at, p.GetTimestamp())
	assert.Same(t, src, p.GetSource())

	c := p.Clone(false)
	assert.Same(t, p.OriginInfo(), c.OriginInfo(), "a clone's origin is its root's")
	c.MarkStale(true)
	assert.True(t, p.IsStale(), "marked through the clone")
	c.delPathAttr(bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC)
	assert.Nil(t, c.getPathAttr(bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC), "deleted in the clone")
	assert.NotNil(t, p.getPathAttr(bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC), "kept in the parent")
	assert.Len(t, c.GetPathAttrs(), 2)
	assert.Len(t, p.GetPathAttrs(), 3)

	allocs = testing.AllocsPerRun(100, func() { _ = p.GetPathAttrs() })
	assert.Equal(t, 1.0, allocs, "allocations to list a received path's attributes")
}
