package fib

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/table"
	"pgregory.net/rapid"
)

// ref6 is a brute-force longest-prefix match: one map per length, longest first. It
// shares nothing with the compiled tables.
type ref6 [129]map[netip.Prefix]netip.Addr

func newRef6() *ref6 {
	var r ref6
	for l := range r {
		r[l] = map[netip.Prefix]netip.Addr{}
	}
	return &r
}

func (r *ref6) set(p netip.Prefix, gw netip.Addr) { r[p.Bits()][p] = gw }
func (r *ref6) del(p netip.Prefix)                { delete(r[p.Bits()], p) }

func (r *ref6) lookup(a netip.Addr) (netip.Addr, bool) {
	for l := 128; l >= 0; l-- {
		if len(r[l]) == 0 {
			continue
		}
		if gw, ok := r[l][netip.PrefixFrom(a, l).Masked()]; ok {
			return gw, true
		}
	}
	return netip.Addr{}, false
}

func gw6(i int) netip.Addr {
	b := pfx("2001:db8:ffff::/48").Addr().As16()
	b[15] = byte(1 + i%200)
	return netip.AddrFrom16(b)
}

// check6 compares the compiled IPv6 tables with the reference on n addresses: inside
// random routes, and anywhere in 2000::/3. kernelOK lets FIB6Kernel stand for any answer.
func check6(t *testing.T, f *FIB, ref *ref6, routes []netip.Prefix, n int, seed uint64, kernelOK bool) {
	t.Helper()
	byID := map[uint32]netip.Addr{}
	for gw, nh := range f.byGW {
		byID[nh.id] = gw
	}
	rng := rand.New(rand.NewPCG(seed, 6))
	for i := 0; i < n; i++ {
		var a netip.Addr
		if i%4 == 0 || len(routes) == 0 {
			var b [16]byte
			for k := range b {
				b[k] = byte(rng.Uint32())
			}
			b[0] = 0x20 | b[0]&0x1f
			a = netip.AddrFrom16(b)
		} else {
			a = RandomIn(routes[rng.IntN(len(routes))], rng)
		}
		want, ok := ref.lookup(a)
		id := f.v6.lookup(a)
		if id == dataplane.FIB6Kernel && kernelOK {
			continue
		}
		got, found := byID[id]
		if found != ok || got != want {
			t.Fatalf("%s: compiled answers id %d (%v), reference %v (%v)", a, id, got, want, ok)
		}
	}
}

