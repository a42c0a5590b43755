package dataplane

import (
	"bytes"
	"net/netip"
	"testing"
)

const xdpDrop = 1

// TestBlackhole sends frames to the blackholed /32 and /128 of the test FIB (routes
// through the discard nexthop): each is dropped and counted as blackhole, while the
// /32's neighbours in its /24 are still forwarded, and a frame to it that the kernel
// must see first (TTL 1: ICMP time exceeded) still passes.
func TestBlackhole(t *testing.T) {
	d := testDataplane(t)
	want := Stats{}
	drop := func(name string, f []byte, n int) {
		t.Helper()
		for range n {
			if ret, _ := run(t, d, f); ret != xdpDrop {
				t.Fatalf("%s: action %d, want XDP_DROP", name, ret)
			}
		}
		want[DropBlackhole].Packets += uint64(n)
		want[DropBlackhole].Bytes += uint64(n * len(f))
	}
	drop("to the blackholed /32", frame(frameOpts{dst: netip.MustParseAddr("198.51.100.230")}), 3)
	drop("to the blackholed /128", frame6(frame6Opts{dst: "2001:db8:700::66"}), 2)
	drop("tagged, to the blackholed /32", frame(frameOpts{dst: netip.MustParseAddr("198.51.100.230"), tags: [][2]uint16{{0x8100, 10}}}), 1)

	for _, dst := range []string{"198.51.100.229", "198.51.100.231", "198.51.100.7"} {
		f := frame(frameOpts{dst: netip.MustParseAddr(dst)})
		if ret, _ := run(t, d, f); ret != xdpRedirect {
			t.Errorf("%s, beside the blackholed /32: action %d, want redirect", dst, ret)
		}
		want[Forwarded].Packets++
		want[Forwarded].Bytes += uint64(len(f))
	}
	ttl1 := frame(frameOpts{dst: netip.MustParseAddr("198.51.100.230"), ttl: 1})
	if ret, out := run(t, d, ttl1); ret != xdpPass || !bytes.Equal(out[:len(ttl1)], ttl1) {
		t.Errorf("TTL 1 to the blackholed /32: action %d, want an untouched pass (the kernel answers time exceeded)", ret)
	}
	want[PassTTL] = Counter{1, uint64(len(ttl1))}
	if got := stats(t, d); got != want {
		for r := range Reasons() {
			if got[r] != want[r] {
				t.Errorf("counter %s = %+v, want %+v", Reason(r), got[r], want[r])
			}
		}
	}
}
