package fib

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fibfleet/fibfleet/dataplane"
)

// bucketsOf maps each bucket of the group a lookup answers to the next hop there.
func bucketsOf(t *testing.T, f *FIB, dp *fakeDP, a netip.Addr) [dataplane.GroupBuckets]netip.Addr {
	t.Helper()
	byID := map[uint32]netip.Addr{}
	for gw, nh := range f.byGW {
		byID[nh.id] = gw
	}
	var out [dataplane.GroupBuckets]netip.Addr
	var id uint32
	if a.Is4() {
		id = f.v4.lookup(a)
	} else {
		id = f.v6.lookup(a)
	}
	g, ok := dp.groups[id]
	if !ok {
		t.Fatalf("%s: lookup answers %d, no group written there", a, id)
	}
	for b, nh := range g.Buckets {
		out[b] = byID[uint32(nh)]
	}
	return out
}

func count(b [dataplane.GroupBuckets]netip.Addr) map[netip.Addr]int {
	m := map[netip.Addr]int{}
	for _, a := range b {
		m[a]++
	}
	return m
}

// TestGroups: routes share groups by next hops (active, ECMP, backup); a failure
// (neighbour, then link) rewrites each group holding the failed next hop once and
// nothing else: no route, no nexthop; PIC routes go to their backup, ECMP routes keep
// their other member's buckets as they were, single routes pass to the kernel. The
// recovery restores the buckets exactly.
func TestGroups(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{}
	f := newFIB(t, dp, res)
	a, b := ip("10.0.1.1"), ip("10.0.2.1")
	var batch []Update
	for i := range 300 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 0}), 24)
		switch i % 4 {
		case 0:
			batch = append(batch, Update{Prefix: p, Nexthop: a, Backup: b})
		case 1:
			batch = append(batch, Update{Prefix: p, Nexthop: b, Backup: a})
		case 2:
			batch = append(batch, Update{Prefix: p, Nexthop: b, Multipath: []netip.Addr{a, b}})
		case 3:
			batch = append(batch, Update{Prefix: p, Nexthop: a})
		}
	}
	batch = append(batch, Update{Prefix: pfx("2001:db8::/32"), Nexthop: ip("2001:db8:ffff::1"), Backup: ip("2001:db8:ffff::2")})
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.NexthopGroups != 5 || len(dp.groups) != 5 || s.Nexthops != 4 || s.GroupStates[GroupActive] != 5 {
		t.Fatalf("300 routes over 2 next hops: %d groups (%d written), %d nexthops, states %v; want 5, 5, 4, all active",
			s.NexthopGroups, len(dp.groups), s.Nexthops, s.GroupStates)
	}
	at := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i), 1}) }
	pic, picB, ecmp, single := bucketsOf(t, f, dp, at(0)), bucketsOf(t, f, dp, at(1)), bucketsOf(t, f, dp, at(2)), bucketsOf(t, f, dp, at(3))
	if c := count(pic); c[a] != 64 {
		t.Errorf("PIC route: buckets %v, want all on the active %s (the backup idle)", c, a)
	}
	if c := count(ecmp); c[a] != 32 || c[b] != 32 {
		t.Errorf("ECMP route over %s and %s: buckets %v, want 32 each", a, b, c)
	}
	if _, gw, _ := f.Lookup(at(2)); gw != a {
		t.Errorf("ECMP route's primary next hop %s, want the first of the set, %s", gw, a)
	}
	_, gi, ok := f.LookupGroup(at(0))
	if !ok || len(gi.Members) != 2 || gi.Members[0].Nexthop != a || gi.Members[0].Buckets != 64 || !gi.Members[1].Backup || gi.State != GroupActive {
		t.Errorf("LookupGroup of a PIC route: %+v", gi)
	}

	tbl24 := slices.Clone(dp.tables.Tbl24)
	writes, nhWrites := dp.gWrites, dp.nhWrites
	fo := f.SetNeighborDown(a, true, "bfd")
	if fo.Groups != 3 || dp.gWrites-writes != 3 || dp.nhWrites != nhWrites || !slices.Equal(tbl24, dp.tables.Tbl24) {
		t.Fatalf("neighbour %s down: %+v, %d group writes, %d nexthop writes, routes changed %v; want 3 groups written once, nothing else",
			a, fo, dp.gWrites-writes, dp.nhWrites-nhWrites, !slices.Equal(tbl24, dp.tables.Tbl24))
	}
	if c := count(bucketsOf(t, f, dp, at(0))); c[b] != 64 {
		t.Errorf("PIC route with its active next hop down: buckets %v, want all on the backup %s", c, b)
	}
	if got := bucketsOf(t, f, dp, at(1)); got != picB {
		t.Errorf("route whose backup failed: buckets moved")
	}
	after := bucketsOf(t, f, dp, at(2))
	for i := range after {
		if after[i] != b || (ecmp[i] == b && after[i] != ecmp[i]) {
			t.Fatalf("ECMP bucket %d: %s before, %s after %s failed: want %s, and %s's buckets unmoved", i, ecmp[i], after[i], a, b, b)
		}
	}
	if c := count(bucketsOf(t, f, dp, at(3))); c[netip.Addr{}] != 64 {
		t.Errorf("route through the failed next hop alone: buckets %v, want none usable (pass to the kernel)", c)
	}
	if s := f.Stats(); s.GroupStates != [4]int{2, 1, 1, 1} {
		t.Errorf("group states %v, want 2 active, 1 degraded, 1 backup, 1 down", s.GroupStates)
	}
	if fo := f.SetNeighborDown(a, true, "session"); fo.Groups != 0 {
		t.Errorf("a second cause rewrote %d groups", fo.Groups)
	}
	if fo := f.SetNeighborDown(a, false, "bfd"); fo.Groups != 0 || count(bucketsOf(t, f, dp, at(0)))[b] != 64 {
		t.Errorf("one cause of two cleared: %+v; want the neighbour still down", fo)
	}
	f.SetNeighborDown(a, false, "session")
	for i, want := range [][dataplane.GroupBuckets]netip.Addr{pic, picB, ecmp, single} {
		if got := bucketsOf(t, f, dp, at(i)); got != want {
			t.Errorf("route %d after the recovery: buckets %v, want them as before the failure %v", i, count(got), count(want))
		}
	}

	// The link: 10.0.1.1 is on ifindex 2 (fakeRes), 10.0.2.1 on 3.
	fo = f.SetLinkDown(3, true, "link")
	if c := count(bucketsOf(t, f, dp, at(1))); fo.Groups != 2 || c[a] != 64 {
		t.Errorf("link of %s down: %+v, the route through it as active: %v; want 2 groups (ECMP, PIC with it active), all on %s", b, fo, c, a)
	}
	f.SetLinkDown(3, false, "link")
	if got := bucketsOf(t, f, dp, at(1)); got != picB {
		t.Error("link up: buckets not restored")
	}

	// BGP reconverges: the routes leave the failed next hop, the old groups go.
	f.SetNeighborDown(a, true, "session")
	batch = batch[:0]
	for i := range 300 {
		batch = append(batch, Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 0}), 24), Nexthop: b})
	}
	if err := f.Apply(batch); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.NexthopGroups != 2 || len(dp.groups) != 2 || s.Nexthops != 3 {
		t.Errorf("after reconvergence: %d groups (%d in the dataplane), %d nexthops; want 2, 2, 3", s.NexthopGroups, len(dp.groups), s.Nexthops)
	}
}

