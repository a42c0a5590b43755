package fib

import (
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"pgregory.net/rapid"
)

// TestPropertyIncrementalEqualsRebuild: for any sequence of announcements and
// withdrawals (prefixes of /12 to /32 inside 10.0.0.0/20, so they overlap a lot), the
// tables built incrementally answer every address of the region as tables built from
// scratch from the final routes do, and a /24 has a group exactly when a route longer
// than /24 lies in it.
func TestPropertyIncrementalEqualsRebuild(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		genPrefix := func(rt *rapid.T) netip.Prefix {
			l := rapid.IntRange(12, 32).Draw(rt, "len")
			x := rapid.Uint32Range(0, 1<<12-1).Draw(rt, "addr")
			return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(x >> 8), byte(x)}), l).Masked()
		}
		tt := &testing.T{}
		inc, err := New(newFakeDP(tt, 64), &fakeRes{}, nil)
		if err != nil {
			rt.Fatal(err)
		}
		final := map[netip.Prefix]netip.Addr{}
		var announced []netip.Prefix
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			var u Update
			// Withdrawals pick an announced prefix, so they hit something.
			if len(announced) > 0 && rapid.IntRange(0, 2).Draw(rt, "kind") == 0 {
				u = Update{Prefix: announced[rapid.IntRange(0, len(announced)-1).Draw(rt, "which")], Withdraw: true}
				delete(final, u.Prefix)
			} else {
				u = Update{Prefix: genPrefix(rt), Nexthop: netip.AddrFrom4([4]byte{10, 9, 0, byte(rapid.IntRange(1, 4).Draw(rt, "gw"))})}
				final[u.Prefix] = u.Nexthop
				announced = append(announced, u.Prefix)
			}
			if err := inc.Apply([]Update{u}); err != nil {
				rt.Fatal(err)
			}
		}
		rebuilt, err := New(newFakeDP(tt, 64), &fakeRes{}, nil)
		if err != nil {
			rt.Fatal(err)
		}
		var all []Update
		for p, gw := range final {
			all = append(all, Update{Prefix: p, Nexthop: gw})
		}
		if err := rebuilt.Apply(all); err != nil {
			rt.Fatal(err)
		}
		d1, d2 := decoder(inc), decoder(rebuilt)
		for x := uint32(0); x < 1<<12; x++ {
			a := netip.AddrFrom4([4]byte{10, 0, byte(x >> 8), byte(x)})
			g1, _ := d1(a)
			g2, _ := d2(a)
			if g1 != g2 {
				rt.Fatalf("%s: incremental %v, rebuilt %v", a, g1, g2)
			}
		}
		for slot := uint32(10 << 16); slot < 10<<16|16; slot++ {
			long := false
			for p := range final {
				long = long || p.Bits() > 24 && addr32(p.Addr())>>8 == slot
			}
			for name, f := range map[string]*FIB{"incremental": inc, "rebuilt": rebuilt} {
				_, isGroup := f.v4.group(slot)
				if isGroup != long {
					rt.Fatalf("%s: /24 %#x has a group: %v, holds a longer route: %v", name, slot, isGroup, long)
				}
				if f.v4.t.Tbl24[slot] == dataplane.FIB4Kernel {
					rt.Fatalf("%s: /24 %#x in kernel mode with a pool of 64 groups", name, slot)
				}
			}
		}
	})
}