// TestV6RealTableLoadAndChurn loads the real 2026 IPv6 table, then churns it
// (withdrawals, next-hop changes, new routes of every length from /0 to /128), checking
// the compiled tables against the reference after each step, and against tables built
// from scratch from the final routes.
func TestV6RealTableLoadAndChurn(t *testing.T) {
	all, err := table.Real2026v6()
	if err != nil {
		t.Fatal(err)
	}
	f := newFIB(t, newFakeDPv6(t, 16, 1<<10, 19), &fakeRes{})
	clock := time.Unix(1000, 0)
	f.v6.now = func() time.Time { return clock }
	ref := newRef6()
	var batch []Update
	var routes []netip.Prefix
	for i, r := range all {
		batch = append(batch, Update{Prefix: r.Prefix, Nexthop: gw6(int(r.OriginAS))})
		ref.set(r.Prefix, gw6(int(r.OriginAS)))
		routes = append(routes, r.Prefix)
		if len(batch) == 10_000 || i == len(all)-1 {
			if err := f.Apply(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	st := f.Stats()
	t.Logf("loaded: %d routes, %d keys in %d buckets (%.0f%% full), %d pending", st.RoutesV6, st.V6Keys, st.V6Buckets,
		100*float64(st.V6Keys)/float64(5*st.V6Buckets), st.V6Pending)
	// A key whose two buckets are both full (a handful at most, at 19%) waits for
	// the neighbour moved out of its way to clear the grace period.
	check6(t, f, ref, routes, 50_000, 1, true)
	clock = clock.Add(2 * groupGrace)
	f.RetryUnresolved()
	st = f.Stats()
	if st.RoutesV6 != len(all) || st.V6Pending != 0 {
		t.Fatalf("after the load: %d IPv6 routes (want %d), %d keys pending (want 0)", st.RoutesV6, len(all), st.V6Pending)
	}
	check6(t, f, ref, routes, 200_000, 1, false)

	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 3; round++ {
		batch = batch[:0]
		for i := 0; i < 20_000; i++ {
			p := routes[rng.IntN(len(routes))]
			switch rng.IntN(4) {
			case 0:
				batch = append(batch, Update{Prefix: p, Withdraw: true})
				ref.del(p)
			case 1:
				gw := gw6(rng.IntN(300))
				batch = append(batch, Update{Prefix: p, Nexthop: gw})
				ref.set(p, gw)
			default:
				// A new route inside or around an existing one, any length.
				l := rng.IntN(129)
				q := netip.PrefixFrom(RandomIn(p, rng), l).Masked()
				if l < 8 {
					q = netip.PrefixFrom(netip.MustParseAddr("2000::"), 3+rng.IntN(14)).Masked()
				}
				gw := gw6(rng.IntN(300))
				batch = append(batch, Update{Prefix: q, Nexthop: gw})
				ref.set(q, gw)
				routes = append(routes, q)
			}
		}
		if err := f.Apply(batch); err != nil {
			t.Fatal(err)
		}
		// Right after the batch, a key that found both buckets full passes its /16 to
		// the kernel; once the grace period passes, the retry places it.
		check6(t, f, ref, routes, 50_000, uint64(10+round), true)
		clock = clock.Add(2 * groupGrace)
		f.RetryUnresolved()
		if n := f.Stats().V6Pending; n != 0 {
			t.Fatalf("round %d: %d keys still pending after the grace period", round, n)
		}
		check6(t, f, ref, routes, 100_000, uint64(20+round), false)
	}

	// The same final routes, built from scratch, answer the same.
	var final []Update
	for l := range ref {
		for p, gw := range ref[l] {
			final = append(final, Update{Prefix: p, Nexthop: gw})
		}
	}
	fresh := newFIB(t, newFakeDPv6(t, 16, 1<<10, 19), &fakeRes{})
	freshClock := time.Unix(1000, 0)
	fresh.v6.now = func() time.Time { return freshClock }
	if err := fresh.Apply(final); err != nil {
		t.Fatal(err)
	}
	freshClock = freshClock.Add(2 * groupGrace)
	fresh.RetryUnresolved()
	check6(t, fresh, ref, routes, 100_000, 20, false)
	st, st2 := f.Stats(), fresh.Stats()
	t.Logf("after churn: %d routes (%d longer than /48), %d keys; rebuilt: %d keys", st.RoutesV6, st.V6Long, st.V6Keys, st2.V6Keys)
	if st.V6Keys != st2.V6Keys || st.V6Long != st2.V6Long || st.RoutesV6 != st2.RoutesV6 {
		t.Errorf("incremental (%d keys, %d long, %d routes) and rebuilt (%d, %d, %d) differ", st.V6Keys, st.V6Long, st.RoutesV6, st2.V6Keys, st2.V6Long, st2.RoutesV6)
	}
}

// TestV6FullHash fills a tiny hash: keys that find no room are pending and their /16
// passes to the kernel (every other answer stays right); once routes go and the grace
// period passes, the pending keys are placed (moving neighbours if needed) and the
// /16s forward again.
func TestV6FullHash(t *testing.T) {
	f := newFIB(t, newFakeDPv6(t, 16, 1<<10, 4), &fakeRes{}) // 16 buckets, 80 slots
	clock := time.Unix(1000, 0)
	f.v6.now = func() time.Time { return clock }
	ref := newRef6()
	var batch []Update
	var routes []netip.Prefix
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 150; i++ {
		b := [16]byte{0x20, 0x01, 0x0d, byte(rng.IntN(4)), byte(rng.Uint32()), byte(rng.Uint32())}
		p := netip.PrefixFrom(netip.AddrFrom16(b), 48)
		batch = append(batch, Update{Prefix: p, Nexthop: gw6(i)})
		ref.set(p, gw6(i))
		routes = append(routes, p)
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.V6Pending == 0 {
		t.Fatalf("150 keys in 80 slots: none pending")
	}
	check6(t, f, ref, routes, 20_000, 7, true)
	kernel := 0
	for _, p := range routes {
		if f.v6.lookup(p.Addr()) == dataplane.FIB6Kernel {
			kernel++
		}
	}
	if kernel == 0 {
		t.Fatalf("%d keys pending, but no destination passes to the kernel", st.V6Pending)
	}
	// Withdraw two thirds; after the grace period, everything fits again.
	batch = batch[:0]
	keep := routes[:0]
	for i, p := range routes {
		if i%3 != 0 {
			batch = append(batch, Update{Prefix: p, Withdraw: true})
			ref.del(p)
		} else {
			keep = append(keep, p)
		}
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && f.Stats().V6Pending > 0; i++ {
		clock = clock.Add(2 * groupGrace)
		f.RetryUnresolved()
	}
	if n := f.Stats().V6Pending; n != 0 {
		t.Fatalf("%d keys still pending with 50 routes in 80 slots", n)
	}
	check6(t, f, ref, keep, 20_000, 8, false)
}

// TestPropertyV6IncrementalEqualsReference: any sequence of announcements and
// withdrawals of IPv6 prefixes of any length inside 2001:db8::/32 (overlapping a lot),
// in a small hash with grace periods passing, answers as the reference does.
func TestPropertyV6IncrementalEqualsReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tt := &testing.T{}
		f, err := New(newFakeDPv6(tt, 16, 1<<10, 6), &fakeRes{}, nil)
		if err != nil {
			rt.Fatal(err)
		}
		clock := time.Unix(1000, 0)
		f.v6.now = func() time.Time { return clock }
		ref := newRef6()
		var announced []netip.Prefix
		steps := rapid.IntRange(1, 80).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			var u Update
			if len(announced) > 0 && rapid.IntRange(0, 2).Draw(rt, "kind") == 0 {
				u = Update{Prefix: announced[rapid.IntRange(0, len(announced)-1).Draw(rt, "which")], Withdraw: true}
				ref.del(u.Prefix)
			} else {
				b := [16]byte{0x20, 0x01, 0x0d, 0xb8, byte(rapid.IntRange(0, 3).Draw(rt, "b4")), byte(rapid.IntRange(0, 3).Draw(rt, "b5")),
					0, byte(rapid.IntRange(0, 1).Draw(rt, "b7"))}
				l := rapid.SampledFrom([]int{0, 12, 16, 20, 24, 29, 32, 33, 36, 40, 41, 44, 46, 48, 49, 56, 64, 128}).Draw(rt, "len")
				u = Update{Prefix: netip.PrefixFrom(netip.AddrFrom16(b), l).Masked(), Nexthop: gw6(rapid.IntRange(1, 4).Draw(rt, "gw"))}
				ref.set(u.Prefix, u.Nexthop)
				announced = append(announced, u.Prefix)
			}
			if err := f.Apply([]Update{u}); err != nil {
				rt.Fatal(err)
			}
			if rapid.Bool().Draw(rt, "time passes") {
				clock = clock.Add(2 * groupGrace)
				f.RetryUnresolved()
			}
		}
		byID := map[uint32]netip.Addr{}
		for gw, nh := range f.byGW {
			byID[nh.id] = gw
		}
		probes := slices.Clone(announced)
		probes = append(probes, pfx("2001:db8::/32"), pfx("2001:db9::/32"), pfx("3000::/16"))
		for _, p := range probes {
			for k := 0; k < 8; k++ {
				a := RandomIn(p, rand.New(rand.NewPCG(uint64(k), uint64(p.Bits()))))
				want, ok := ref.lookup(a)
				id := f.v6.lookup(a)
				if id == dataplane.FIB6Kernel {
					continue // pending keys: the kernel decides (checked in TestV6FullHash)
				}
				if got, found := byID[id]; found != ok || got != want {
					rt.Fatalf("%s: id %d (%v), reference %v (%v)", a, id, got, want, ok)
				}
			}
		}
	})
}
