package fib

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
)

// fakeDP holds the tables as plain slices, as the XDP program would see them.
type fakeDP struct {
	t        *testing.T
	tables   dataplane.V4Tables
	tables6  dataplane.V6Tables
	long6    map[netip.Prefix]uint32
	nexthops map[uint32]dataplane.Nexthop
	nhWrites int
	groups   map[uint32]dataplane.NexthopGroup
	gWrites  int
}

func newFakeDP(t *testing.T, groups int) *fakeDP {
	return newFakeDPPools(t, groups, 1<<18)
}

// newFakeDPPools sizes the compressed level's node pool (in 64-byte lines) too.
func newFakeDPPools(t *testing.T, groups, lines int) *fakeDP {
	return newFakeDPv6(t, groups, lines, 10)
}

// newFakeDPv6 also sizes the IPv6 hash: 2^logBuckets buckets.
func newFakeDPv6(t *testing.T, groups, lines, logBuckets int) *fakeDP {
	return &fakeDP{t: t, nexthops: map[uint32]dataplane.Nexthop{}, groups: map[uint32]dataplane.NexthopGroup{}, tables: dataplane.V4Tables{
		Tbl24: make([]uint32, 1<<24), Tbl8: make([]uint32, groups*256), Gen16: make([]uint32, 1<<16),
		Dir: make([]uint32, 1<<16), Nodes: make([]uint32, 16*lines),
	}, tables6: dataplane.V6Tables{Dir: make([]uint32, 2<<16), Buckets: make([]uint32, 16<<logBuckets), LogBuckets: logBuckets, Gen: make([]uint32, 1<<16)},
		long6: map[netip.Prefix]uint32{}}
}

func (d *fakeDP) V4Tables() (dataplane.V4Tables, error) { return d.tables, nil }
func (d *fakeDP) V6Tables() (dataplane.V6Tables, error) { return d.tables6, nil }

func (d *fakeDP) SetLong6(p netip.Prefix, id uint32) error {
	d.long6[p] = id
	return nil
}

func (d *fakeDP) DeleteLong6(p netip.Prefix) error {
	delete(d.long6, p)
	return nil
}

func (d *fakeDP) SetNexthop(id uint32, nh dataplane.Nexthop) error {
	d.nexthops[id] = nh
	d.nhWrites++
	return nil
}

func (d *fakeDP) DeleteNexthop(id uint32) error {
	delete(d.nexthops, id)
	return nil
}

func (d *fakeDP) SetGroup(id uint32, g dataplane.NexthopGroup) error {
	for _, nh := range g.Buckets {
		if _, ok := d.nexthops[uint32(nh)]; !ok && nh != 0 {
			d.t.Errorf("group %d written with nexthop %d, which is not written", id, nh)
		}
	}
	d.groups[id] = g
	d.gWrites++
	return nil
}

func (d *fakeDP) DeleteGroup(id uint32) error {
	delete(d.groups, id)
	return nil
}

// member is the nexthop id a lookup's answer (a group id) leads a flow of this hash
// to, as the program picks it; 0 for none.
func (d *fakeDP) member(gid uint32, hash uint32) uint32 {
	g, ok := d.groups[gid]
	if !ok {
		return 0
	}
	return uint32(g.Pick(hash))
}

// nexthop is the entry a lookup's answer leads flow 0 to.
func (d *fakeDP) nexthop(gid uint32) dataplane.Nexthop { return d.nexthops[d.member(gid, 0)] }

// fakeRes resolves 10.x.y.z next hops to ifindex y+1 with MAC ..:z, and nothing else.
type fakeRes struct {
	macs       map[netip.Addr]net.HardwareAddr
	unresolved map[netip.Addr]bool
	local      map[netip.Addr]bool
	calls      int
	released   []netip.Addr
}

func (r *fakeRes) Release(n netip.Addr) { r.released = append(r.released, n) }