// TestGroupKeys: members are a set: order and duplicates do not make another group;
// a backup that is also active is just active; a blackhole has no backup. The digest
// counts the active next hops only (a backup is a node's own choice).
func TestGroupKeys(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{}
	f := newFIB(t, dp, res)
	a, b, c := ip("10.0.1.1"), ip("10.0.2.1"), ip("10.0.3.1")
	if err := f.Apply([]Update{
		{Prefix: pfx("198.18.0.0/24"), Nexthop: a, Multipath: []netip.Addr{b}},
		{Prefix: pfx("198.18.1.0/24"), Nexthop: b, Multipath: []netip.Addr{a, a, b}},
		{Prefix: pfx("198.18.2.0/24"), Nexthop: a, Multipath: []netip.Addr{b}, Backup: b},
	}); err != nil {
		t.Fatal(err)
	}
	if len(f.groups) != 1 {
		t.Errorf("one set of next hops, three spellings: %d groups", len(f.groups))
	}
	d := f.Digest()
	if err := f.Apply([]Update{{Prefix: pfx("198.18.0.0/24"), Nexthop: a, Multipath: []netip.Addr{b}, Backup: c}}); err != nil {
		t.Fatal(err)
	}
	if f.Digest() != d || len(f.groups) != 2 {
		t.Errorf("a backup added: digest %s (was %s), %d groups; want the digest unchanged, 2 groups", f.Digest(), d, len(f.groups))
	}
	if err := f.Apply([]Update{{Prefix: pfx("198.18.3.0/24"), Blackhole: true, Nexthop: a, Backup: b}}); err != nil {
		t.Fatal(err)
	}
	if _, gi, _ := f.LookupGroup(ip("198.18.3.1")); len(gi.Members) != 1 {
		t.Errorf("blackhole's group %+v: want the discard nexthop alone", gi)
	}
	many := make([]netip.Addr, 20)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{10, 0, byte(10 + i), 1})
	}
	if err := f.Apply([]Update{{Prefix: pfx("198.18.4.0/24"), Nexthop: many[0], Multipath: many[1:], Backup: c}}); err != nil {
		t.Fatal(err)
	}
	if _, gi, _ := f.LookupGroup(ip("198.18.4.1")); len(gi.Members) != MaxMembers || !gi.Members[MaxMembers-1].Backup {
		t.Errorf("20 equal paths and a backup: %d members, last backup %v; want %d with the backup", len(gi.Members), gi.Members[len(gi.Members)-1].Backup, MaxMembers)
	}
}

