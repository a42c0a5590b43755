package dataplane

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
)

// testSeed is the test dataplane's flow-hash seed: not 0, so a program that ignored
// it would pick other members than FlowHash predicts.
const testSeed = 0x5eed

var altMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x05} // the second member's neighbour

// flowFrame is a test frame to dst rewritten for one flow: its source, protocol,
// ports and (IPv4) fragment bits.
func flowFrame(fl Flow) []byte {
	if fl.Dst.Is4() {
		b := frame(frameOpts{dst: fl.Dst})
		ip := b[14:]
		copy(ip[12:16], fl.Src.AsSlice())
		ip[9] = fl.Proto
		if fl.Fragment {
			binary.BigEndian.PutUint16(ip[6:], 0x2000) // more fragments
		}
		binary.BigEndian.PutUint16(ip[20:], fl.Sport)
		binary.BigEndian.PutUint16(ip[22:], fl.Dport)
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip[:20]))
		return b
	}
	b := frame6(frame6Opts{dst: fl.Dst.String(), nextHdr: fl.Proto})
	ip := b[14:]
	copy(ip[8:24], fl.Src.AsSlice())
	binary.BigEndian.PutUint16(ip[40:], fl.Sport)
	binary.BigEndian.PutUint16(ip[42:], fl.Dport)
	return b
}

// TestNexthopGroup: routes to a group of two members. Each flow (TCP and UDP by
// 5-tuple; other protocols and IPv4 fragments by 3-tuple; both families) takes the
// member FlowHash predicts with the node's seed, and both members carry flows; a
// fragment's ports do not move it. The group rewritten to one member sends every flow
// there; with no usable member its traffic passes to the kernel, counted no_member.
func TestNexthopGroup(t *testing.T) {
	d := testDataplane(t)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.SetNexthop(7, Nexthop{Ifindex: uint32(lo.Index), SrcMAC: egMAC, DstMAC: gwMAC, MTU: 1500, Resolved: true}))
	must(d.SetNexthop(8, Nexthop{Ifindex: uint32(lo.Index), SrcMAC: egMAC, DstMAC: altMAC, MTU: 1500, Resolved: true}))
	var g NexthopGroup
	for i := range g.Buckets {
		g.Buckets[i] = uint16(7 + i%2)
	}
	must(d.SetGroup(9, g))
	installRoutes(t, d, []testRoute{{"10.99.0.0/16", 9}})
	installRoutes6(t, d, []testRoute{{"2001:db8:900::/48", 9}})

	member := func(fl Flow) uint16 {
		t.Helper()
		ret, out := run(t, d, flowFrame(fl))
		if ret != xdpRedirect {
			t.Fatalf("%+v: action %d, want redirect", fl, ret)
		}
		switch {
		case bytes.Equal(out[:6], gwMAC):
			return 7
		case bytes.Equal(out[:6], altMAC):
			return 8
		}
		t.Fatalf("%+v: sent to %x, neither member's MAC", fl, out[:6])
		return 0
	}
	dst4, dst6 := netip.MustParseAddr("10.99.1.2"), netip.MustParseAddr("2001:db8:900::2")
	var flows []Flow
	for i := range 64 {
		src4 := netip.AddrFrom4([4]byte{10, 8, byte(i >> 8), byte(i)})
		src6 := netip.MustParseAddr(fmt.Sprintf("2001:db8:eeee::%x", i+1))
		for _, proto := range []uint8{6, 17, 1} {
			flows = append(flows,
				Flow{Src: src4, Dst: dst4, Proto: proto, Sport: uint16(1000 + i), Dport: 443},
				Flow{Src: src6, Dst: dst6, Proto: proto, Sport: uint16(1000 + i), Dport: 443})
		}
		flows = append(flows, Flow{Src: src4, Dst: dst4, Proto: 17, Sport: uint16(i), Dport: 53, Fragment: true},
			Flow{Src: src6, Dst: dst6, Proto: 44, Sport: uint16(i), Dport: 53}) // an IPv6 fragment header
	}
	seedMatters, used := 0, map[uint16]int{}
	for _, fl := range flows {
		want := g.Pick(FlowHash(testSeed, fl))
		if got := member(fl); got != want {
			t.Errorf("%+v: member %d, FlowHash says %d", fl, got, want)
		}
		used[want]++
		if g.Pick(FlowHash(0, fl)) != want {
			seedMatters++
		}
	}
	if used[7] < len(flows)/4 || used[8] < len(flows)/4 {
		t.Errorf("flows per member %v of %d: want both used", used, len(flows))
	}
	if seedMatters == 0 {
		t.Error("every flow picks the same member with seed 0: the test cannot tell whether the program uses its seed")
	}
	// The 5-tuple counts: one source, many ports, both members. A fragment's ports do
	// not: its member is that of its 3-tuple.
	ports, frag := map[uint16]bool{}, map[uint16]bool{}
	for i := range 32 {
		ports[member(Flow{Src: netip.MustParseAddr("10.8.0.1"), Dst: dst4, Proto: 6, Sport: uint16(2000 + i), Dport: 80})] = true
		frag[member(Flow{Src: netip.MustParseAddr("10.8.0.1"), Dst: dst4, Proto: 17, Sport: uint16(2000 + i), Dport: 80, Fragment: true})] = true
	}
	if len(ports) != 2 || len(frag) != 1 {
		t.Errorf("one source: members by port %v (want both), fragments %v (want one)", ports, frag)
	}

	must(d.SetGroup(9, Single(8)))
	for _, fl := range flows[:8] {
		if got := member(fl); got != 8 {
			t.Errorf("group of nexthop 8 alone: %+v went to %d", fl, got)
		}
	}
	before := stats(t, d)[PassNoMember]
	must(d.DeleteGroup(9))
	for _, fl := range flows[:4] {
		if ret, _ := run(t, d, flowFrame(fl)); ret != xdpPass {
			t.Errorf("group with no member: %+v action %d, want pass", fl, ret)
		}
	}
	if got := stats(t, d)[PassNoMember].Packets - before.Packets; got != 4 {
		t.Errorf("no_member counted %d, want 4", got)
	}
	if err := d.SetGroup(MaxGroups, g); err == nil {
		t.Errorf("group id %d accepted", MaxGroups)
	}
}

