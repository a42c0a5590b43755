package table

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestPathKeepsNoNLRIText: a path costs its Path and origin info alone (no cached
// text of its NLRI: 16 bytes of text and a 16-byte header more per path, the origin
// info a size class larger); its destination's key needs none either, equal for
// equal prefixes, apart for other families and lengths, and the text for NLRI that
// are not IP prefixes.
func TestPathKeepsNoNLRIText(t *testing.T) {
	const n = 100000
	nlris := make([]bgp.PathNLRI, n)
	for i := range nlris {
		a := netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0})
		nlri, _ := bgp.NewIPAddrPrefix(netip.PrefixFrom(a, 24))
		nlris[i] = bgp.PathNLRI{NLRI: nlri}
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0)}
	paths := make([]*Path, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range paths {
		paths[i] = NewPath(bgp.RF_IPv4_UC, nil, nlris[i], false, attrs, time.Now(), false)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPath := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(paths)
	t.Logf("%.1f bytes per path", perPath)
	if perPath > 150 {
		t.Errorf("a path costs %.1f bytes beside its NLRI; want at most 150 (Path 96, origin info 48)", perPath)
	}

	p := paths[0]
	if allocs := testing.AllocsPerRun(100, func() { p.GetDestLocalKey() }); allocs != 0 {
		t.Errorf("a destination's key costs %.0f allocations", allocs)
	}
	same, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("0.0.0.0/24"))
	other, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("0.0.0.0/23"))
	keyOf := func(f bgp.Family, nlri bgp.NLRI) PathDestLocalKey {
		return NewPath(f, nil, bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false).GetDestLocalKey()
	}
	if keyOf(bgp.RF_IPv4_UC, same) != p.GetDestLocalKey() {
		t.Error("two paths of one prefix have different keys")
	}
	if keyOf(bgp.RF_IPv4_UC, other) == p.GetDestLocalKey() || keyOf(bgp.RF_IPv4_MC, same) == p.GetDestLocalKey() {
		t.Error("another length or family has the same key")
	}
	if k := *NewPathDestLocalKey(bgp.RF_IPv4_UC, "0.0.0.0/24"); k != p.GetDestLocalKey() {
		t.Errorf("the key of the prefix's text %+v, want the path's %+v", k, p.GetDestLocalKey())
	}
	rt := bgp.NewRouteTargetMembershipNLRI(65000, nil)
	if k := keyOf(bgp.RF_RTC_UC, rt); k.Prefix != rt.String() {
		t.Errorf("an RTC NLRI's key %+v, want its text", k)
	}
}
