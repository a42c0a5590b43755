package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

const (
	xdpPass     = 2
	xdpRedirect = 4
)

var (
	srcMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01} // the sender's
	rtrMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02} // the router's ingress
	egMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x03} // the router's egress
	gwMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x04} // the nexthop's
	localIP = netip.MustParseAddr("192.0.2.1")
)

// requireBPF skips unless the test can load BPF programs (root, bpffs); in CI it
// fails instead.
func requireBPF(t testing.TB) {
	t.Helper()
	testutil.Need(t, os.Geteuid() == 0, "needs root to load BPF programs (CI runs as root)")
	testutil.Need(t, isBPFFS("/sys/fs/bpf"), "bpffs is not mounted at /sys/fs/bpf (make test mounts it)")
}

// testDataplane loads the program under a unique node name with a small FIB (each
// route points to the group of one nexthop, of the same id):
// routes 198.51.100.0/24 -> nexthop 1 (resolved, MTU 1500), 203.0.113.0/24 -> 2
// (unresolved), 203.0.113.128/25 -> 3 (resolved, MTU 576), 100.64.0.0/10 -> 4
// (resolved, egress port not in the devmap), 198.18.0.0/15 -> 5 (resolved, VLAN 100),
// 192.0.2.64/26 compiled as "pass to the kernel", 198.51.100.230/32 -> 6 (the discard
// nexthop: a blackhole), and local address 192.0.2.1.
func testDataplane(t testing.TB) *Dataplane {
	t.Helper()
	requireBPF(t)
	d, err := Load(Config{NodeName: "fftest-" + strings.ReplaceAll(t.Name(), "/", "_"), GroupsV4: 64, FlowSeed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
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
	// lo stands for an attached egress port (Attach puts ports in the devmap).
	must(d.ensurePortLocked(uint32(lo.Index)))
	nh := Nexthop{Ifindex: uint32(lo.Index), SrcMAC: egMAC, DstMAC: gwMAC, MTU: 1500, Resolved: true}
	must(d.SetNexthop(1, nh))
	must(d.SetNexthop(2, Nexthop{Ifindex: uint32(lo.Index), MTU: 1500}))
	small := nh
	small.MTU = 576
	must(d.SetNexthop(3, small))
	// Nexthop 4 is resolved but its port is missing from the devmap: write the entry
	// directly, as SetNexthop would have added the port.
	must(d.objs.Nexthops.Put(uint32(4), xdpfwdNexthop{Ifindex: 999999, Mtu: 1500, Flags: nhValid | nhResolved}))
	vlan := nh
	vlan.VLAN = 100
	must(d.SetNexthop(5, vlan))
	must(d.SetNexthop(6, Nexthop{Drop: true}))
	// Routes point to groups: group i holds nexthop i alone.
	for id := uint32(1); id <= 6; id++ {
		must(d.SetGroup(id, Single(uint16(id))))
	}
	installRoutes(t, d, []testRoute{
		{"100.64.0.0/10", 4}, {"198.18.0.0/15", 5}, {"198.51.100.0/24", 1}, {"198.51.100.230/32", 6},
		{"203.0.113.0/24", 2}, {"203.0.113.128/25", 3}, {"192.0.2.64/26", FIB4Kernel},
	})
	must(d.AddLocal(localIP))
	must(d.AddLocal(localIP6))
	installRoutes6(t, d, testRoutes6)
	return d
}

type testRoute struct {
	prefix string
	nh     uint32
}

// installRoutes writes routes (given shortest first) straight into the DIR-24-8 tables,
// the simple way, with no deletes: enough for packet tests. The fib package compiles
// the real thing and is tested against a reference on its own.
func installRoutes(t testing.TB, d *Dataplane, routes []testRoute) {
	t.Helper()
	tb, err := d.V4Tables()
	if err != nil {
		t.Fatal(err)
	}
	next := uint32(0)
	for _, r := range routes {
		p := netip.MustParsePrefix(r.prefix)
		b := p.Addr().As4()
		a := binary.BigEndian.Uint32(b[:])
		if l := p.Bits(); l <= 24 {
			for i := a >> 8; i < a>>8+1<<(24-l); i++ {
				tb.Tbl24[i] = r.nh
			}
			continue
		}
		i := a >> 8
		if tb.Tbl24[i]&FIB4Group == 0 {
			g := next
			next++
			for j := uint32(0); j < 256; j++ {
				tb.Tbl8[g*256+j] = tb.Tbl24[i]
			}
			tb.Tbl24[i] = FIB4Group | g
		}
		g := tb.Tbl24[i] &^ FIB4Group
		for j := a & 0xff; j < a&0xff+1<<(32-p.Bits()); j++ {
			tb.Tbl8[g*256+j] = r.nh
		}
	}
	compressTbl24(tb)
}

// compressTbl24 writes the compressed first level (fib4.h) for all of Tbl24, as
// plainly as possible: a value per /16 whose /24s agree, else a node of leafvec,
// per-word counts and leaves. Odd /16s go the FIB4Tbl24 way, so packet tests cover it.
func compressTbl24(tb V4Tables) {
	line := uint32(0)
	for b := uint32(0); b < 1<<16; b++ {
		vals := tb.Tbl24[b*256 : b*256+256]
		var leaves []uint32
		var vec [4]uint64
		for i, v := range vals {
			if i == 0 || v != vals[i-1] {
				vec[i/64] |= 1 << (i % 64)
				leaves = append(leaves, v)
			}
		}
		switch {
		case len(leaves) == 1:
			tb.Dir[b] = leaves[0]
		case b%2 == 1:
			tb.Dir[b] = FIB4Tbl24
		default:
			n := tb.Nodes[line*16:]
			counts := 0
			for w := range 4 {
				n[2*w], n[2*w+1] = uint32(vec[w]), uint32(vec[w]>>32)
				n[8] |= uint32(counts) << (8 * w)
				counts += bits.OnesCount64(vec[w])
			}
			copy(n[9:], leaves)
			tb.Dir[b] = FIB4Node | line
			line += uint32(9+len(leaves)+15) / 16
		}
	}
}

type frameOpts struct {
	ethType uint16
	// tags are 802.1Q/802.1ad tags, outermost first: {TPID, TCI} pairs.
	tags    [][2]uint16
	ihl     uint8
	version uint8
	ttl     uint8
	dst     netip.Addr
	payload int
}

// frame builds Ethernet + IPv4 + UDP with a valid header checksum.
func frame(o frameOpts) []byte {
	if o.ethType == 0 {
		o.ethType = 0x0800
	}
	if o.ihl == 0 {
		o.ihl = 5
	}
	if o.version == 0 {
		o.version = 4
	}
	if o.ttl == 0 {
		o.ttl = 64
	}
	if !o.dst.IsValid() {
		o.dst = netip.MustParseAddr("198.51.100.7")
	}
	var b bytes.Buffer
	ethHeader(&b, o.tags, o.ethType)
	hl := int(o.ihl) * 4
	ip := make([]byte, hl+8+o.payload)
	ip[0] = o.version<<4 | o.ihl
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[4:], 0x1234)
	ip[8] = o.ttl
	ip[9] = 17
	copy(ip[12:16], netip.MustParseAddr("10.9.9.9").AsSlice())
	copy(ip[16:20], o.dst.AsSlice())
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip[:hl]))
	binary.BigEndian.PutUint16(ip[hl:], 4000)
	binary.BigEndian.PutUint16(ip[hl+2:], 5000)
	binary.BigEndian.PutUint16(ip[hl+4:], uint16(8+o.payload))
	b.Write(ip)
	return b.Bytes()
}