// TestResilient: for any member set and weights (or none), each member holds its
// share of the buckets (within one bucket of an even share without weights, within
// two of its weight's share with them), a member leaving moves its buckets and no
// other, and coming back it takes back exactly the buckets it had.
func TestResilient(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, MaxMembers).Draw(rt, "members")
		ids := make([]uint16, n)
		weight := map[uint16]int{}
		weighted := rapid.Bool().Draw(rt, "weighted")
		for i := range ids {
			ids[i] = uint16(i + 1)
			weight[ids[i]] = 1
			if weighted {
				weight[ids[i]] = rapid.IntRange(1, 64).Draw(rt, "weight")
			}
		}
		weightsOf := func(ids []uint16) []int {
			if !weighted {
				return nil
			}
			w := make([]int, len(ids))
			for i, id := range ids {
				w[i] = weight[id]
			}
			return w
		}
		check := func(g dataplane.NexthopGroup, ids []uint16) {
			c := map[uint16]int{}
			for _, id := range g.Buckets {
				c[id]++
			}
			total := 0
			for _, id := range ids {
				total += weight[id]
			}
			for _, id := range ids {
				share := float64(dataplane.GroupBuckets*weight[id]) / float64(total)
				if !weighted && (c[id] < int(share) || c[id] > int(share)+1) || math.Abs(float64(c[id])-share) > 2 {
					rt.Fatalf("members %v, weights %v: %d holds %d buckets, want its share, %.2f", ids, weightsOf(ids), id, c[id], share)
				}
			}
		}
		full := resilient(dataplane.NexthopGroup{}, ids, weightsOf(ids))
		check(full, ids)
		cur, set := full, slices.Clone(ids)
		for range rapid.IntRange(1, n).Draw(rt, "failures") {
			if len(set) == 1 {
				break
			}
			gone := set[rapid.IntRange(0, len(set)-1).Draw(rt, "gone")]
			set = slices.DeleteFunc(slices.Clone(set), func(id uint16) bool { return id == gone })
			next := resilient(cur, set, weightsOf(set))
			check(next, set)
			for i := range next.Buckets {
				if cur.Buckets[i] != gone && next.Buckets[i] != cur.Buckets[i] {
					rt.Fatalf("%d left: bucket %d moved from %d to %d", gone, i, cur.Buckets[i], next.Buckets[i])
				}
			}
			cur = next
		}
		if back := resilient(cur, ids, weightsOf(ids)); back != full {
			rt.Fatalf("every member back: %v, want the first layout %v", back.Buckets, full.Buckets)
		}
	})
	// One member back at a time, the others staying: only its buckets move to it.
	ids := []uint16{1, 2, 3, 4}
	full := resilient(dataplane.NexthopGroup{}, ids, nil)
	without := resilient(full, []uint16{1, 2, 4}, nil)
	back := resilient(without, ids, nil)
	for i := range back.Buckets {
		if back.Buckets[i] != without.Buckets[i] && back.Buckets[i] != 3 {
			t.Errorf("3 back: bucket %d moved from %d to %d", i, without.Buckets[i], back.Buckets[i])
		}
	}
	if back != full {
		t.Error("3 back: not the first layout")
	}
	if fmt.Sprint(resilient(full, nil, nil).Buckets) != fmt.Sprint(dataplane.NexthopGroup{}.Buckets) {
		t.Error("no member: buckets not empty")
	}
}

