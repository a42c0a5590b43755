package main

import (
	"errors"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/fibfleet/fibfleet/bgp"
)

func TestLinkZones(t *testing.T) {
	calls := 0
	z := newLinkZones(func(peer netip.Addr) (string, error) {
		calls++
		switch peer {
		case netip.MustParseAddr("fe80::2%eth7"), netip.MustParseAddr("2001:db8::2"):
			return "eth1", nil
		}
		return "", errors.New("no route")
	}, slog.Default())
	ll, peer := netip.MustParseAddr("fe80::2"), netip.MustParseAddr("2001:db8::2")
	for _, c := range []struct {
		name string
		in   bgp.Change
		want string
	}{
		{"link-local next hop gets the peer's link", bgp.Change{Nexthop: ll, Peer: peer}, "fe80::2%eth1"},
		{"the same peer again (cached)", bgp.Change{Nexthop: netip.MustParseAddr("fe80::9"), Peer: peer}, "fe80::9%eth1"},
		{"a zone already there is kept", bgp.Change{Nexthop: netip.MustParseAddr("fe80::2%eth3"), Peer: peer}, "fe80::2%eth3"},
		{"a global next hop is left alone", bgp.Change{Nexthop: netip.MustParseAddr("2001:db8::7"), Peer: peer}, "2001:db8::7"},
		{"an IPv4 next hop is left alone", bgp.Change{Nexthop: netip.MustParseAddr("192.0.2.1"), Peer: peer}, "192.0.2.1"},
		{"no link towards the peer: left as it is", bgp.Change{Nexthop: ll, Peer: netip.MustParseAddr("2001:db8::99")}, "fe80::2"},
	} {
		if got := z.of(c.in.Nexthop, c.in.Peer); got.String() != c.want {
			t.Errorf("%s: %v, want %s", c.name, got, c.want)
		}
	}
	if calls != 2 {
		t.Errorf("asked the kernel %d times, want 2 (once per peer)", calls)
	}
}
