package bgp

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestUpdateDecodeListsMadeToSize: an UPDATE decodes into lists made to size (its
// attributes, its NLRI, its withdrawn routes) with no map of its attribute types:
// the lists grew by doubling (an UPDATE of 5 attributes kept a list of 8, 128
// bytes, in the table for as long as its paths, after 3 allocations more), the
// withdrawn routes' list was made as long as the field's bytes, and the types were
// a map made for every UPDATE decoded or serialized. The UPDATE decodes and
// serializes to the same bytes as before.
func TestUpdateDecodeListsMadeToSize(t *testing.T) {
	nh, err := NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	attrs := []PathAttributeInterface{
		NewPathAttributeOrigin(0),
		NewPathAttributeAsPath([]AsPathParamInterface{NewAs4PathParam(BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{65001, 3356, 174, 200000})}),
		nh,
		NewPathAttributeLocalPref(100),
		NewPathAttributeCommunities([]uint32{65001<<16 | 1, 3356<<16 | 2, 174<<16 | 3}),
	}
	prefixes := func(first string, n int) []PathNLRI {
		var out []PathNLRI
		a := netip.MustParseAddr(first).As4()
		for i := range n {
			a[2] = byte(i)
			p, err := NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4(a), 24))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, PathNLRI{NLRI: p})
		}
		return out
	}
	withdrawn, nlri := prefixes("198.51.0.0", 3), prefixes("203.0.0.0", 5)
	wire, err := NewBGPUpdateMessage(withdrawn, attrs, nlri).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	body := wire[BGP_HEADER_LENGTH:]

	var u BGPUpdate
	if err := u.DecodeFromBytes(body); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		name     string
		len, cap int
	}{
		{"attributes", len(u.PathAttributes), cap(u.PathAttributes)},
		{"NLRI", len(u.NLRI), cap(u.NLRI)},
		{"withdrawn routes", len(u.WithdrawnRoutes), cap(u.WithdrawnRoutes)},
	} {
		if l.cap != l.len {
			t.Errorf("the %s: %d held in a list of %d, want it made to size", l.name, l.len, l.cap)
		}
	}
	if len(u.PathAttributes) != len(attrs) || len(u.NLRI) != len(nlri) || len(u.WithdrawnRoutes) != len(withdrawn) {
		t.Fatalf("decoded %d attributes, %d NLRI, %d withdrawn: want %d, %d, %d",
			len(u.PathAttributes), len(u.NLRI), len(u.WithdrawnRoutes), len(attrs), len(nlri), len(withdrawn))
	}
	again, err := (&BGPMessage{Header: BGPHeader{Type: BGP_MSG_UPDATE}, Body: &u}).Serialize()
	if err != nil || !bytes.Equal(again, wire) {
		t.Fatalf("the decoded UPDATE serializes to other bytes (%v)", err)
	}

	// Every object the decoder makes: the lists, the option that carries the
	// attribute types, the attributes and their parts, the prefixes: 29 here;
	// with the map and the lists grown by doubling, 37.
	allocs := testing.AllocsPerRun(100, func() {
		var u BGPUpdate
		if err := u.DecodeFromBytes(body); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("an UPDATE of %d attributes, %d prefixes and %d withdrawn: %.0f allocations to decode", len(attrs), len(nlri), len(withdrawn), allocs)
	if allocs > 30 {
		t.Errorf("%.0f allocations to decode an UPDATE, want at most 30 (37 with the map and the lists grown by doubling)", allocs)
	}
}