// TestGroupUnresolved: an active next hop whose neighbour is not resolved yet leaves
// the traffic to a resolved backup until it resolves; with no backup its traffic
// passes to the kernel as before groups (the nexthop, unresolved, says so).
func TestGroupUnresolved(t *testing.T) {
	a, b := ip("10.0.1.1"), ip("10.0.2.1")
	dp, res := newFakeDP(t, 16), &fakeRes{unresolved: map[netip.Addr]bool{a: true}}
	f := newFIB(t, dp, res)
	if err := f.Apply([]Update{{Prefix: pfx("198.18.0.0/24"), Nexthop: a, Backup: b}, {Prefix: pfx("198.18.1.0/24"), Nexthop: a}}); err != nil {
		t.Fatal(err)
	}
	if c := count(bucketsOf(t, f, dp, ip("198.18.0.1"))); c[b] != 64 {
		t.Errorf("active unresolved: buckets %v, want the resolved backup", c)
	}
	if c := count(bucketsOf(t, f, dp, ip("198.18.1.1"))); c[a] != 64 || dp.nexthop(f.v4.lookup(ip("198.18.1.1"))).Resolved {
		t.Errorf("active unresolved, no backup: buckets %v, want it (unresolved: the kernel's)", c)
	}
	res.unresolved[a] = false
	f.NeighborChanged(a)
	if c := count(bucketsOf(t, f, dp, ip("198.18.0.1"))); c[a] != 64 {
		t.Errorf("active resolved: buckets %v, want all back on it", c)
	}
}

// TestHoldDown: a neighbour that fails once comes back at once; after its second
// failure within the window it is held down for the base time, after its third for
// twice that; each hold counted (cause "hold").
func TestHoldDown(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{}
	f := newFIB(t, dp, res)
	const base = 200 * time.Millisecond
	f.SetHoldDown(base, 10*time.Second)
	a, b := ip("10.0.1.1"), ip("10.0.2.1")
	if err := f.Apply([]Update{{Prefix: pfx("198.18.0.0/24"), Nexthop: a, Backup: b}}); err != nil {
		t.Fatal(err)
	}
	onA := func() bool { return count(bucketsOf(t, f, dp, ip("198.18.0.1")))[a] == 64 }
	// back measures how long a's return takes to reach the buckets.
	back := func() time.Duration {
		t.Helper()
		f.SetNeighborDown(a, true, "bfd")
		if onA() {
			t.Fatal("a down: its route still on it")
		}
		start := time.Now()
		f.SetNeighborDown(a, false, "bfd")
		for !onA() {
			if time.Since(start) > 5*time.Second {
				t.Fatal("a never back")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	if d := back(); d > base/2 {
		t.Errorf("first failure: back after %v, want at once", d)
	}
	if d := back(); d < base || d > base+time.Second {
		t.Errorf("second failure: back after %v, want held for %v", d, base)
	}
	if d := back(); d < 2*base || d > 2*base+time.Second {
		t.Errorf("third failure: back after %v, want held for %v", d, 2*base)
	}
	if c := f.Failovers()[FailoverKey{Cause: "hold", Down: true}].Count; c != 2 {
		t.Errorf("%d holds counted, want 2", c)
	}
	f.SetHoldDown(0, 0)
	if d := back(); d > base/2 {
		t.Errorf("hold-down off: back after %v, want at once", d)
	}
}

// TestWeights: neighbour weights share an ECMP group's buckets in proportion (3:1 is
// 48 and 16); changing them moves buckets only towards the member that gained; a
// weight out of range is refused with nothing changed.
func TestWeights(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{}
	f := newFIB(t, dp, res)
	a, b := ip("10.0.1.1"), ip("10.0.2.1")
	at := ip("198.18.0.1")
	if err := f.Apply([]Update{{Prefix: pfx("198.18.0.0/24"), Nexthop: a, Multipath: []netip.Addr{b}}}); err != nil {
		t.Fatal(err)
	}
	even := bucketsOf(t, f, dp, at)
	if err := f.SetNeighborWeights(map[netip.Addr]int{a: 3}); err != nil {
		t.Fatal(err)
	}
	weighted := bucketsOf(t, f, dp, at)
	if c := count(weighted); c[a] != 48 || c[b] != 16 {
		t.Errorf("weights 3 and 1: buckets %v, want 48 and 16", c)
	}
	for i := range weighted {
		if weighted[i] != even[i] && weighted[i] != a {
			t.Errorf("a's weight raised: bucket %d moved from %s to %s", i, even[i], weighted[i])
		}
	}
	if err := f.SetNeighborWeights(map[netip.Addr]int{a: 3, b: 65}); err == nil {
		t.Error("weight 65 accepted")
	}
	if bucketsOf(t, f, dp, at) != weighted {
		t.Error("a refused weight changed the buckets")
	}
	if err := f.SetNeighborWeights(nil); err != nil {
		t.Fatal(err)
	}
	if c := count(bucketsOf(t, f, dp, at)); c[a] != 32 || c[b] != 32 {
		t.Errorf("weights cleared: buckets %v, want 32 each", c)
	}
}