func (r *fakeRes) Resolve(gw netip.Addr) (Resolution, error) {
	r.calls++
	if r.local[gw] {
		return Resolution{}, fmt.Errorf("%s: %w", gw, ErrLocal)
	}
	if gw.Is6() {
		// IPv6 next hops: 2001:db8:ffff::/48 is on link (ifindex 1), MAC ..:last byte.
		if !pfx("2001:db8:ffff::/48").Contains(gw) {
			return Resolution{}, fmt.Errorf("no route to %s", gw)
		}
		b := gw.As16()
		return Resolution{Nexthop: dataplane.Nexthop{Ifindex: 1, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, MTU: 1500,
			Resolved: true, DstMAC: net.HardwareAddr{2, 0, 0, 0, 6, b[15]}}, Neighbor: gw}, nil
	}
	b := gw.As4()
	if b[0] != 10 {
		return Resolution{}, fmt.Errorf("no route to %s", gw)
	}
	nh := dataplane.Nexthop{Ifindex: uint32(b[2]) + 1, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, MTU: 1500}
	if !r.unresolved[gw] {
		nh.Resolved = true
		nh.DstMAC = net.HardwareAddr{2, 0, 0, 0, 0, b[3]}
		if m, ok := r.macs[gw]; ok {
			nh.DstMAC = m
		}
	}
	return Resolution{Nexthop: nh, Neighbor: gw}, nil
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

func newFIB(t *testing.T, dp *fakeDP, res *fakeRes) *FIB {
	t.Helper()
	f, err := New(dp, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// gwOf maps what the compiled tables answer for an address back to a next hop.
func gwOf(f *FIB, a netip.Addr) (netip.Addr, uint32) { return decoder(f)(a) }

// decoder returns gwOf for the FIB's current groups (their primary next hops), for
// many lookups.
func decoder(f *FIB) func(netip.Addr) (netip.Addr, uint32) {
	byID := map[uint32]netip.Addr{}
	for _, g := range f.groups {
		byID[g.id] = g.primary().gw
	}
	return func(a netip.Addr) (netip.Addr, uint32) {
		id := f.v4.lookup(a)
		return byID[id], id
	}
}

func TestSharedNexthopsAndNeighbourChange(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{macs: map[netip.Addr]net.HardwareAddr{}, unresolved: map[netip.Addr]bool{}}
	f := newFIB(t, dp, res)
	var batch []Update
	for i := 0; i < 100; i++ {
		batch = append(batch, Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 0}), 24), Nexthop: ip("10.0.1.2")})
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	if len(dp.nexthops) != 1 || dp.nhWrites != 1 || res.calls != 1 {
		t.Fatalf("100 routes via one next hop: %d nexthops, %d writes, %d resolutions; want 1, 1, 1", len(dp.nexthops), dp.nhWrites, res.calls)
	}
	// The gateway's MAC changes: one nexthop write and nothing else.
	res.macs[ip("10.0.1.2")] = net.HardwareAddr{2, 0, 0, 0, 0, 0x99}
	f.NeighborChanged(ip("10.0.1.2"))
	if dp.nhWrites != 2 {
		t.Fatalf("after a MAC change: %d nexthop writes, want 2", dp.nhWrites)
	}
	for _, nh := range dp.nexthops {
		if nh.DstMAC[5] != 0x99 {
			t.Fatalf("nexthop MAC %s, want ..:99", nh.DstMAC)
		}
	}
	// An unrelated neighbour changes nothing.
	f.NeighborChanged(ip("10.0.7.7"))
	if dp.nhWrites != 2 {
		t.Fatalf("an unrelated neighbour rewrote a nexthop")
	}
	// The neighbour is released only with the last route through it.
	for i := range batch {
		batch[i].Withdraw = true
	}
	if err := f.Apply(batch[:99]); err != nil {
		t.Fatal(err)
	}
	if len(res.released) != 0 {
		t.Fatalf("neighbour released while a route still uses it: %v", res.released)
	}
	if err := f.Apply(batch[99:]); err != nil {
		t.Fatal(err)
	}
	if len(res.released) != 1 || res.released[0] != ip("10.0.1.2") || len(dp.nexthops) != 0 {
		t.Fatalf("after the last withdraw: released %v, %d nexthops left", res.released, len(dp.nexthops))
	}
	if id := f.v4.lookup(ip("198.18.50.1")); id != 0 {
		t.Fatalf("withdrawn route still answers nexthop %d", id)
	}
}

