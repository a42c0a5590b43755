package server

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestSentRecordBytesPerPrefix: what a peer without add-path send was sent costs a
// few bytes a prefix (an edge router's iBGP peers are each sent a full table, 1.17M
// IPv4 prefixes), and reads as before for IPv4 and IPv6: sent once, gone with its
// withdrawal and with the session.
func TestSentRecordBytesPerPrefix(t *testing.T) {
	p := newPeerandInfo(t, 65001, 65001, "10.0.0.1", table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC, bgp.RF_IPv6_UC}))
	p.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: bgp.BGP_ADD_PATH_NONE, bgp.RF_IPv6_UC: bgp.BGP_ADD_PATH_NONE})

	const n = 100_000
	paths := make([]*table.Path, n)
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.254"))
	require.NoError(t, err)
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}
	for i := range paths {
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
		nlri, err := bgp.NewIPAddrPrefix(prefix)
		require.NoError(t, err)
		paths[i] = table.NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)
	}
	// The heap held still: servers of the tests before this one may still be
	// winding down, and what they free between two readings was read as less
	// than nothing.
	heap := func() uint64 {
		var last uint64
		for i := range 50 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if i > 0 && max(m.HeapAlloc, last)-min(m.HeapAlloc, last) < 64<<10 {
				return m.HeapAlloc
			}
			last = m.HeapAlloc
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the heap did not hold still within a second")
		return 0
	}
	before := heap()
	p.updateRoutes(paths...)
	grown := int64(heap()) - int64(before)
	require.Positive(t, grown, "the heap shrank while the record was made: something else freed memory meanwhile")
	perPrefix := float64(grown) / n
	runtime.KeepAlive(paths)
	t.Logf("the record of %d IPv4 prefixes sent: %.1f bytes a prefix", n, perPrefix)
	// A sync.Map entry per prefix was about 150 bytes.
	require.Less(t, perPrefix, 40.0, "bytes a prefix in the record of what was sent")

	v6nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix("2001:db8:1::/48"))
	require.NoError(t, err)
	mp, err := bgp.NewPathAttributeMpReachNLRI(bgp.RF_IPv6_UC, []bgp.PathNLRI{{NLRI: v6nlri}}, netip.MustParseAddr("2001:db8::1"))
	require.NoError(t, err)
	v6 := table.NewPath(bgp.RF_IPv6_UC, nil, bgp.PathNLRI{NLRI: v6nlri}, false, []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), mp}, time.Now(), false)
	require.False(t, p.hasPathAlreadyBeenSent(v6))
	p.updateRoutes(v6)

	for _, path := range []*table.Path{paths[0], paths[n-1], v6} {
		require.True(t, p.hasPathAlreadyBeenSent(path), path.GetPrefix())
		require.Equal(t, uint8(1), p.getRoutesCount(path.GetFamily(), path.GetPrefix()), path.GetPrefix())
	}
	p.updateRoutes(paths[0].Clone(true), v6.Clone(true))
	require.False(t, p.hasPathAlreadyBeenSent(paths[0]), "withdrawn")
	require.False(t, p.hasPathAlreadyBeenSent(v6), "withdrawn")
	require.Zero(t, p.getRoutesCount(bgp.RF_IPv6_UC, v6.GetPrefix()))
	require.True(t, p.hasPathAlreadyBeenSent(paths[1]), "another prefix kept")

	p.resetAdvertisedRoutes()
	require.False(t, p.hasPathAlreadyBeenSent(paths[1]), "the session ended")
}
