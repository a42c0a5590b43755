package server

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestSentRecordIPv4Bits: the record of the IPv4 prefixes a peer without add-path
// send was sent costs a few bits a prefix, not a map entry (24 to 38 bytes: 29 MB
// for each peer sent a full table), and reads as a set of prefixes would: every
// length from /0 to /32, the same prefix with other host bits the same, sent,
// withdrawn and sent again in any order.
func TestSentRecordIPv4Bits(t *testing.T) {
	p := newPeerandInfo(t, 65001, 65001, "10.0.0.1", table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC}))
	p.fsm.familyMap.Store(map[bgp.Family]bgp.BGPAddPathMode{bgp.RF_IPv4_UC: bgp.BGP_ADD_PATH_NONE})
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.254"))
	require.NoError(t, err)
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}
	// path is addr/bits as given, host bits included.
	path := func(addr uint32, bits int) *table.Path {
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}), bits)
		nlri, err := bgp.NewIPAddrPrefix(prefix)
		require.NoError(t, err)
		return table.NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)
	}

	// As a table's /24s are: in runs, here every other /24 from 1.0.0.0.
	const n = 250_000
	paths := make([]*table.Path, n)
	for i := range paths {
		paths[i] = path(1<<24+uint32(2*i)<<8, 24)
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC() // what the first freed to pools goes with the second
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	p.updateRoutes(paths...)
	perPrefix := float64(heap()-before) / n
	runtime.KeepAlive(paths)
	t.Logf("the record of %d IPv4 /24s sent: %.2f bytes a prefix", n, perPrefix)
	require.Less(t, perPrefix, 4.0, "bytes a prefix in the record of what was sent (a map of 64-bit keys: 24 to 38)")
	for _, i := range []int{0, 1, n / 2, n - 1} {
		require.True(t, p.hasPathAlreadyBeenSent(paths[i]), paths[i].GetPrefix())
	}
	require.False(t, p.hasPathAlreadyBeenSent(path(1<<24+1<<8, 24)), "a /24 between two sent")
	require.False(t, p.hasPathAlreadyBeenSent(path(1<<24, 23)), "the /23 covering a sent /24")
	p.resetAdvertisedRoutes()
	require.False(t, p.hasPathAlreadyBeenSent(paths[0]), "the session ended")

	// Sends and withdrawals at random against a map: every length, each prefix's
	// network from a few addresses (so that the same prefixes come again, sent and
	// withdrawn in turn, at every length), its host bits at random.
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]uint32, 8)
	for i := range pool {
		pool[i] = rng.Uint32()
	}
	type key struct {
		addr uint32
		bits int
	}
	host := func(bits int) uint32 { return uint32(uint64(1)<<(32-bits) - 1) }
	want := map[key]bool{}
	withdrawn := map[int]int{} // by length: withdrawals of a prefix sent before
	for range 40_000 {
		bits := rng.IntN(33)
		network := pool[rng.IntN(len(pool))] &^ host(bits)
		k := key{network, bits}
		pa := path(network|rng.Uint32()&host(bits), bits)
		if rng.IntN(3) == 0 {
			if want[k] {
				withdrawn[bits]++
			}
			p.updateRoutes(pa.Clone(true))
			want[k] = false
		} else {
			p.updateRoutes(pa)
			want[k] = true
		}
	}
	for _, bits := range []int{0, 12, 13, 24, 25, 32} {
		require.Positive(t, withdrawn[bits], "no prefix of /%d withdrawn after it was sent: the draw tests less than it says", bits)
	}
	for k, sent := range want {
		// Asked with other host bits than any it was sent with.
		pa := path(k.addr|rng.Uint32()&host(k.bits), k.bits)
		require.Equal(t, sent, p.hasPathAlreadyBeenSent(pa), "%v/%d", k.addr, k.bits)
		var c uint8
		if sent {
			c = 1
		}
		require.Equal(t, c, p.getRoutesCount(bgp.RF_IPv4_UC, pa.GetPrefix()))
	}
}