func TestUnresolvedRetry(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{unresolved: map[netip.Addr]bool{ip("10.0.2.2"): true}}
	f := newFIB(t, dp, res)
	if err := f.Apply([]Update{{Prefix: pfx("198.51.100.0/24"), Nexthop: ip("10.0.2.2")}, {Prefix: pfx("203.0.113.0/24"), Nexthop: ip("192.168.1.1")}}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Routes != 2 || s.UnresolvedNexthops != 2 {
		t.Fatalf("stats %+v, want 2 routes with 2 unresolved nexthops", s)
	}
	for id, nh := range dp.nexthops {
		if nh.Resolved {
			t.Fatalf("nexthop %d is resolved in the dataplane before its neighbour is", id)
		}
	}
	delete(res.unresolved, ip("10.0.2.2"))
	f.RetryUnresolved()
	if s := f.Stats(); s.UnresolvedNexthops != 1 {
		t.Fatalf("after the neighbour resolved: %+v", s)
	}
	if !dp.nexthop(f.v4.lookup(ip("198.51.100.1"))).Resolved {
		t.Fatal("the resolved nexthop was not rewritten")
	}
}

// TestGroupsFull runs the second-level pool dry: the /24 that gets no group passes to
// the kernel as a whole, and forwards again once a group is free.
func TestGroupsFull(t *testing.T) {
	dp, res := newFakeDP(t, 2), &fakeRes{}
	f := newFIB(t, dp, res)
	f.v4.grace = 0
	err := f.Apply([]Update{
		{Prefix: pfx("198.51.0.0/16"), Nexthop: ip("10.0.0.9")},
		{Prefix: pfx("198.51.100.0/25"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.51.101.0/25"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.51.102.128/25"), Nexthop: ip("10.0.1.3")},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Stats()
	if s.Routes != 4 || s.Refused != 1 || s.KernelSlots != 1 || s.GroupsUsed != 2 {
		t.Fatalf("stats %+v, want 4 routes, 1 refused, 1 kernel /24, 2 groups used", s)
	}
	for _, a := range []string{"198.51.102.1", "198.51.102.200"} {
		if id := f.v4.lookup(ip(a)); id != dataplane.FIB4Kernel {
			t.Errorf("%s in the refused /24: entry %#x, want FIB4Kernel", a, id)
		}
	}
	if gw, _ := gwOf(f, ip("198.51.103.1")); gw != ip("10.0.0.9") {
		t.Errorf("outside the refused /24, the /16 still forwards: got %v", gw)
	}
	// Freeing a group lets the refused /24 in.
	if err := f.Apply([]Update{{Prefix: pfx("198.51.100.0/25"), Withdraw: true}}); err != nil {
		t.Fatal(err)
	}
	f.RetryUnresolved() // the maintenance tick rebuilds kernel /24s once groups are free
	if s := f.Stats(); s.KernelSlots != 0 {
		t.Fatalf("after a group freed up: %+v", s)
	}
	for a, want := range map[string]string{"198.51.102.200": "10.0.1.3", "198.51.102.1": "10.0.0.9", "198.51.100.1": "10.0.0.9"} {
		if gw, id := gwOf(f, ip(a)); gw != ip(want) {
			t.Errorf("%s: %v (entry %#x), want %s", a, gw, id, want)
		}
	}
}

// refLookup is the reference longest-prefix match: try every length from /32 down,
// sharing no code with the compiler.
func refLookup(routes map[netip.Prefix]netip.Addr, a netip.Addr) (netip.Addr, bool) {
	for l := 32; l >= 0; l-- {
		if gw, ok := routes[netip.PrefixFrom(a, l).Masked()]; ok {
			return gw, true
		}
	}
	return netip.Addr{}, false
}

// randomPrefix draws prefixes of every length, concentrated in 10.0.0.0/14 so that
// they overlap often, with a few short ones over it.
func randomPrefix(rng *rand.Rand) netip.Prefix {
	l := rng.IntN(33)
	if l < 8 && rng.IntN(20) != 0 {
		l = 14 + rng.IntN(19)
	}
	a := netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(4)), byte(rng.IntN(256))})
	return netip.PrefixFrom(a, l).Masked()
}

// probes are the addresses checked after each batch: each route's first and last
// address and their neighbours, and random ones.
func probes(rng *rand.Rand, routes map[netip.Prefix]netip.Addr) []netip.Addr {
	var out []netip.Addr
	for p := range routes {
		first := p.Addr()
		last := netip.AddrFrom4([4]byte{})
		b := first.As4()
		x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		x |= uint32(1)<<(32-p.Bits()) - 1
		last = netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
		out = append(out, first, last, first.Prev(), last.Next())
	}
	for i := 0; i < 500; i++ {
		out = append(out, netip.AddrFrom4([4]byte{10, byte(rng.IntN(5)), byte(rng.IntN(5)), byte(rng.IntN(256))}))
	}
	return out
}

func checkAgainstReference(t *testing.T, f *FIB, ref map[netip.Prefix]netip.Addr, addrs []netip.Addr) {
	t.Helper()
	dec := decoder(f)
	for _, a := range addrs {
		if !a.IsValid() {
			continue
		}
		want, ok := refLookup(ref, a)
		got, id := dec(a)
		if !ok && id != 0 || ok && got != want {
			t.Fatalf("%s: compiled FIB says %v (entry %#x), reference says %v (found %v)", a, got, id, want, ok)
		}
	}
}

