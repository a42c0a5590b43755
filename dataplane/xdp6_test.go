package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

var localIP6 = netip.MustParseAddr("2001:db8:ffff::1")

// testRoutes6 is testDataplane's IPv6 FIB: the same nexthops as IPv4 (1 resolved, MTU
// 1500; 2 unresolved; 3 MTU 576; 4 port missing; 5 VLAN 100), 2001:db8:600::/48 holding
// only a longer route (2001:db8:600:1::/64 -> 1), 3000::/16 in the first level and
// 2c00::/16 passing to the kernel (FIB6Kernel), and 2001:db8:700::66/128 -> 6 (the
// discard nexthop).
var testRoutes6 = []testRoute{
	{"3000::/16", 1}, {"2001:db8:100::/48", 1}, {"2001:db8:200::/40", 2}, {"2001:db8:300::/44", 3},
	{"2001:db8:4000::/36", 4}, {"2001:db8:500::/48", 5}, {"2001:db8:600:1::/64", 1},
	{"2001:db8:700::66/128", 6},
}

// installRoutes6 writes routes straight into the IPv6 tables, the simple way (no
// overlapping routes, first free slot of the first bucket), with the /32 keys that
// flag the longer lengths under them: enough for packet tests. The fib package
// compiles the real thing and is tested against a reference.
func installRoutes6(t testing.TB, d *Dataplane, routes []testRoute) {
	t.Helper()
	tb, err := d.V6Tables()
	if err != nil {
		t.Fatal(err)
	}
	keys := map[uint64]uint32{}
	mark := func(h uint64, li int) {
		keys[FIB6Key(h, 32)] |= 1 << (FIB6BelowShift + li - 2)
		tb.Dir[2*(h>>48)+1] |= 2
		if li == len(FIB6Levels)-1 {
			tb.Dir[2*(h>>48)+1] |= 4
		}
	}
	for _, r := range routes {
		p := netip.MustParsePrefix(r.prefix)
		h, l := Hi64(p.Addr()), p.Bits()
		switch {
		case l <= 16:
			for i := h >> 48; i < h>>48+1<<(16-l); i++ {
				tb.Dir[2*i] = r.nh
			}
		case l <= 48:
			li := 0
			for FIB6Levels[li] < l {
				li++
			}
			lv := FIB6Levels[li]
			for k := h >> (64 - l) << (lv - l); k < (h>>(64-l)+1)<<(lv-l); k++ {
				keys[uint64(lv)<<56|k] |= r.nh
				if li >= 2 {
					mark(k<<(64-lv), li)
				}
			}
			tb.Dir[2*(h>>48)+1] |= 1 << min(li, 1)
		default:
			if err := d.SetLong6(p, r.nh); err != nil {
				t.Fatal(err)
			}
			keys[FIB6Key(h, 48)] |= FIB6Deeper
			mark(h, len(FIB6Levels)-1)
		}
	}
	for key, val := range keys {
		b1, _ := FIB6Buckets(key, tb.LogBuckets)
		w := tb.Buckets[16*b1 : 16*b1+16]
		placed := false
		for s := 0; s < 5 && !placed; s++ {
			if w[2*s] == 0 && w[2*s+1] == 0 {
				w[10+s], w[2*s], w[2*s+1] = val, uint32(key), uint32(key>>32)
				placed = true
			}
		}
		if !placed {
			t.Fatalf("test IPv6 FIB: bucket %d full", b1)
		}
	}
	tb.Dir[2*0x2c00] = FIB6Kernel
}

type frame6Opts struct {
	tags     [][2]uint16
	version  uint8
	hopLimit uint8
	nextHdr  uint8
	dst      string
	payload  int
}

// frame6 builds Ethernet + IPv6 + an 8-byte upper header (UDP unless nextHdr says).
func frame6(o frame6Opts) []byte {
	if o.version == 0 {
		o.version = 6
	}
	if o.hopLimit == 0 {
		o.hopLimit = 64
	}
	if o.nextHdr == 0 {
		o.nextHdr = 17
	}
	if o.nextHdr == 255 {
		o.nextHdr = 0 // hop-by-hop options
	}
	if o.dst == "" {
		o.dst = "2001:db8:100::7"
	}
	var b bytes.Buffer
	ethHeader(&b, o.tags, 0x86dd)
	ip := make([]byte, 40+8+o.payload)
	ip[0], ip[1], ip[3] = o.version<<4|0x0b, 0xa0, 0x42 // traffic class, flow label
	binary.BigEndian.PutUint16(ip[4:], uint16(8+o.payload))
	ip[6], ip[7] = o.nextHdr, o.hopLimit
	copy(ip[8:24], netip.MustParseAddr("2001:db8:eeee::9").AsSlice())
	copy(ip[24:40], netip.MustParseAddr(o.dst).AsSlice())
	for i := 40; i < len(ip); i++ {
		ip[i] = byte(i)
	}
	b.Write(ip)
	return b.Bytes()
}

