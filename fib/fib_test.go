package fib

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
)

// fakeDP records the dataplane's state and fails the test on any write that would let
// a lookup see a dangling nexthop id.
type fakeDP struct {
	t          *testing.T
	routes     map[netip.Prefix]uint32
	nexthops   map[uint32]dataplane.Nexthop
	nhWrites   int
	routeLimit int
}

func newFakeDP(t *testing.T) *fakeDP {
	return &fakeDP{t: t, routes: map[netip.Prefix]uint32{}, nexthops: map[uint32]dataplane.Nexthop{}, routeLimit: 1 << 30}
}

func (d *fakeDP) SetRoute(p netip.Prefix, id uint32) error {
	if _, ok := d.nexthops[id]; !ok {
		d.t.Fatalf("route %s written before its nexthop %d", p, id)
	}
	if _, ok := d.routes[p]; !ok && len(d.routes) >= d.routeLimit {
		return errors.New("map full")
	}
	d.routes[p] = id
	return nil
}

func (d *fakeDP) DeleteRoute(p netip.Prefix) error { delete(d.routes, p); return nil }

func (d *fakeDP) SetNexthop(id uint32, nh dataplane.Nexthop) error {
	d.nexthops[id] = nh
	d.nhWrites++
	return nil
}

func (d *fakeDP) DeleteNexthop(id uint32) error {
	for p, r := range d.routes {
		if r == id {
			d.t.Fatalf("nexthop %d cleared while route %s still uses it", id, p)
		}
	}
	delete(d.nexthops, id)
	return nil
}

// fakeRes resolves 10.x.y.z next hops to ifindex y with MAC ..:z, and nothing else.
type fakeRes struct {
	macs       map[netip.Addr]net.HardwareAddr
	unresolved map[netip.Addr]bool
	calls      int
	released   []netip.Addr
}

func (r *fakeRes) Release(n netip.Addr) { r.released = append(r.released, n) }

func (r *fakeRes) Resolve(gw netip.Addr) (Resolution, error) {
	r.calls++
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

func TestSharedNexthopsAndNeighbourChange(t *testing.T) {
	dp, res := newFakeDP(t), &fakeRes{macs: map[netip.Addr]net.HardwareAddr{}, unresolved: map[netip.Addr]bool{}}
	f := New(dp, res, nil)
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
	// The gateway's MAC changes: one nexthop write, no route write.
	res.macs[ip("10.0.1.2")] = net.HardwareAddr{2, 0, 0, 0, 0, 0x99}
	before := len(dp.routes)
	f.NeighborChanged(ip("10.0.1.2"))
	if dp.nhWrites != 2 || len(dp.routes) != before {
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
}

func TestUnresolvedRetry(t *testing.T) {
	dp, res := newFakeDP(t), &fakeRes{unresolved: map[netip.Addr]bool{ip("10.0.2.2"): true}}
	f := New(dp, res, nil)
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
	id := dp.routes[pfx("198.51.100.0/24")]
	if !dp.nexthops[id].Resolved {
		t.Fatal("the resolved nexthop was not rewritten")
	}
}

func TestRefusedRoutes(t *testing.T) {
	dp, res := newFakeDP(t), &fakeRes{}
	dp.routeLimit = 2
	f := New(dp, res, nil)
	err := f.Apply([]Update{
		{Prefix: pfx("198.51.100.0/24"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.51.101.0/24"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.51.102.0/24"), Nexthop: ip("10.0.1.3")},
	})
	if err == nil {
		t.Fatal("a full dataplane did not report the refused route")
	}
	s := f.Stats()
	if s.Routes != 2 || s.Refused != 1 || s.Nexthops != 1 || len(dp.nexthops) != 1 {
		t.Fatalf("stats %+v, dataplane nexthops %d; want 2 routes, 1 refused, the refused route's nexthop freed", s, len(dp.nexthops))
	}
	if _, _, ok := f.Lookup(ip("198.51.102.1")); ok {
		t.Fatal("a refused route is in the master table")
	}
}

// TestRandomChurn applies random announcements, next-hop changes and withdrawals and
// compares the dataplane with a reference map after every batch.
func TestRandomChurn(t *testing.T) {
	dp, res := newFakeDP(t), &fakeRes{}
	f := New(dp, res, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	ref := map[netip.Prefix]netip.Addr{}
	for round := 0; round < 200; round++ {
		var batch []Update
		for i := 0; i < 50; i++ {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(rng.IntN(8)), byte(rng.IntN(16)), 0}), 16+rng.IntN(9)).Masked()
			if rng.IntN(3) == 0 {
				batch = append(batch, Update{Prefix: p, Withdraw: true})
				delete(ref, p)
				continue
			}
			gw := netip.AddrFrom4([4]byte{10, 0, byte(rng.IntN(3)), byte(1 + rng.IntN(5))})
			batch = append(batch, Update{Prefix: p, Nexthop: gw})
			ref[p] = gw
		}
		if err := f.Apply(batch); err != nil {
			t.Fatal(err)
		}
		if len(dp.routes) != len(ref) {
			t.Fatalf("round %d: dataplane has %d routes, reference %d", round, len(dp.routes), len(ref))
		}
		used := map[uint32]bool{}
		for p, gw := range ref {
			id, ok := dp.routes[p]
			if !ok {
				t.Fatalf("round %d: %s missing from the dataplane", round, p)
			}
			want, _ := res.Resolve(gw)
			if got := dp.nexthops[id]; got.DstMAC.String() != want.Nexthop.DstMAC.String() || got.Ifindex != want.Nexthop.Ifindex {
				t.Fatalf("round %d: %s -> nexthop %d %+v, want via %s", round, p, id, got, gw)
			}
			used[id] = true
		}
		if len(dp.nexthops) != len(used) {
			t.Fatalf("round %d: %d nexthops in the dataplane, %d in use (leak)", round, len(dp.nexthops), len(used))
		}
	}
}