// TestRandomChurn applies random announcements, next-hop changes and withdrawals of
// prefixes of every length and compares the compiled tables with the reference after
// every batch; then withdraws everything and expects empty tables and no nexthops.
func TestRandomChurn(t *testing.T) {
	dp, res := newFakeDP(t, 4096), &fakeRes{}
	f := newFIB(t, dp, res)
	rng := rand.New(rand.NewPCG(3, 4))
	ref := map[netip.Prefix]netip.Addr{}
	var announced []netip.Prefix
	for round := 0; round < 150; round++ {
		var batch []Update
		for i := 0; i < 40; i++ {
			p := randomPrefix(rng)
			if rng.IntN(3) == 0 && len(announced) > 0 {
				p = announced[rng.IntN(len(announced))] // withdraw one that was announced
				batch = append(batch, Update{Prefix: p, Withdraw: true})
				delete(ref, p)
				continue
			}
			gw := netip.AddrFrom4([4]byte{10, 9, byte(rng.IntN(3)), byte(1 + rng.IntN(5))})
			batch = append(batch, Update{Prefix: p, Nexthop: gw})
			ref[p] = gw
			announced = append(announced, p)
		}
		if err := f.Apply(batch); err != nil {
			t.Fatal(err)
		}
		checkAgainstReference(t, f, ref, probes(rng, ref))
		if s := f.Stats(); s.Routes != len(ref) || s.Refused != 0 {
			t.Fatalf("round %d: stats %+v, reference has %d routes", round, s, len(ref))
		}
	}
	var batch []Update
	for p := range ref {
		batch = append(batch, Update{Prefix: p, Withdraw: true})
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	for i, e := range dp.tables.Tbl24 {
		if e != 0 {
			t.Fatalf("tbl24[%d] = %#x after every route was withdrawn", i, e)
		}
	}
	if s := f.Stats(); s.GroupsUsed != 0 || s.Nexthops != 0 || len(dp.nexthops) != 0 {
		t.Fatalf("after withdrawing everything: %+v, %d dataplane nexthops", s, len(dp.nexthops))
	}
}

// TestIncrementalEqualsRebuild compares, address by address over the churned region,
// a FIB built by random churn with one built from scratch from the final routes.
func TestIncrementalEqualsRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dp1, dp2 := newFakeDP(t, 4096), newFakeDP(t, 4096)
	churned, rebuilt := newFIB(t, dp1, &fakeRes{}), newFIB(t, dp2, &fakeRes{})
	ref := map[netip.Prefix]netip.Addr{}
	for i := 0; i < 3000; i++ {
		p := randomPrefix(rng)
		u := Update{Prefix: p, Withdraw: rng.IntN(3) == 0}
		if u.Withdraw {
			delete(ref, p)
		} else {
			u.Nexthop = netip.AddrFrom4([4]byte{10, 9, 0, byte(1 + rng.IntN(8))})
			ref[p] = u.Nexthop
		}
		if err := churned.Apply([]Update{u}); err != nil {
			t.Fatal(err)
		}
	}
	var all []Update
	for p, gw := range ref {
		all = append(all, Update{Prefix: p, Nexthop: gw})
	}
	if err := rebuilt.Apply(all); err != nil {
		t.Fatal(err)
	}
	dec1, dec2 := decoder(churned), decoder(rebuilt)
	for x := uint32(10 << 24); x < 10<<24|4<<16; x++ {
		a := netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
		g1, _ := dec1(a)
		g2, _ := dec2(a)
		if g1 != g2 {
			t.Fatalf("%s: churned FIB says %v, rebuilt says %v", a, g1, g2)
		}
	}
}

func TestGenerationsBump(t *testing.T) {
	dp := newFakeDP(t, 16)
	f := newFIB(t, dp, &fakeRes{})
	gen := func(a string) uint32 { x := addr32(ip(a)); return dp.tables.Gen16[x>>16] }
	before := []uint32{gen("10.1.0.1"), gen("10.2.0.1"), gen("10.3.0.1"), gen("11.0.0.1")}
	if err := f.Apply([]Update{{Prefix: pfx("10.2.0.0/15"), Nexthop: ip("10.9.0.1")}}); err != nil {
		t.Fatal(err)
	}
	after := []uint32{gen("10.1.0.1"), gen("10.2.0.1"), gen("10.3.0.1"), gen("11.0.0.1")}
	if after[0] != before[0] || after[1] == before[1] || after[2] == before[2] || after[3] != before[3] {
		t.Fatalf("generations %v -> %v: want only the /15's two /16 regions bumped", before, after)
	}
	// A more-specific route bumps its region, which its covering route's entries share.
	if err := f.Apply([]Update{{Prefix: pfx("10.2.7.128/25"), Nexthop: ip("10.9.0.2")}}); err != nil {
		t.Fatal(err)
	}
	if gen("10.2.0.1") != after[1]+1 {
		t.Fatal("a more-specific route did not bump its /16")
	}
}

