package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/dataplane"
)

// TestCanForward: the node can forward only with its program attached everywhere and
// an eBGP upstream's whole, non-empty table in the dataplane; the mesh, an iBGP
// neighbour, an empty table, a load under way and a session down do not count.
func TestCanForward(t *testing.T) {
	up, core, mesh, empty := netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("192.0.2.6")
	peers := []bgp.PeerStatus{{Address: up, ASN: 64512}, {Address: core, ASN: 65000}, {Address: mesh, ASN: 65000, Mesh: true}, {Address: empty, ASN: 64513}}
	since := time.Now()
	loaded := func(a netip.Addr, n uint64) bgp.Load {
		return bgp.Load{Neighbor: a, Established: since, Received: n, EndOfRIB: since}
	}
	done := func(l bgp.Load) bool { return !l.EndOfRIB.IsZero() }
	attached := map[string]dataplane.Attachment{"eth0": {LinkID: 1, Attached: true}, "eth1": {LinkID: 2, Attached: true}}
	for _, c := range []struct {
		what  string
		att   map[string]dataplane.Attachment
		loads []bgp.Load
		ok    bool
		why   string
	}{
		{"the upstream's table in the dataplane", attached, []bgp.Load{loaded(up, 1000)}, true, ""},
		{"only the core, the mesh and an empty table", attached, []bgp.Load{loaded(core, 1000), loaded(mesh, 1000), loaded(empty, 0)}, false, "no upstream's table in the dataplane (2 eBGP upstreams configured)"},
		{"the upstream still loading", attached, []bgp.Load{{Neighbor: up, Established: since, Received: 500}}, false, "no upstream's table"},
		{"the upstream's session down", attached, []bgp.Load{{Neighbor: up, Received: 1000, EndOfRIB: since}}, false, "no upstream's table"},
		{"the program detached from eth1", map[string]dataplane.Attachment{"eth0": {Attached: true}, "eth1": {LinkID: 2}}, []bgp.Load{loaded(up, 1000)}, false, "XDP program detached from eth1"},
	} {
		ok, why := canForward(c.att, peers, c.loads, done, 65000)
		if ok != c.ok || !strings.HasPrefix(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.what, ok, why, c.ok, c.why)
		}
	}
}
