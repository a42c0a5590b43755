package fib

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// netlinkMessage is a route message as the netlink library builds it (what
// KernelRoutes sent before it wrote messages itself), with sequence number seq.
func netlinkMessage(typ, flags int, routeType uint8, table uint32, p netip.Prefix, gw netip.Addr, ifindex int, seq uint32) []byte {
	family := unix.AF_INET
	if p.Addr().Is6() {
		family = unix.AF_INET6
	}
	req := nl.NewNetlinkRequest(typ, flags)
	req.Seq = seq
	m := nl.NewRtMsg()
	m.Family = uint8(family)
	m.Dst_len = uint8(p.Bits())
	m.Table = unix.RT_TABLE_UNSPEC
	m.Protocol = rtprotBGP
	m.Type = routeType
	req.AddData(m)
	req.AddData(nl.NewRtAttr(unix.RTA_DST, p.Masked().Addr().AsSlice()))
	req.AddData(nl.NewRtAttr(unix.RTA_TABLE, binary.NativeEndian.AppendUint32(nil, table)))
	switch {
	case gw.IsValid() && gw.Is6() && !p.Addr().Is6():
		via := binary.NativeEndian.AppendUint16(nil, unix.AF_INET6)
		req.AddData(nl.NewRtAttr(unix.RTA_VIA, append(via, gw.AsSlice()...)))
	case gw.IsValid():
		req.AddData(nl.NewRtAttr(unix.RTA_GATEWAY, gw.AsSlice()))
	}
	if ifindex > 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(ifindex))))
	}
	return req.Serialize()
}

// TestRouteMessageBytes: the route messages KernelRoutes writes itself are the netlink
// library's to the byte, for every kind of route it writes, one after the other in a
// batch; and a full batch of them allocates nothing beyond its buffer.
func TestRouteMessageBytes(t *testing.T) {
	k := &KernelRoutes{table: 254}
	var want []byte
	type route struct {
		typ, flags int
		rt         uint8
		p          string
		gw         string
		ifindex    int
	}
	replace, del := unix.NLM_F_CREATE|unix.NLM_F_REPLACE, 0
	for _, r := range []route{
		{unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, "198.51.100.0/24", "192.0.2.1", 7},
		{unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, "198.51.100.77/24", "192.0.2.1", 0}, // host bits masked
		{unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, "2001:db8::/32", "fe80::1", 3},
		{unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, "203.0.113.0/25", "2001:db8::1", 2}, // RFC 8950: RTA_VIA
		{unix.RTM_NEWROUTE, replace, unix.RTN_BLACKHOLE, "192.0.2.0/24", "", 0},
		{unix.RTM_DELROUTE, del, unix.RTN_UNSPEC, "10.0.0.0/8", "", 0},
		{unix.RTM_DELROUTE, del, unix.RTN_UNSPEC, "2001:db8:1::/48", "", 0},
	} {
		p := netip.MustParsePrefix(r.p)
		var gw netip.Addr
		if r.gw != "" {
			gw = netip.MustParseAddr(r.gw)
		}
		if err := k.msg(r.typ, r.flags, r.rt, p, gw, r.ifindex); err != nil {
			t.Fatal(err)
		}
		want = append(want, netlinkMessage(r.typ, r.flags, r.rt, 254, p, gw, r.ifindex, k.seq)...)
	}
	if !bytes.Equal(k.buf, want) {
		t.Fatalf("the batch differs from netlink's messages:\n got %x\nwant %x", k.buf, want)
	}
	if k.queued != 7 {
		t.Errorf("%d routes queued, want 7", k.queued)
	}
	if err := k.msg(unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, netip.MustParsePrefix("2001:db8::/32"), netip.MustParseAddr("192.0.2.1"), 0); err == nil {
		t.Error("an IPv6 route via an IPv4 next hop was queued")
	}
	k.buf = make([]byte, 0, batchBytes*2)
	p, gw := netip.MustParsePrefix("198.51.100.0/24"), netip.MustParseAddr("192.0.2.1")
	if allocs := testing.AllocsPerRun(100, func() {
		_ = k.msg(unix.RTM_NEWROUTE, replace, unix.RTN_UNICAST, p, gw, 7)
		if len(k.buf) > batchBytes/2 {
			k.buf = k.buf[:0]
		}
	}); allocs != 0 {
		t.Errorf("a route message costs %.0f allocations", allocs)
	}
}