func TestForwardedFrameV6(t *testing.T) {
	d := testDataplane(t)
	for _, c := range []struct{ name, dst string }{
		{"a /48 key", "2001:db8:100::7"},
		{"the first level (a /16)", "3000:1:2::3"},
		{"a route longer than /48 (the long-route trie)", "2001:db8:600:1::5"},
		{"a routing extension header", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := frame6Opts{dst: c.dst, payload: 100}
			if c.dst == "" {
				o.nextHdr = 43
			}
			in := frame6(o)
			ret, out := run(t, d, in)
			if ret != xdpRedirect {
				t.Fatalf("action = %d, want XDP_REDIRECT", ret)
			}
			if !bytes.Equal(out[0:6], gwMAC) || !bytes.Equal(out[6:12], egMAC) {
				t.Errorf("MACs = dst %x src %x, want dst %x src %x", out[0:6], out[6:12], gwMAC, egMAC)
			}
			want := append([]byte(nil), in...)
			copy(want[0:6], gwMAC)
			copy(want[6:12], egMAC)
			want[14+7]--
			if !bytes.Equal(out[:len(in)], want) {
				t.Errorf("want only the MACs and the hop limit changed:\n got %x\nwant %x", out[:len(in)], want)
			}
		})
	}
	if s := stats(t, d); s[ForwardedV6].Packets != 4 || s.Passed() != 0 || s[Forwarded].Packets != 0 {
		t.Errorf("counters = %+v, want exactly 4 IPv6 frames forwarded", s)
	}
}

func TestPassReasonsV6(t *testing.T) {
	d := testDataplane(t)
	tooLong := frame6(frame6Opts{})
	binary.BigEndian.PutUint16(tooLong[18:], 1400) // payload length beyond the frame
	cases := []passCase{
		{"version 4 in the IPv6 ethertype", frame6(frame6Opts{version: 4}), PassMalformed},
		{"header truncated", frame6(frame6Opts{})[:40], PassMalformed},
		{"payload length beyond the frame", tooLong, PassMalformed},
		{"hop-by-hop options", frame6(frame6Opts{nextHdr: 255}), PassHopByHop},
		{"hop limit 1", frame6(frame6Opts{hopLimit: 1}), PassTTL},
		{"hop limit 0", frame6(frame6Opts{hopLimit: 0xff + 1 - 0xff, dst: "2001:db8:100::8"}), PassTTL},
		{"link-local destination", frame6(frame6Opts{dst: "fe80::1"}), PassLinkLocal},
		{"link-local destination (fe80::/10 upper end)", frame6(frame6Opts{dst: "febf::1"}), PassLinkLocal},
		{"loopback destination", frame6(frame6Opts{dst: "::1"}), PassLinkLocal},
		{"unspecified destination", frame6(frame6Opts{dst: "::"}), PassLinkLocal},
		{"multicast", frame6(frame6Opts{dst: "ff02::5"}), PassMulticast},
		{"to a local address", frame6(frame6Opts{dst: localIP6.String()}), PassLocal},
		{"eBGP to a local address with hop limit 1", frame6(frame6Opts{dst: localIP6.String(), hopLimit: 1}), PassLocal},
		{"no route", frame6(frame6Opts{dst: "2001:db8:900::1"}), PassNoRoute},
		{"no route in a /48 holding only a longer route", frame6(frame6Opts{dst: "2001:db8:600:2::1"}), PassNoRoute},
		{"unresolved nexthop", frame6(frame6Opts{dst: "2001:db8:2ff::1"}), PassUnresolved},
		{"larger than egress MTU", frame6(frame6Opts{dst: "2001:db8:30f::1", payload: 600}), PassMTU},
		{"egress port not in devmap", frame6(frame6Opts{dst: "2001:db8:4fff::1"}), PassNoTxPort},
		{"a /16 the FIB had no room for", frame6(frame6Opts{dst: "2c00:1::1"}), PassFIBFull},
	}
	cases[5].frame[14+7] = 0 // hop limit 0
	// The largest frame that fits the small MTU is still forwarded.
	checkPassed(t, d, cases, frame6(frame6Opts{dst: "2001:db8:30f::1", payload: 576 - 48}), ForwardedV6)
}

