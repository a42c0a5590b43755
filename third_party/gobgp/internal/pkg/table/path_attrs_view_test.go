package table

import (
	"net/netip"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestPathAttrsViewWithoutAllocation: a received path's attributes are read
// (PathAttrsView, and Equal, which compares two paths' lists) without building a
// list, as GetPathAttrs lists them; a clone's and a path with an attribute
// deleted are built as before; appending to a view never writes into the
// path's own list.
func TestPathAttrsViewWithoutAllocation(t *testing.T) {
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{65001, 65002})}),
		nh,
		bgp.NewPathAttributeLocalPref(100),
	}
	source := &PeerInfo{AS: 65001, Address: netip.MustParseAddr("192.0.2.1")}
	path := func(p string) *Path {
		nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(p))
		// Room past the attributes, as a decoded UPDATE's list may have.
		return NewPath(bgp.RF_IPv4_UC, source, bgp.PathNLRI{NLRI: nlri}, false, append(make([]bgp.PathAttributeInterface, 0, 8), attrs...), time.Now(), false)
	}
	a, b := path("10.0.0.0/24"), path("10.0.0.0/24")

	if got, want := a.PathAttrsView(), a.GetPathAttrs(); len(got) != len(want) || got[1] != want[1] || got[3] != want[3] {
		t.Fatalf("view %v, GetPathAttrs %v", got, want)
	}
	if !a.Equal(b) {
		t.Fatal("two received paths with the same attributes and source are not Equal")
	}
	if a.Equal(path("10.0.1.0/24")) || a.Equal(path("10.0.0.0/25")) {
		t.Fatal("paths to other prefixes with the same attributes are Equal")
	}
	if n := testing.AllocsPerRun(100, func() { a.PathAttrsView() }); n != 0 {
		t.Errorf("PathAttrsView of a received path: %.0f allocations, want none", n)
	}
	if n := testing.AllocsPerRun(100, func() { a.Equal(b) }); n != 0 {
		t.Errorf("Equal of two received paths: %.0f allocations, want none", n)
	}

	// A clone that sets an attribute, and a path with one deleted: built.
	c := a.Clone(false)
	c.setPathAttr(bgp.NewPathAttributeLocalPref(200))
	if v := c.PathAttrsView(); len(v) != 4 || v[3].(*bgp.PathAttributeLocalPref).Value != 200 {
		t.Errorf("a clone's view %v, want its own LOCAL_PREF 200", v)
	}
	if a.Equal(c) {
		t.Error("a path and its clone with another LOCAL_PREF are Equal")
	}
	d := path("10.0.1.0/24")
	d.RemoveLocalPref()
	if v := d.PathAttrsView(); len(v) != 3 {
		t.Errorf("a path whose LOCAL_PREF was deleted: view %v, want 3 attributes", v)
	}

	// Appending to a view copies it: the path's list has room past its end.
	v := a.PathAttrsView()
	if cap(v) != len(v) {
		t.Errorf("a view has room to append into the path's own list (len %d, cap %d)", len(v), cap(v))
	}
	w := append(v, bgp.NewPathAttributeMultiExitDisc(5))
	if &w[0] == &v[0] {
		t.Error("an append to a view wrote into the path's own list")
	}
}
