package e2e

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestKernelRoutesBatched installs 200,000 routes of the real 2026 table into a
// namespace's main table with batched netlink, checks the kernel holds exactly them,
// deletes half, and checks that a refused route is counted and reported. (The whole
// table's install time is measured by the FIB lookup benchmark, internal/bench.)
func TestKernelRoutesBatched(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces (CI runs as root)")
	l, err := lab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ns, err := l.Netns("krt")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(ns, "k0", "10.255.0.1/16", ns, "k1", ""); err != nil {
		t.Fatal(err)
	}
	routes, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes = routes[:200_000]
	count := func() int {
		t.Helper()
		out, err := ns.Exec("ip", "-4", "route", "show", "proto", "bgp")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(out, "\n")
	}
	err = ns.Do(func() error {
		link, err := net.InterfaceByName(l.If("k0"))
		if err != nil {
			return err
		}
		k, err := fib.NewKernelRoutes(254)
		if err != nil {
			return err
		}
		defer k.Close()
		start := time.Now()
		for i, r := range routes {
			if err := k.Replace(r.Prefix, netip.AddrFrom4([4]byte{10, 255, byte(i % 200), 1}), link.Index); err != nil {
				return err
			}
		}
		if err := k.Flush(); err != nil {
			return err
		}
		t.Logf("installed %d routes with batched netlink in %v", k.Written, time.Since(start).Round(time.Millisecond))
		if k.Written != uint64(len(routes)) || k.Failed != 0 {
			t.Fatalf("written %d, failed %d, want %d, 0", k.Written, k.Failed, len(routes))
		}
		if got := count(); got != len(routes) {
			t.Fatalf("the kernel holds %d BGP routes, want %d", got, len(routes))
		}
		for i := 0; i < len(routes); i += 2 {
			if err := k.Delete(routes[i].Prefix); err != nil {
				return err
			}
		}
		if err := k.Flush(); err != nil {
			return err
		}
		if got, want := count(), len(routes)/2; got != want {
			t.Fatalf("after deleting every other route the kernel holds %d, want %d", got, want)
		}
		// A gateway on no link is refused, and said so.
		if err := k.Replace(netip.MustParsePrefix("198.18.0.0/15"), netip.MustParseAddr("192.0.2.99"), 0); err != nil {
			return err
		}
		before := k.Failed
		if err := k.Flush(); err == nil || k.Failed != before+1 {
			t.Fatalf("an unreachable gateway: err %v, failed %d -> %d", err, before, k.Failed)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
