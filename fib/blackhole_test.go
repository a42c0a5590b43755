package fib

import (
	"net"
	"net/netip"
	"testing"
)

// TestBlackholeRoutes: blackholed routes of both families, /32 and /128 included,
// share the one discard nexthop (written once, never resolved, not retried); the
// /32's neighbours keep their route; a blackhole replaced by an ordinary route, or
// withdrawn, gives the covering route its traffic back, and the last one clears the
// discard nexthop.
func TestBlackholeRoutes(t *testing.T) {
	dp, res := newFakeDP(t, 16), &fakeRes{macs: map[netip.Addr]net.HardwareAddr{}, unresolved: map[netip.Addr]bool{}}
	f := newFIB(t, dp, res)
	k := NewKernelSync(254, nil) // never run: its queue shows what the kernel would get
	f.SyncKernel(k)
	err := f.Apply([]Update{
		{Prefix: pfx("198.18.0.0/24"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.18.0.7/32"), Blackhole: true},
		{Prefix: pfx("198.18.1.0/24"), Nexthop: ip("10.0.1.2"), Blackhole: true}, // a next hop, ignored
		{Prefix: pfx("2001:db8:ffff:1::7/128"), Blackhole: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := f.byGW[discard]
	if !ok {
		t.Fatal("no discard nexthop after three blackholes")
	}
	if nh := dp.nexthops[id.id]; !nh.Drop || nh.Resolved {
		t.Fatalf("discard nexthop written as %+v, want Drop", nh)
	}
	calls := res.calls
	f.RetryUnresolved()
	f.RefreshAll()
	if res.calls != calls+1 { // 10.0.1.2 once by RefreshAll; the discard nexthop never
		t.Errorf("%d resolutions after a retry and a refresh, want %d: the discard nexthop has nothing to resolve", res.calls-calls, 1)
	}
	if s := f.Stats(); s.Blackholes != 3 || s.Nexthops != 2 || s.UnresolvedNexthops != 0 {
		t.Errorf("stats %+v: want 3 blackholes over 2 nexthops, none unresolved", s)
	}
	for a, want := range map[string]uint32{"198.18.0.7": id.id, "198.18.1.9": id.id, "198.18.0.6": f.byGW[ip("10.0.1.2")].id, "198.18.0.8": f.byGW[ip("10.0.1.2")].id} {
		if _, got := gwOf(f, ip(a)); got != want {
			t.Errorf("%s: nexthop %d, want %d", a, got, want)
		}
	}
	if p, gw, ok := f.Lookup(ip("2001:db8:ffff:1::7")); !ok || gw.IsValid() || p != pfx("2001:db8:ffff:1::7/128") {
		t.Errorf("Lookup of the blackholed /128: %s %s %v, want the /128 with no next hop", p, gw, ok)
	}
	for _, p := range []string{"198.18.0.7/32", "198.18.1.0/24", "2001:db8:ffff:1::7/128"} {
		if op := k.pending[pfx(p)]; !op.blackhole || op.del || op.gw.IsValid() {
			t.Errorf("kernel sync of %s: %+v, want a blackhole route", p, op)
		}
	}
	if op := k.pending[pfx("198.18.0.0/24")]; op.blackhole || op.gw != ip("10.0.1.2") {
		t.Errorf("kernel sync of the ordinary route: %+v", op)
	}
	if dp.long6[pfx("2001:db8:ffff:1::7/128")] != id.id {
		t.Errorf("the /128 is not in the IPv6 FIB's long routes through the discard nexthop: %v", dp.long6)
	}

	// The /24 becomes an ordinary route again; the /32 and /128 are withdrawn.
	err = f.Apply([]Update{
		{Prefix: pfx("198.18.1.0/24"), Nexthop: ip("10.0.1.2")},
		{Prefix: pfx("198.18.0.7/32"), Withdraw: true},
		{Prefix: pfx("2001:db8:ffff:1::7/128"), Withdraw: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, got := gwOf(f, ip("198.18.0.7")); got != f.byGW[ip("10.0.1.2")].id {
		t.Errorf("198.18.0.7 after its blackhole went: nexthop %d, want the /24's", got)
	}
	if _, ok := f.byGW[discard]; ok || dp.nexthops[id.id].Drop {
		t.Error("the discard nexthop outlived its last route")
	}
}
