package fib

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/internal/testutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestSweepKernel: the sweep after a load removes a BGP route an earlier process left
// in the kernel that the FIB does not hold; after a start that found none, every BGP
// route there is this process's (the sync removes what the FIB withdraws), so the
// sweep does not dump the table at all (seconds and hundreds of MB with a full
// table): a route written behind the sync's back after such a start stays.
func TestSweepKernel(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for a network namespace (CI runs as root)")
	for _, earlier := range []bool{true, false} {
		t.Run(fmt.Sprintf("a route left before the start: %v", earlier), func(t *testing.T) {
			inNewNetns(t, func(h netns.NsHandle) {
				la := netlink.NewLinkAttrs()
				la.Name = "ffks0"
				if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "ffks1"}); err != nil {
					t.Fatal(err)
				}
				link, err := netlink.LinkByName("ffks0")
				if err != nil {
					t.Fatal(err)
				}
				addr, _ := netlink.ParseAddr("10.255.0.1/16")
				if err := netlink.AddrAdd(link, addr); err != nil {
					t.Fatal(err)
				}
				if err := netlink.LinkSetUp(link); err != nil {
					t.Fatal(err)
				}
				kr, err := NewKernelRoutes(254)
				if err != nil {
					t.Fatal(err)
				}
				defer kr.Close()
				stray := pfx("198.51.100.0/24")
				write := func() {
					if err := kr.Replace(stray, ip("10.255.0.2"), link.Attrs().Index); err != nil {
						t.Fatal(err)
					}
					if err := kr.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				held := func() bool {
					rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 254, Protocol: rtprotBGP},
						netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rs {
						if r.Dst != nil && strings.HasPrefix(r.Dst.String(), "198.51.100.0/24") {
							return true
						}
					}
					return false
				}
				if earlier {
					write()
				}
				f := newFIB(t, newFakeDP(t, 16), &fakeRes{macs: map[netip.Addr]net.HardwareAddr{}, unresolved: map[netip.Addr]bool{}, local: map[netip.Addr]bool{}})
				ks := NewKernelSync(254, nil)
				f.SyncKernel(ks)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() {
					// The sync's sockets must be opened in the namespace: on a thread
					// of its own, never unlocked (it ends with the goroutine).
					runtime.LockOSThread()
					if err := netns.Set(h); err != nil {
						done <- err
						return
					}
					done <- ks.Run(ctx)
				}()
				defer func() {
					cancel()
					if err := <-done; err != nil {
						t.Error(err)
					}
				}()
				testutil.Eventually(t, "the sync's start read the table", func() bool { return ks.Adopted.Load() == 1 || ks.clean.Load() })
				if !earlier {
					write()
				}
				n, err := f.SweepKernel()
				if err != nil {
					t.Fatal(err)
				}
				if earlier {
					if n != 1 {
						t.Fatalf("the sweep queued %d routes for removal, want the earlier process's one", n)
					}
					testutil.Eventually(t, "the earlier route removed from the kernel", func() bool { return !held() })
					return
				}
				if n != 0 || !held() {
					t.Fatalf("after a clean start the sweep queued %d routes (the route written after the start held: %v): want it not to look", n, held())
				}
			})
		})
	}
}

// inNewNetns runs fn with the test's thread in a network namespace of its own, and
// puts the thread back and removes the namespace after (a fatal failure included).
func inNewNetns(t *testing.T, fn func(netns.NsHandle)) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	name := fmt.Sprintf("ffks%d", os.Getpid())
	h, err := netns.NewNamed(name) // the thread is in it from here
	defer func() {
		// A thread that cannot go back stays locked: it ends with the test.
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
		orig.Close()
		if h.IsOpen() {
			h.Close()
		}
		_ = netns.DeleteNamed(name)
	}()
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	fn(h)
}

// TestAdoptedRoutesCompact: a restart's set of the kernel's routes, kept through its
// whole load, costs about 8 bytes a route (a map cost 24 to 32: 29-38 MB for a full
// table), and each adopted route is skipped once: taken, then written as this
// process's.
func TestAdoptedRoutesCompact(t *testing.T) {
	const n = 500_000
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	// As adopt reads them: appended one by one.
	var hashes []uint64
	for i := range n {
		hashes = append(hashes, kernelRouteHash(netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0}), 24), kernelOp{gw: netip.MustParseAddr("192.0.2.1"), oif: 2}))
	}
	hashes = append(hashes, hashes[0]) // a duplicate: one route
	set := newRouteHashes(hashes)
	hashes = nil
	perRoute := float64(heap()-before) / n
	t.Logf("%d adopted routes: %.1f bytes a route", set.len(), perRoute)
	if set.len() != n {
		t.Fatalf("%d routes in the set, want %d (one duplicate)", set.len(), n)
	}
	if perRoute > 10 {
		t.Errorf("%.1f bytes a route, want at most 10 (a map: 24 to 32)", perRoute)
	}
	some := kernelRouteHash(netip.MustParsePrefix("0.0.7.0/24"), kernelOp{gw: netip.MustParseAddr("192.0.2.1"), oif: 2})
	if !set.take(some) {
		t.Error("an adopted route is not found")
	}
	if set.take(some) {
		t.Error("an adopted route is taken twice: a change back to it would not be written")
	}
	if set.take(kernelRouteHash(netip.MustParsePrefix("0.0.7.0/24"), kernelOp{gw: netip.MustParseAddr("192.0.2.9"), oif: 2})) {
		t.Error("the same prefix through another gateway is taken as adopted")
	}
	var none *routeHashes
	if none.take(some) {
		t.Error("a dropped set takes a route")
	}
	runtime.KeepAlive(set)
}
