package bgp

import (
	"testing"
)

// TestValidateKeepsTheAttributeList: validating an UPDATE without a duplicate
// attribute keeps its attribute list as it is and allocates nothing for it (it
// copied the list, grown an attribute at a time, for every UPDATE); a duplicate is
// still dropped, the first of its type kept, the others in their order.
func TestValidateKeepsTheAttributeList(t *testing.T) {
	rfs := map[Family]BGPAddPathMode{RF_IPv4_UC: BGP_ADD_PATH_NONE}
	m := bgpupdate().Body.(*BGPUpdate)
	first := &m.PathAttributes[0]
	if ok, err := ValidateUpdateMsg(m, rfs, false, false, false); !ok || err != nil {
		t.Fatalf("a valid UPDATE: %v, %v", ok, err)
	}
	if len(m.PathAttributes) != 3 || &m.PathAttributes[0] != first {
		t.Errorf("a valid UPDATE's attributes were replaced by a copy (%d of them)", len(m.PathAttributes))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if ok, _ := ValidateUpdateMsg(m, rfs, false, false, false); !ok {
			t.Fatal("the UPDATE became invalid")
		}
	})
	// The mandatory attributes' list grows by NEXT_HOP: one allocation.
	if allocs > 1 {
		t.Errorf("validating an UPDATE: %.0f allocations, want at most 1", allocs)
	}

	m = bgpupdate().Body.(*BGPUpdate)
	origin, asPath, nexthop := m.PathAttributes[0], m.PathAttributes[1], m.PathAttributes[2]
	dup := NewPathAttributeOrigin(2)
	m.PathAttributes = []PathAttributeInterface{origin, asPath, dup, nexthop}
	ok, err := ValidateUpdateMsg(m, rfs, false, false, false)
	if ok || err == nil || err.(*MessageError).ErrorHandling != ERROR_HANDLING_ATTRIBUTE_DISCARD {
		t.Fatalf("a duplicate ORIGIN: %v, %v, want attribute discard", ok, err)
	}
	want := []PathAttributeInterface{origin, asPath, nexthop}
	if len(m.PathAttributes) != len(want) {
		t.Fatalf("attributes after the duplicate was dropped: %v, want %v", m.PathAttributes, want)
	}
	for i := range want {
		if m.PathAttributes[i] != want[i] {
			t.Errorf("attribute %d is %v, want %v", i, m.PathAttributes[i], want[i])
		}
	}
}