// TestGenerationsBump6 checks the IPv6 regions: a /48 bumps its /32's region, a /30
// the regions of its four /32s, a route longer than /48 its /32's, and nothing else.
func TestGenerationsBump6(t *testing.T) {
	dp := newFakeDP(t, 16)
	f := newFIB(t, dp, &fakeRes{})
	gen := func(a string) uint32 {
		return dp.tables6.Gen[dataplane.Gen6Region(uint32(dataplane.Hi64(ip(a))>>32))]
	}
	addrs := []string{"2001:db8::1", "2001:db9::1", "2001:dbc::1", "2001:dbf::1", "2001:dc0::1", "2a00::1"}
	snap := func() []uint32 {
		var g []uint32
		for _, a := range addrs {
			g = append(g, gen(a))
		}
		return g
	}
	check := func(what string, before []uint32, changed ...int) {
		t.Helper()
		after := snap()
		for i := range addrs {
			want := before[i]
			if slices.Contains(changed, i) {
				want++
			}
			if after[i] != want {
				t.Fatalf("%s: %s generation %d -> %d, want %d", what, addrs[i], before[i], after[i], want)
			}
		}
	}
	before := snap()
	if err := f.Apply([]Update{{Prefix: pfx("2001:db8:1::/48"), Nexthop: ip("2001:db8:ffff::1")}}); err != nil {
		t.Fatal(err)
	}
	check("a /48", before, 0)
	before = snap()
	if err := f.Apply([]Update{{Prefix: pfx("2001:dbc::/30"), Nexthop: ip("2001:db8:ffff::1")}}); err != nil {
		t.Fatal(err)
	}
	check("a /30", before, 2, 3)
	before = snap()
	if err := f.Apply([]Update{{Prefix: pfx("2001:db8:1:2::/64"), Nexthop: ip("2001:db8:ffff::2")}}); err != nil {
		t.Fatal(err)
	}
	check("a /64", before, 0)
}

// TestGroupCollapse keeps a group while any route longer than /24 is in it, and
// collapses it when the last one goes.
func TestGroupCollapse(t *testing.T) {
	dp := newFakeDP(t, 4)
	f := newFIB(t, dp, &fakeRes{})
	apply := func(u ...Update) {
		t.Helper()
		if err := f.Apply(u); err != nil {
			t.Fatal(err)
		}
	}
	want := func(a, gw string) {
		t.Helper()
		got, id := gwOf(f, ip(a))
		if gw == "" && id != 0 || gw != "" && got != ip(gw) {
			t.Fatalf("%s: %v (entry %#x), want %q", a, got, id, gw)
		}
	}
	apply(Update{Prefix: pfx("10.1.1.0/24"), Nexthop: ip("10.9.0.1")},
		Update{Prefix: pfx("10.1.1.128/25"), Nexthop: ip("10.9.0.2")},
		Update{Prefix: pfx("10.1.1.192/26"), Nexthop: ip("10.9.0.3")})
	want("10.1.1.1", "10.9.0.1")
	want("10.1.1.130", "10.9.0.2")
	want("10.1.1.200", "10.9.0.3")
	apply(Update{Prefix: pfx("10.1.1.192/26"), Withdraw: true})
	want("10.1.1.200", "10.9.0.2")
	if s := f.Stats(); s.GroupsUsed != 1 {
		t.Fatalf("the /25 still needs its group: %+v", s)
	}
	apply(Update{Prefix: pfx("10.1.1.128/25"), Withdraw: true})
	want("10.1.1.200", "10.9.0.1")
	if s := f.Stats(); s.GroupsUsed != 0 || dp.tables.Tbl24[addr32(ip("10.1.1.0"))>>8]&dataplane.FIB4Group != 0 {
		t.Fatalf("the group did not collapse: %+v", s)
	}
	apply(Update{Prefix: pfx("10.1.1.0/24"), Withdraw: true})
	want("10.1.1.200", "")
}

