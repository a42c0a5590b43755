package e2e

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestResolveIPv6 resolves IPv6 next hops through the kernel's neighbour discovery in
// a namespace pair (never linked to the host): a global next hop on the link, a
// recursive one behind it, and a link-local one with its interface as the zone, each
// to the peer's MAC; a link-local one without a zone is refused, saying what to write;
// the link towards a peer is found for the zone of the link-local next hops it sends.
func TestResolveIPv6(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces (CI runs as root)")
	l, err := lab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	a, err := l.Netns("r6a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Netns("r6b")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, "a0", "", b, "b0", ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"a", "ip", "-6", "addr", "add", "2001:db8:a::1/64", "dev", l.If("a0"), "nodad"},
		{"b", "ip", "-6", "addr", "add", "2001:db8:a::2/64", "dev", l.If("b0"), "nodad"},
		{"a", "ip", "-6", "route", "add", "2001:db8:99::/48", "via", "2001:db8:a::2"},
	} {
		ns := map[string]*lab.Netns{"a": a, "b": b}[c[0]]
		if _, err := ns.Exec(c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	var peerMAC net.HardwareAddr
	var peerLL netip.Addr
	err = b.Do(func() error {
		ifc, err := net.InterfaceByName(l.If("b0"))
		if err != nil {
			return err
		}
		peerMAC = ifc.HardwareAddr
		addrs, err := ifc.Addrs()
		if err != nil {
			return err
		}
		for _, ad := range addrs {
			if p, err := netip.ParsePrefix(ad.String()); err == nil && p.Addr().IsLinkLocalUnicast() {
				peerLL = p.Addr()
			}
		}
		return nil
	})
	if err != nil || !peerLL.IsValid() {
		t.Fatalf("peer's MAC and link-local address: %v (link-local %v)", err, peerLL)
	}
	err = a.Do(func() error {
		k, err := fib.NewNexthopResolver(nil)
		if err != nil {
			return err
		}
		defer k.Close()
		for _, c := range []struct{ gw, neighbor netip.Addr }{
			{netip.MustParseAddr("2001:db8:a::2"), netip.MustParseAddr("2001:db8:a::2")},
			{netip.MustParseAddr("2001:db8:99::1"), netip.MustParseAddr("2001:db8:a::2")},
			{peerLL.WithZone(l.If("a0")), peerLL},
		} {
			// The first call makes the neighbour kernel-managed; the kernel then
			// resolves it with neighbour discovery.
			var res fib.Resolution
			deadline := time.Now().Add(10 * time.Second)
			for {
				if res, err = k.Resolve(c.gw); err != nil {
					t.Fatalf("resolve %s: %v", c.gw, err)
				}
				if res.Nexthop.Resolved || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !res.Nexthop.Resolved || !bytes.Equal(res.Nexthop.DstMAC, peerMAC) || res.Neighbor != c.neighbor {
				t.Errorf("%s: resolved %v to %s via neighbour %s, want %s via %s", c.gw, res.Nexthop.Resolved, res.Nexthop.DstMAC, res.Neighbor, peerMAC, c.neighbor)
			}
		}
		if _, err := k.Resolve(peerLL); err == nil {
			t.Errorf("a link-local next hop without its interface resolved")
		}
		// The link towards a BGP peer, which a link-local next hop it sends is on.
		for _, peer := range []netip.Addr{netip.MustParseAddr("2001:db8:a::2"), netip.MustParseAddr("2001:db8:99::1"), peerLL.WithZone(l.If("a0"))} {
			if got, err := k.LinkTowards(peer); err != nil || got != l.If("a0") {
				t.Errorf("link towards %s: %q (%v), want %s", peer, got, err, l.If("a0"))
			}
		}
		if got, err := k.LinkTowards(netip.MustParseAddr("2001:db8:77::1")); err == nil {
			t.Errorf("link towards an address with no route: %q, want an error", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
