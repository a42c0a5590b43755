package fib

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// VLAN devices cannot be created on every test kernel (no 8021q module), so the
// mapping from a link to the XDP egress port is tested on netlink's own structs.
func TestEgressPort(t *testing.T) {
	cases := []struct {
		name     string
		link     netlink.Link
		ifindex  uint32
		vlan     uint16
		wantsErr bool
	}{
		{"plain", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Index: 7}}, 7, 0, false},
		{"802.1Q sub-interface leaves on its parent", &netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Index: 9, ParentIndex: 3}, VlanId: 100, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}, 3, 100, false},
		{"802.1ad is the kernel's", &netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Index: 9, ParentIndex: 3}, VlanId: 100, VlanProtocol: netlink.VLAN_PROTOCOL_8021AD}, 0, 0, true},
		{"parent unknown (another namespace)", &netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Index: 9}, VlanId: 100, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}, 0, 0, true},
	}
	for _, c := range cases {
		ifindex, vlan, err := egressPort(c.link)
		if (err != nil) != c.wantsErr || ifindex != c.ifindex || vlan != c.vlan {
			t.Errorf("%s: got ifindex %d vlan %d err %v; want %d %d err=%v", c.name, ifindex, vlan, err, c.ifindex, c.vlan, c.wantsErr)
		}
	}
}