// TestDigest: the digest depends on the table only, not on the order or history of
// the updates that built it, and changes when any route does.
func TestDigest(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	a, b := newFIB(t, newFakeDP(t, 64), &fakeRes{}), newFIB(t, newFakeDP(t, 64), &fakeRes{})
	empty := a.Digest()
	ref := map[netip.Prefix]netip.Addr{}
	for i := 0; i < 2000; i++ {
		p := randomPrefix(rng)
		u := Update{Prefix: p, Withdraw: rng.IntN(4) == 0}
		if u.Withdraw {
			delete(ref, p)
		} else {
			u.Nexthop = netip.AddrFrom4([4]byte{10, 9, 0, byte(1 + rng.IntN(4))})
			ref[p] = u.Nexthop
		}
		if err := a.Apply([]Update{u}); err != nil {
			t.Fatal(err)
		}
	}
	var all []Update
	for p, gw := range ref {
		all = append(all, Update{Prefix: p, Nexthop: gw})
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if err := b.Apply(all); err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() || a.Digest() == empty {
		t.Fatalf("same table, digests %s and %s (empty %s)", a.Digest(), b.Digest(), empty)
	}
	before := b.Digest()
	p4, p6 := b.PrefixDigests()
	if a4, a6 := a.PrefixDigests(); a4 != p4 || a6 != p6 {
		t.Fatalf("same prefixes, prefix digests %s/%s and %s/%s", a4, a6, p4, p6)
	}
	if err := b.Apply([]Update{{Prefix: all[0].Prefix, Nexthop: netip.MustParseAddr("10.9.0.99")}}); err != nil {
		t.Fatal(err)
	}
	if b.Digest() == before {
		t.Fatal("a next-hop change left the digest unchanged")
	}
	// The prefixes are the same: a node preferring another path holds the same set.
	if q4, q6 := b.PrefixDigests(); q4 != p4 || q6 != p6 {
		t.Fatal("a next-hop change moved the prefix digest")
	}
	if err := a.Apply([]Update{{Prefix: all[1].Prefix, Withdraw: true}}); err != nil {
		t.Fatal(err)
	}
	if a4, _ := a.PrefixDigests(); a4 == p4 {
		t.Fatal("a prefix missing left the prefix digest unchanged")
	}
	var withdraw []Update
	for _, u := range all {
		withdraw = append(withdraw, Update{Prefix: u.Prefix, Withdraw: true})
	}
	if err := b.Apply(withdraw); err != nil {
		t.Fatal(err)
	}
	if b.Digest() != empty {
		t.Fatalf("empty again, digest %s, want %s", b.Digest(), empty)
	}
	if q4, q6 := b.PrefixDigests(); q4 != fmt.Sprintf("%016x", 0) || q6 != q4 {
		t.Fatalf("empty again, prefix digests %s/%s", q4, q6)
	}
}

func TestSampleDestinations(t *testing.T) {
	dp := newFakeDP(t, 16)
	f := newFIB(t, dp, &fakeRes{})
	routes := []string{"10.1.0.0/16", "172.16.0.0/12", "2001:db8:1::/48", "2001:db8:2:3::/64"}
	for _, r := range routes {
		gw := "10.9.0.1"
		if strings.Contains(r, ":") {
			gw = "2001:db8:ffff::1"
		}
		if err := f.Apply([]Update{{Prefix: pfx(r), Nexthop: ip(gw)}}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, v6 := range []bool{false, true} {
		got := f.SampleDestinations(v6, 1000, rng)
		if len(got) != 1000 {
			t.Fatalf("v6=%v: %d destinations, want 1000", v6, len(got))
		}
		distinct := map[netip.Addr]bool{}
		for _, a := range got {
			if _, _, ok := f.Lookup(a); !ok || a.Is6() != v6 {
				t.Fatalf("v6=%v: %s is not inside a route of the family", v6, a)
			}
			distinct[a] = true
		}
		if len(distinct) < 900 {
			t.Errorf("v6=%v: %d distinct destinations of 1000: not spread inside the routes", v6, len(distinct))
		}
	}
}

// TestRecursiveNexthops: a next hop off every link (an iBGP route's, on another node's
// link) resolves through the FIB's own route covering it, follows that route's
// changes and its neighbour, goes one level only, survives a self-loop; the node's own
// addresses are local (counted apart, never mirrored to the kernel); the kernel copies
// of the routes follow where their next hop resolves.
func TestRecursiveNexthops(t *testing.T) {
	dp := newFakeDP(t, 16)
	res := &fakeRes{macs: map[netip.Addr]net.HardwareAddr{}, unresolved: map[netip.Addr]bool{}, local: map[netip.Addr]bool{ip("10.0.9.1"): true}}
	f := newFIB(t, dp, res)
	ks := NewKernelSync(254, nil)
	f.SyncKernel(ks)
	apply := func(us ...Update) {
		t.Helper()
		if err := f.Apply(us); err != nil {
			t.Fatal(err)
		}
	}
	at := func(a string) dataplane.Nexthop { return dp.nexthop(f.v4.lookup(ip(a))) }
	kernel := func(p string) kernelOp {
		ks.mu.Lock()
		defer ks.mu.Unlock()
		return ks.pending[pfx(p)]
	}

	apply(Update{Prefix: pfx("198.51.100.0/24"), Nexthop: ip("192.0.2.2")})
	if s := f.Stats(); s.UnresolvedNexthops != 1 || at("198.51.100.1").Resolved {
		t.Fatalf("a next hop with no route to it: %+v, nexthop %+v", s, at("198.51.100.1"))
	}
	apply(Update{Prefix: pfx("192.0.2.0/24"), Nexthop: ip("10.0.1.7")})
	if nh := at("198.51.100.1"); !nh.Resolved || nh.Ifindex != 2 || nh.DstMAC[5] != 7 {
		t.Fatalf("through 192.0.2.0/24 via 10.0.1.7: nexthop %+v, want resolved on ifindex 2, MAC ..:07", nh)
	}
	if s := f.Stats(); s.UnresolvedNexthops != 0 || s.RecursiveNexthops != 1 {
		t.Fatalf("stats %+v: want one recursive nexthop, none unresolved", s)
	}
	if op := kernel("198.51.100.0/24"); op.del || op.gw != ip("10.0.1.7") || op.oif != 2 {
		t.Fatalf("kernel copy %+v: want via 10.0.1.7 on ifindex 2 (the neighbour it resolves through)", op)
	}

	res.macs[ip("10.0.1.7")] = net.HardwareAddr{2, 0, 0, 0, 0, 0x77}
	f.NeighborChanged(ip("10.0.1.7"))
	if a, b := at("198.51.100.1"), at("192.0.2.1"); a.DstMAC[5] != 0x77 || b.DstMAC[5] != 0x77 {
		t.Fatalf("after the neighbour's MAC changed: recursive %s, direct %s; want ..:77 on both", a.DstMAC, b.DstMAC)
	}

	apply(Update{Prefix: pfx("192.0.2.0/25"), Nexthop: ip("10.0.3.9")})
	if nh := at("198.51.100.1"); nh.Ifindex != 4 || nh.DstMAC[5] != 9 {
		t.Fatalf("a more specific route via 10.0.3.9: nexthop %+v, want ifindex 4, MAC ..:09", nh)
	}
	if op := kernel("198.51.100.0/24"); op.gw != ip("10.0.3.9") || op.oif != 4 {
		t.Fatalf("kernel copy after the move %+v: want via 10.0.3.9 on ifindex 4", op)
	}
	apply(Update{Prefix: pfx("192.0.2.0/25"), Withdraw: true})
	if nh := at("198.51.100.1"); nh.Ifindex != 2 || nh.DstMAC[5] != 0x77 {
		t.Fatalf("the more specific withdrawn: nexthop %+v, want ifindex 2 again", nh)
	}

	// One level: a next hop whose covering route is itself recursive stays unresolved.
	apply(Update{Prefix: pfx("203.0.113.0/24"), Nexthop: ip("198.51.100.5")})
	if nh := at("203.0.113.1"); nh.Resolved {
		t.Fatalf("two levels of recursion resolved: %+v", nh)
	}
	// A route whose next hop lies inside itself resolves through nothing.
	apply(Update{Prefix: pfx("100.64.0.0/24"), Nexthop: ip("100.64.0.1")})
	if nh := at("100.64.0.9"); nh.Resolved {
		t.Fatalf("a self-loop resolved: %+v", nh)
	}
	apply(Update{Prefix: pfx("192.0.2.0/24"), Withdraw: true})
	if nh := at("198.51.100.1"); nh.Resolved {
		t.Fatalf("the covering route withdrawn: nexthop %+v still resolved", nh)
	}

	// A route this node originates: local, in the table and its digest, passed to the
	// kernel (unresolved in the dataplane), never mirrored.
	d0, _ := f.Digests()
	apply(Update{Prefix: pfx("10.0.9.0/24"), Nexthop: ip("10.0.9.1")})
	if s := f.Stats(); s.LocalNexthops != 1 || at("10.0.9.5").Resolved {
		t.Fatalf("a local next hop: %+v, nexthop %+v", s, at("10.0.9.5"))
	}
	if d1, _ := f.Digests(); d1 == d0 {
		t.Error("a local route left the digest unchanged")
	}
	ks.mu.Lock()
	_, mirrored := ks.pending[pfx("10.0.9.0/24")]
	ks.mu.Unlock()
	if mirrored {
		t.Error("a local route was queued for the kernel")
	}
	apply(Update{Prefix: pfx("10.0.9.0/24"), Withdraw: true})
	ks.mu.Lock()
	_, mirrored = ks.pending[pfx("10.0.9.0/24")]
	ks.mu.Unlock()
	if mirrored {
		t.Error("a local route's withdrawal was queued for the kernel (it would delete the connected route)")
	}
}

// TestV4TableKeepsNoCopyOfTbl24: the compiler's own state beside the dataplane's
// tables is the depth of each /24 (16 MiB), not a second tbl24 (64 MiB more of the
// node's heap, which the memory limit counts).
func TestV4TableKeepsNoCopyOfTbl24(t *testing.T) {
	dp := newFakeDP(t, 1024)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := newV4Table(dp.tables)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if got, max := after.TotalAlloc-before.TotalAlloc, uint64(20<<20); got > max {
		t.Fatalf("newV4Table allocated %d MiB for 2^24 /24s, want at most %d", got>>20, max>>20)
	}
}

// TestV4StaleTbl24NotInherited: the compiler reads a /24's nexthop from tbl24 only
// where a route of length <= 24 covers it. A tbl24 entry no route wrote (the
// dataplane loads zeroed maps; this test writes one) reaches neither a new group's
// other half nor the /24 once the group collapses.
func TestV4StaleTbl24NotInherited(t *testing.T) {
	dp, res := newFakeDP(t, 8), &fakeRes{}
	slot := addr32(ip("192.0.2.0")) >> 8
	dp.tables.Tbl24[slot] = 77 // left by the previous process
	dp.tables.Tbl24[slot+1] = 77
	f := newFIB(t, dp, res)
	if err := f.Apply([]Update{{Prefix: pfx("192.0.2.0/25"), Nexthop: ip("10.0.1.2")}}); err != nil {
		t.Fatal(err)
	}
	if gw, _ := gwOf(f, ip("192.0.2.1")); gw != ip("10.0.1.2") {
		t.Fatalf("192.0.2.1: %v, want 10.0.1.2", gw)
	}
	if id := f.v4.lookup(ip("192.0.2.200")); id != 0 {
		t.Fatalf("192.0.2.200, outside the /25: entry %#x, want 0 (the stale 77 must not reach the group)", id)
	}
	// The /25 withdrawn: the group collapses into the /24's own entry, none.
	if err := f.Apply([]Update{{Prefix: pfx("192.0.2.0/25"), Withdraw: true}}); err != nil {
		t.Fatal(err)
	}
	f.v4.commit()
	if _, ok := f.v4.group(slot); ok {
		t.Fatal("the /24's group did not collapse with its last longer route")
	}
	for _, a := range []string{"192.0.2.1", "192.0.2.200"} {
		if id := f.v4.lookup(ip(a)); id != 0 {
			t.Fatalf("%s after the /25 was withdrawn: entry %#x, want 0", a, id)
		}
	}
}

// TestRouteHashesUnchangedWithoutAllocation: the digest's and the kernel sync's
// route hashes are hash/fnv's FNV-1a over the same bytes as before (a fleet's nodes
// of two versions, mid-upgrade, compare digests), and cost no allocation (they
// cost two a route through hash.Hash: 105 MB of a four-table load's garbage).
func TestRouteHashesUnchangedWithoutAllocation(t *testing.T) {
	ref := func(parts ...[]byte) uint64 {
		h := fnv.New64a()
		for _, p := range parts {
			h.Write(p)
		}
		return h.Sum64()
	}
	mix := func(x uint64) uint64 {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		return x
	}
	for _, c := range []struct {
		p  string
		gw netip.Addr
	}{{"10.0.0.0/8", ip("192.0.2.1")}, {"2001:db8::/32", ip("2001:db8::1")}, {"2001:db8:1::/48", ip("fe80::1").WithZone("eth0")}, {"0.0.0.0/0", netip.Addr{}}} {
		p := pfx(c.p)
		pb, _ := p.MarshalBinary()
		gb, _ := c.gw.WithZone("").MarshalBinary()
		if got, want := routeHash(p, c.gw), mix(ref(pb, gb)); got != want {
			t.Errorf("routeHash(%s, %s) = %#x, want %#x (hash/fnv's)", p, c.gw, got, want)
		}
		op := kernelOp{gw: c.gw, oif: 7, blackhole: c.p == "0.0.0.0/0"}
		kb, _ := c.gw.MarshalBinary()
		var x [9]byte
		binary.LittleEndian.PutUint64(x[:8], 7)
		if op.blackhole {
			x[8] = 1
		}
		if got, want := kernelRouteHash(p, op), ref(pb, kb, x[:]); got != want {
			t.Errorf("kernelRouteHash(%s, %+v) = %#x, want %#x (hash/fnv's)", p, op, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { routeHash(p, c.gw); kernelRouteHash(p, op) }); n != 0 {
			t.Errorf("%s: %.0f allocations a route, want none", p, n)
		}
	}
}