// TestVLANv6 pushes, rewrites and pops tags on IPv6 frames: the ethertype after the
// tag must stay IPv6.
func TestVLANv6(t *testing.T) {
	d := testDataplane(t)
	for _, c := range []struct {
		name    string
		in      frame6Opts
		wantTCI int
	}{
		{"push", frame6Opts{dst: "2001:db8:500::1"}, 100},
		{"rewrite", frame6Opts{dst: "2001:db8:500::1", tags: [][2]uint16{{0x8100, 5<<13 | 7}}}, 5<<13 | 100},
		{"pop", frame6Opts{dst: "2001:db8:100::1", tags: [][2]uint16{{0x8100, 7}}}, -1},
	} {
		in := frame6(c.in)
		ret, out := run(t, d, in)
		if ret != xdpRedirect {
			t.Fatalf("%s: action %d, want redirect", c.name, ret)
		}
		l3in, l3out := 14+4*len(c.in.tags), 14
		if c.wantTCI >= 0 {
			l3out = 18
			if tci := binary.BigEndian.Uint16(out[14:]); binary.BigEndian.Uint16(out[12:]) != 0x8100 || int(tci) != c.wantTCI {
				t.Fatalf("%s: tag %x, want TCI %#x", c.name, out[12:16], c.wantTCI)
			}
		}
		if et := binary.BigEndian.Uint16(out[l3out-2:]); et != 0x86dd {
			t.Fatalf("%s: ethertype %#x, want IPv6", c.name, et)
		}
		ipIn, ipOut := in[l3in:], out[l3out:l3out+len(in)-l3in]
		if ipOut[7] != ipIn[7]-1 || !bytes.Equal(ipOut[8:], ipIn[8:]) || !bytes.Equal(ipOut[:7], ipIn[:7]) {
			t.Errorf("%s: IPv6 packet changed beyond the hop limit", c.name)
		}
	}
}

// TestMutatedFramesV6 flips random bytes of IPv6 frames and checks the program
// against the reference classifier (classify in xdp_test.go).
func TestMutatedFramesV6(t *testing.T) {
	d := testDataplane(t)
	rng := rand.New(rand.NewPCG(8, 9))
	dsts := []string{"2001:db8:100::7", "2001:db8:2ff::1", "2001:db8:30f::1", "2001:db8:900::1", localIP6.String(),
		"2001:db8:4fff::1", "2001:db8:500::1", "2c00::1", "2001:db8:600:1::1", "2001:db8:600:2::1", "fe80::1", "ff02::1", "3000::1"}
	want := Stats{}
	for i := 0; i < 3000; i++ {
		o := frame6Opts{dst: dsts[rng.IntN(len(dsts))], payload: rng.IntN(700)}
		if rng.IntN(3) == 0 {
			o.tags = [][2]uint16{{0x8100, uint16(rng.Uint32())}}
		}
		f := frame6(o)
		for k := rng.IntN(4); k > 0; k-- {
			f[rng.IntN(min(len(f), 62))] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 {
			f = f[:14+rng.IntN(len(f)-14)]
		}
		reason := classify(f)
		in := append([]byte(nil), f...)
		ret, out := run(t, d, f)
		wantRet := uint32(xdpPass)
		if reason == Forwarded || reason == ForwardedV6 {
			wantRet = xdpRedirect
		}
		if ret != wantRet {
			t.Fatalf("frame %x: action %d, reference says %s", in, ret, reason)
		}
		if wantRet == xdpPass && !bytes.Equal(out[:len(in)], in) {
			t.Fatalf("passed frame modified: %x -> %x", in, out)
		}
		want[reason].Packets++
		want[reason].Bytes += uint64(len(in))
	}
	if got := stats(t, d); got != want {
		t.Errorf("counters = %+v\nreference = %+v", got, want)
	}
}

// classify6 is the reference for IPv6 (ip is the frame from the IPv6 header on).
func classify6(ip []byte) Reason {
	if len(ip) < 40 || ip[0]>>4 != 6 {
		return PassMalformed
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	if plen != 0 && 40+plen > len(ip) {
		return PassMalformed
	}
	if ip[6] == 0 {
		return PassHopByHop
	}
	dst, _ := netip.AddrFromSlice(ip[24:40])
	switch {
	case dst.IsMulticast():
		return PassMulticast
	case dst.IsLinkLocalUnicast() || dst.IsLoopback() || dst.IsUnspecified():
		return PassLinkLocal
	case dst == localIP6:
		return PassLocal
	case ip[7] <= 1:
		return PassTTL
	}
	type rt struct {
		p   string
		nh  int
		mtu int
	}
	for _, r := range []rt{{"3000::/16", 1, 1500}, {"2c00::/16", -1, 0}, {"2001:db8:100::/48", 1, 1500}, {"2001:db8:200::/40", 2, 1500},
		{"2001:db8:300::/44", 3, 576}, {"2001:db8:4000::/36", 4, 1500}, {"2001:db8:500::/48", 5, 1500}, {"2001:db8:600:1::/64", 1, 1500}} {
		if !netip.MustParsePrefix(r.p).Contains(dst) {
			continue
		}
		switch {
		case r.nh == -1:
			return PassFIBFull
		case r.nh == 2:
			return PassUnresolved
		case 40+plen > r.mtu:
			return PassMTU
		case r.nh == 4:
			return PassNoTxPort
		}
		return ForwardedV6
	}
	return PassNoRoute
}