// TestFlowHashSpread: the flow hash spreads flows evenly over a group's 64 buckets in
// both families (an IPv6 address is folded to a word first): 10,000 flows from one
// source to 32 destinations by source port, as TestECMP sends, and 10,000 from
// sources in one /64 (IPv6) or /16 (IPv4) to one destination; two members split them
// within 5% of even, no bucket is far from its 156.
func TestFlowHashSpread(t *testing.T) {
	for _, c := range []struct {
		name     string
		src, dst netip.Addr
	}{{"ipv4", netip.MustParseAddr("10.20.0.2"), netip.MustParseAddr("198.18.0.1")},
		{"ipv6", netip.MustParseAddr("2001:db8:20::2"), netip.MustParseAddr("2001:db8:900::1")}} {
		for _, vary := range []string{"ports", "sources"} {
			var buckets [GroupBuckets]int
			for i := range 10_000 {
				f := Flow{Src: c.src, Dst: c.dst, Proto: 17, Sport: uint16(20000 + i), Dport: 9}
				if vary == "ports" {
					d := c.dst.As16()
					d[15] += byte(i % 32)
					f.Dst = netip.AddrFrom16(d).Unmap()
				} else {
					s := c.src.As16()
					binary.BigEndian.PutUint16(s[14:], uint16(i))
					if c.src.Is6() {
						binary.BigEndian.PutUint16(s[10:], uint16(i*7919))
					}
					f.Src, f.Sport = netip.AddrFrom16(s).Unmap(), 4000
				}
				buckets[FlowHash(0x5eed, f)&(GroupBuckets-1)]++
			}
			even := 0
			for b, n := range buckets {
				if b%2 == 0 {
					even += n
				}
				if n < 156/2 || n > 156*3/2 {
					t.Errorf("%s, %s varying: bucket %d holds %d of 10,000 flows, want about 156", c.name, vary, b, n)
				}
			}
			if even < 4750 || even > 5250 {
				t.Errorf("%s, %s varying: two members split 10,000 flows %d / %d, want within 5%% of even", c.name, vary, even, 10_000-even)
			}
		}
	}
}