// ethHeader writes the Ethernet header the test frames share: to the router from the
// sender, with tags (outermost first) before the ethertype.
func ethHeader(b *bytes.Buffer, tags [][2]uint16, ethType uint16) {
	b.Write(rtrMAC)
	b.Write(srcMAC)
	for _, tag := range tags {
		binary.Write(b, binary.BigEndian, tag[0])
		binary.Write(b, binary.BigEndian, tag[1])
	}
	binary.Write(b, binary.BigEndian, ethType)
}

// ipChecksum computes the header checksum from scratch (the checksum field must be zero
// or the result is the verification sum, which is 0 for a valid header).
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// run runs the program once on a copy of in and returns the action and the frame as
// the program left it (a VLAN push or pop changes its length).
func run(t *testing.T, d *Dataplane, in []byte) (uint32, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+512)}
	ret, err := d.Program().Run(opts)
	if err != nil {
		t.Fatalf("test run of a %d-byte frame: %v", len(in), err)
	}
	return ret, opts.DataOut
}

func stats(t *testing.T, d *Dataplane) Stats {
	t.Helper()
	s, err := d.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForwardedFrame(t *testing.T) {
	d := testDataplane(t)
	in := frame(frameOpts{payload: 100})
	ret, out := run(t, d, in)
	if ret != xdpRedirect {
		t.Fatalf("action = %d, want XDP_REDIRECT (%d)", ret, xdpRedirect)
	}
	if !bytes.Equal(out[0:6], gwMAC) || !bytes.Equal(out[6:12], egMAC) {
		t.Errorf("MACs = dst %x src %x, want dst %x src %x", out[0:6], out[6:12], gwMAC, egMAC)
	}
	if len(out) != len(in) {
		t.Fatalf("frame length %d, want %d", len(out), len(in))
	}
	ip := out[14:34]
	if ip[8] != 63 {
		t.Errorf("TTL = %d, want 63", ip[8])
	}
	if ipChecksum(ip) != 0 {
		t.Errorf("IPv4 header checksum does not verify after the TTL decrement: %x", ip)
	}
	want := append([]byte(nil), in[14:]...)
	want[8]--
	hdr := append([]byte(nil), want[:20]...)
	hdr[10], hdr[11] = 0, 0
	binary.BigEndian.PutUint16(want[10:], ipChecksum(hdr))
	if !bytes.Equal(out[14:], want) {
		t.Errorf("frame beyond the MACs differs from the input with TTL-1 and a recomputed checksum:\n got %x\nwant %x", out[14:], want)
	}
	s := stats(t, d)
	if s[Forwarded].Packets != 1 || s[Forwarded].Bytes != uint64(len(in)) || s.Passed() != 0 {
		t.Errorf("counters = %+v, want exactly one forwarded frame of %d bytes", s, len(in))
	}
}

// TestChecksumEdge forwards frames whose checksums sit at the wrap-around points of the
// incremental update and checks every one against a full recomputation.
func TestChecksumEdge(t *testing.T) {
	d := testDataplane(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		in := frame(frameOpts{ttl: uint8(2 + rng.IntN(254)), payload: rng.IntN(64)})
		// Vary the ID so checksums cover the whole range.
		binary.BigEndian.PutUint16(in[18:], uint16(rng.Uint32()))
		in[24], in[25] = 0, 0
		binary.BigEndian.PutUint16(in[24:], ipChecksum(in[14:34]))
		ret, out := run(t, d, in)
		if ret != xdpRedirect {
			t.Fatalf("frame %d: action %d, want redirect", i, ret)
		}
		if ipChecksum(out[14:34]) != 0 {
			t.Fatalf("frame %d: checksum does not verify after forwarding: in %x out %x", i, in[14:34], out[14:34])
		}
	}
}

func TestPassReasons(t *testing.T) {
	d := testDataplane(t)
	arp := frame(frameOpts{ethType: 0x0806})
	lldp := frame(frameOpts{ethType: 0x88cc})
	badVersion := frame(frameOpts{version: 6})
	shortIHL := frame(frameOpts{ihl: 4})
	tooLong := frame(frameOpts{})
	binary.BigEndian.PutUint16(tooLong[16:], 1400) // total length beyond the frame
	cases := []passCase{
		{"arp", arp, PassNotIPv4},
		{"lldp", lldp, PassNotIPv4},
		{"802.1ad (QinQ) outer tag", frame(frameOpts{tags: [][2]uint16{{0x88a8, 10}, {0x8100, 20}}}), PassVLAN},
		{"double 802.1Q tag", frame(frameOpts{tags: [][2]uint16{{0x8100, 10}, {0x8100, 20}}}), PassVLAN},
		{"tagged ARP", frame(frameOpts{ethType: 0x0806, tags: [][2]uint16{{0x8100, 10}}}), PassNotIPv4},
		{"tag truncated", frame(frameOpts{tags: [][2]uint16{{0x8100, 10}}})[:16], PassMalformed},
		{"tagged, IP header truncated", frame(frameOpts{tags: [][2]uint16{{0x8100, 10}}})[:30], PassMalformed},
		{"ip version 6 in an IPv4 ethertype", badVersion, PassMalformed},
		{"ihl 4", shortIHL, PassMalformed},
		{"total length beyond frame", tooLong, PassMalformed},
		{"ip options (ihl 6)", frame(frameOpts{ihl: 6}), PassIPOptions},
		{"ttl 1", frame(frameOpts{ttl: 1}), PassTTL},
		{"multicast", frame(frameOpts{dst: netip.MustParseAddr("224.0.0.5")}), PassMulticast},
		{"broadcast", frame(frameOpts{dst: netip.MustParseAddr("255.255.255.255")}), PassMulticast},
		{"to a local address", frame(frameOpts{dst: localIP}), PassLocal},
		{"eBGP to a local address with TTL 1", frame(frameOpts{dst: localIP, ttl: 1}), PassLocal},
		{"no route", frame(frameOpts{dst: netip.MustParseAddr("8.8.8.8")}), PassNoRoute},
		{"unresolved nexthop", frame(frameOpts{dst: netip.MustParseAddr("203.0.113.9")}), PassUnresolved},
		{"larger than egress MTU", frame(frameOpts{dst: netip.MustParseAddr("203.0.113.200"), payload: 600}), PassMTU},
		{"egress port not in devmap", frame(frameOpts{dst: netip.MustParseAddr("100.64.1.1")}), PassNoTxPort},
		{"a /24 the FIB had no room for", frame(frameOpts{dst: netip.MustParseAddr("192.0.2.77")}), PassFIBFull},
		{"the rest of that /24 has no route", frame(frameOpts{dst: netip.MustParseAddr("192.0.2.7")}), PassNoRoute},
	}
	// The largest frame that fits the small MTU is still forwarded.
	fits := frame(frameOpts{dst: netip.MustParseAddr("203.0.113.200"), payload: 576 - 28})
	checkPassed(t, d, cases, fits, Forwarded)
}

type passCase struct {
	name   string
	frame  []byte
	reason Reason
}

// checkPassed runs each case's frame through the program a different number of times
// (so a counter that counts another reason's frames cannot match by accident): each
// must pass untouched. Then fits must be forwarded, counted as fwd, and every counter
// must hold exactly what was sent.
func checkPassed(t *testing.T, d *Dataplane, cases []passCase, fits []byte, fwd Reason) {
	t.Helper()
	want := Stats{}
	for i, c := range cases {
		n := i + 1
		for j := 0; j < n; j++ {
			ret, out := run(t, d, c.frame)
			if ret != xdpPass {
				t.Fatalf("%s: action %d, want XDP_PASS", c.name, ret)
			}
			if !bytes.Equal(out[:len(c.frame)], c.frame) {
				t.Fatalf("%s: a passed frame was modified:\n got %x\nwant %x", c.name, out, c.frame)
			}
		}
		want[c.reason].Packets += uint64(n)
		want[c.reason].Bytes += uint64(n * len(c.frame))
	}
	if ret, _ := run(t, d, fits); ret != xdpRedirect {
		t.Errorf("a frame of exactly the egress MTU: action %d, want redirect", ret)
	}
	want[fwd] = Counter{1, uint64(len(fits))}
	if got := stats(t, d); got != want {
		for r := range Reasons() {
			if got[r] != want[r] {
				t.Errorf("counter %s = %+v, want %+v", Reason(r), got[r], want[r])
			}
		}
	}
}

// TestTruncatedFrames runs every truncation of a forwardable frame: none may be
// forwarded, and every one is counted as malformed.
func TestTruncatedFrames(t *testing.T) {
	d := testDataplane(t)
	full := frame(frameOpts{payload: 20})
	var n uint64
	for l := 14; l < len(full); l++ { // the kernel refuses test runs below an Ethernet header
		ret, _ := run(t, d, full[:l])
		if ret != xdpPass {
			t.Fatalf("frame truncated to %d bytes: action %d, want XDP_PASS", l, ret)
		}
		n++
	}
	s := stats(t, d)
	if s[PassMalformed].Packets != n || s.Passed() != n || s[Forwarded].Packets != 0 {
		t.Errorf("after %d truncated frames: malformed=%d passed=%d forwarded=%d", n, s[PassMalformed].Packets, s.Passed(), s[Forwarded].Packets)
	}
}

// TestMutatedFrames flips random bytes of valid frames and checks the program against
// a reference classifier written from the spec: the action, the counter and, for
// forwarded frames, the rewrite.
func TestMutatedFrames(t *testing.T) {
	d := testDataplane(t)
	rng := rand.New(rand.NewPCG(7, 9))
	dsts := []string{"198.51.100.7", "203.0.113.9", "203.0.113.200", "8.8.8.8", "192.0.2.1", "100.64.1.1", "198.19.0.1", "192.0.2.100"}
	want := Stats{}
	for i := 0; i < 3000; i++ {
		o := frameOpts{dst: netip.MustParseAddr(dsts[rng.IntN(len(dsts))]), payload: rng.IntN(700)}
		if rng.IntN(3) == 0 {
			o.tags = [][2]uint16{{0x8100, uint16(rng.Uint32())}}
		}
		f := frame(o)
		for k := rng.IntN(4); k > 0; k-- {
			f[rng.IntN(min(len(f), 44))] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 {
			f = f[:14+rng.IntN(len(f)-14)]
		}
		reason := classify(f)
		in := append([]byte(nil), f...)
		ret, out := run(t, d, f)
		wantRet := uint32(xdpPass)
		if reason == Forwarded {
			wantRet = xdpRedirect
		}
		if ret != wantRet {
			t.Fatalf("frame %x: action %d, reference says %s", in, ret, reason)
		}
		if reason != Forwarded && !bytes.Equal(out, in) {
			t.Fatalf("passed frame modified: %x -> %x", in, out)
		}
		want[reason].Packets++
		want[reason].Bytes += uint64(len(in))
	}
	if got := stats(t, d); got != want {
		t.Errorf("counters = %+v\nreference = %+v", got, want)
	}
}

// classify is the reference: what the program must do with a frame, given the FIB
// that testDataplane installs.
func classify(f []byte) Reason {
	if len(f) < 14 {
		return PassMalformed
	}
	et := binary.BigEndian.Uint16(f[12:])
	l3 := 14
	if et == 0x88a8 {
		return PassVLAN
	}
	if et == 0x8100 {
		if len(f) < 18 {
			return PassMalformed
		}
		et = binary.BigEndian.Uint16(f[16:])
		if et == 0x8100 || et == 0x88a8 {
			return PassVLAN
		}
		l3 = 18
	}
	if et == 0x86dd {
		return classify6(f[l3:])
	}
	if et != 0x0800 {
		return PassNotIPv4
	}
	ip := f[l3:]
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&0xf < 5 {
		return PassMalformed
	}
	if ip[0]&0xf != 5 {
		return PassIPOptions
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot < 20 || tot > len(ip) {
		return PassMalformed
	}
	dst, _ := netip.AddrFromSlice(ip[16:20])
	if dst.IsMulticast() || dst == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return PassMulticast
	}
	if dst == localIP {
		return PassLocal
	}
	if ip[8] <= 1 {
		return PassTTL
	}
	if netip.MustParsePrefix("192.0.2.64/26").Contains(dst) {
		return PassFIBFull
	}
	type rt struct {
		p   netip.Prefix
		nh  int
		mtu int
	}
	routes := []rt{{netip.MustParsePrefix("203.0.113.128/25"), 3, 576}, {netip.MustParsePrefix("198.51.100.0/24"), 1, 1500},
		{netip.MustParsePrefix("203.0.113.0/24"), 2, 1500}, {netip.MustParsePrefix("100.64.0.0/10"), 4, 1500}, {netip.MustParsePrefix("198.18.0.0/15"), 5, 1500}}
	for _, r := range routes {
		if !r.p.Contains(dst) {
			continue
		}
		switch {
		case r.nh == 2:
			return PassUnresolved
		case tot > r.mtu:
			return PassMTU
		case r.nh == 4:
			return PassNoTxPort
		}
		return Forwarded
	}
	return PassNoRoute
}

// TestVLAN forwards between untagged and tagged ports: push, pop and rewrite.
func TestVLAN(t *testing.T) {
	d := testDataplane(t)
	untaggedDst := netip.MustParseAddr("198.51.100.7") // nexthop 1, untagged
	vlanDst := netip.MustParseAddr("198.18.3.4")       // nexthop 5, VLAN 100
	cases := []struct {
		name    string
		in      frameOpts
		wantTCI int // -1: untagged out
	}{
		{"push: untagged in, VLAN nexthop", frameOpts{dst: vlanDst}, 100},
		{"rewrite: tagged in, VLAN nexthop, priority kept", frameOpts{dst: vlanDst, tags: [][2]uint16{{0x8100, 5<<13 | 7}}}, 5<<13 | 100},
		{"pop: tagged in, untagged nexthop", frameOpts{dst: untaggedDst, tags: [][2]uint16{{0x8100, 3<<13 | 7}}}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.payload = 40
			in := frame(c.in)
			ret, out := run(t, d, in)
			if ret != xdpRedirect {
				t.Fatalf("action %d, want redirect", ret)
			}
			l3in := 14 + 4*len(c.in.tags)
			l3out := 14
			if c.wantTCI >= 0 {
				l3out = 18
				if tpid := binary.BigEndian.Uint16(out[12:]); tpid != 0x8100 {
					t.Fatalf("TPID %#x, want 0x8100", tpid)
				}
				if tci := binary.BigEndian.Uint16(out[14:]); int(tci) != c.wantTCI {
					t.Fatalf("TCI %#x, want %#x", tci, c.wantTCI)
				}
			}
			if et := binary.BigEndian.Uint16(out[l3out-2:]); et != 0x0800 {
				t.Fatalf("ethertype %#x, want IPv4", et)
			}
			if len(out)-l3out != len(in)-l3in {
				t.Fatalf("L3 length %d, want %d", len(out)-l3out, len(in)-l3in)
			}
			if !bytes.Equal(out[0:6], gwMAC) || !bytes.Equal(out[6:12], egMAC) {
				t.Errorf("MACs = dst %x src %x", out[0:6], out[6:12])
			}
			ipOut, ipIn := out[l3out:], in[l3in:]
			if ipOut[8] != ipIn[8]-1 || ipChecksum(ipOut[:20]) != 0 {
				t.Errorf("TTL %d -> %d, checksum verifies: %v", ipIn[8], ipOut[8], ipChecksum(ipOut[:20]) == 0)
			}
			if !bytes.Equal(ipOut[12:], ipIn[12:]) {
				t.Errorf("addresses or payload changed")
			}
		})
	}
	if s := stats(t, d); s[Forwarded].Packets != uint64(len(cases)) || s.Passed() != 0 {
		t.Errorf("counters %+v, want %d forwarded", s, len(cases))
	}
}

// BenchmarkXDP measures the program per frame with BPF_PROG_TEST_RUN (the kernel's own
// loop, so no syscall per frame): a frame passed at the first check (not IPv4) is the
// floor; forwarded frames pay the whole path, with one or two FIB levels.
func BenchmarkXDP(b *testing.B) {
	cases := []struct {
		name  string
		frame []byte
	}{
		{"pass_not_ipv4", frame(frameOpts{ethType: 0x0806})},
		{"pass_no_route", frame(frameOpts{dst: netip.MustParseAddr("8.8.8.8")})},
		{"forwarded_tbl24", frame(frameOpts{})},
		{"forwarded_tbl8", frame(frameOpts{dst: netip.MustParseAddr("203.0.113.200")})},
		{"forwarded_v6_48", frame6(frame6Opts{})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := testDataplane(b)
			b.ResetTimer()
			_, per, err := d.Program().Benchmark(c.frame, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(per.Nanoseconds()), "ns/frame")
		})
	}
}
