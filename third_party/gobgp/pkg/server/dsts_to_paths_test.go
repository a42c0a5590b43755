package server

import (
	"net/netip"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestDstsToPathsOneAllocation: the lists of a path's destination (the best and
// the previous best paths; no multipath) cost one allocation, not five, and hold
// what they did: the new best, then after a better path the new and the old.
func TestDstsToPathsOneAllocation(t *testing.T) {
	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p1 := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	p2 := newPeerandInfo(t, 65000, 65002, "192.168.0.2", rib)
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.10.0.0/24"))
	path := func(p *peer, asPath ...uint32) *table.Path {
		nh, _ := bgp.NewPathAttributeNextHop(p.peerInfo.Load().Address)
		attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, asPath)}), nh}
		return table.NewPath(bgp.RF_IPv4_UC, p.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)
	}
	long := path(p1, 65001, 65100, 65200)
	dsts := rib.Update(long)
	best, old, mpath, mu, mw := dstsToPaths(table.GLOBAL_RIB_NAME, 0, dsts)
	if len(best) != 1 || best[0] != long || len(old) != 1 || old[0] != nil || len(mpath) != 0 || len(mu) != 0 || len(mw) != 0 {
		t.Fatalf("first path: best %v, old %v, multipath %v %v %v", best, old, mpath, mu, mw)
	}
	short := path(p2, 65002)
	dsts = rib.Update(short)
	best, old, _, _, _ = dstsToPaths(table.GLOBAL_RIB_NAME, 0, dsts)
	if len(best) != 1 || best[0] != short || len(old) != 1 || old[0] != long {
		t.Fatalf("a better path: best %v, old %v, want %v and %v", best, old, short, long)
	}
	if n := testing.AllocsPerRun(100, func() { dstsToPaths(table.GLOBAL_RIB_NAME, 0, dsts) }); n != 1 {
		t.Errorf("dstsToPaths of one destination: %.0f allocations, want 1", n)
	}
}
