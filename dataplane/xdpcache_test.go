package dataplane

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/dcache"
)

// TestForwardingCache runs frames through the forwarding program with the destination
// cache on, for each family: the second frame to a destination is answered by the
// cache; a route change the cache is told about (its region's generation) makes the
// entry stale, and the frame leaves by the new route; a route change it is not told
// about is still answered from the cache (proof that the cache answers at all); a
// neighbour's new MAC is used at once (entries hold nexthop ids, not MACs); a flush, a
// resize and turning it off each leave nothing to hit.
func TestForwardingCache(t *testing.T) {
	d := testDataplane(t)
	t4, err := d.V4Tables()
	if err != nil {
		t.Fatal(err)
	}
	t6, err := d.V6Tables()
	if err != nil {
		t.Fatal(err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	// Where each family's test destination's route lives, to change it as fib would.
	dst4, dst6 := netip.MustParseAddr("198.51.100.7"), "2001:db8:100::7"
	a4 := uint32(198)<<24 | 51<<16 | 100<<8
	slot6 := func() int {
		key := FIB6Key(Hi64(netip.MustParseAddr(dst6)), 48)
		for i := 0; i < len(t6.Buckets)/16*5; i++ {
			b, s := i/5, i%5
			if uint64(t6.Buckets[16*b+2*s])|uint64(t6.Buckets[16*b+2*s+1])<<32 == key {
				return 16*b + 10 + s
			}
		}
		t.Fatal("the /48 key of the IPv6 test route is not in the table")
		return 0
	}()
	families := []struct {
		f     dcache.Family
		dst   netip.Addr
		frame func() []byte
		// route points the destination's route at nexthop id; bump tells the cache.
		route func(id uint32)
		bump  func()
	}{
		{dcache.IPv4, dst4, func() []byte { return frame(frameOpts{dst: dst4, payload: 20}) },
			func(id uint32) { t4.Tbl24[a4>>8] = id; compressTbl24(t4) },
			func() { t4.Gen16[a4>>16]++ }},
		{dcache.IPv6, netip.MustParseAddr(dst6), func() []byte { return frame6(frame6Opts{dst: dst6, payload: 20}) },
			func(id uint32) { t6.Buckets[slot6] = id },
			func() { t6.Gen[Gen6Region(0x20010db8)]++ }},
	}
	for _, fam := range families {
		t.Run(fam.f.String(), func(t *testing.T) {
			// The cache is per CPU: every frame of a subtest (its own goroutine) on one.
			defer OnOneCPU()()
			c := d.Cache()
			if err := c.Resize(fam.f, 64); err != nil {
				t.Fatal(err)
			}
			last, err := c.Stats(fam.f)
			if err != nil {
				t.Fatal(err)
			}
			// send runs n frames, checks each left through a nexthop with the given MAC
			// (tagged with VLAN 100 for vlan), and returns the cache's counts.
			send := func(n int, mac net.HardwareAddr, vlan bool) dcache.Stats {
				t.Helper()
				for i := 0; i < n; i++ {
					ret, out := run(t, d, fam.frame())
					if ret != xdpRedirect || !bytes.Equal(out[:6], mac) || vlan != (out[12] == 0x81) {
						t.Fatalf("frame %d: action %d, destination MAC %x, ethertype %x; want a redirect to %s (VLAN: %v)", i, ret, out[:6], out[12:14], mac, vlan)
					}
				}
				now, err := c.Stats(fam.f)
				if err != nil {
					t.Fatal(err)
				}
				s := now.Sub(last)
				last = now
				return s
			}
			want := func(what string, got dcache.Stats, lookups, hits, misses, stale uint64) {
				t.Helper()
				if got.Lookups != lookups || got.Hits != hits || got.Misses != misses || got.Stale != stale {
					t.Fatalf("%s: %+v, want %d lookups, %d hits, %d misses, %d stale", what, got, lookups, hits, misses, stale)
				}
			}
			// cached checks what Cached reads of the cache (on this subtest's CPU).
			cached := func(what string, fresh, stale int) {
				t.Helper()
				f, s, err := d.Cached(fam.dst)
				if err != nil || f != fresh || s != stale {
					t.Fatalf("%s: Cached = %d fresh, %d stale (%v); want %d, %d", what, f, s, err, fresh, stale)
				}
			}
			cached("empty cache", 0, 0)
			want("ten frames to one destination", send(10, gwMAC, false), 10, 9, 1, 0)
			cached("after ten frames", 1, 0)

			// The route moves to nexthop 5 (VLAN 100) without the cache being told:
			// the cache still answers nexthop 1 (it is on the path).
			fam.route(5)
			want("route changed, generation not bumped", send(3, gwMAC, false), 3, 3, 0, 0)
			fam.bump()
			cached("generation bumped", 0, 1)
			want("generation bumped", send(3, gwMAC, true), 3, 2, 0, 1)

			// A neighbour's new MAC: hits use it at once.
			newMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x77}
			if err := d.SetNexthop(5, Nexthop{Ifindex: uint32(lo.Index), SrcMAC: egMAC, DstMAC: newMAC, MTU: 1500, VLAN: 100, Resolved: true}); err != nil {
				t.Fatal(err)
			}
			want("neighbour MAC changed", send(2, newMAC, true), 2, 2, 0, 0)
			if err := d.SetNexthop(5, Nexthop{Ifindex: uint32(lo.Index), SrcMAC: egMAC, DstMAC: gwMAC, MTU: 1500, VLAN: 100, Resolved: true}); err != nil {
				t.Fatal(err)
			}
			fam.route(1)
			fam.bump()
			want("route back", send(2, gwMAC, false), 2, 1, 0, 1)

			if _, err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			cached("flushed", 0, 1)
			want("flushed", send(2, gwMAC, false), 2, 1, 0, 1)
			if err := c.Resize(fam.f, 256); err != nil {
				t.Fatal(err)
			}
			want("resized", send(2, gwMAC, false), 2, 1, 1, 0)
			if err := c.Resize(fam.f, 0); err != nil {
				t.Fatal(err)
			}
			want("off", send(3, gwMAC, false), 3, 0, 0, 0)
			cached("off", 0, 0)
		})
	}
}

// TestCacheMeasurements checks what the sizing controller reads: the working-set
// estimate (HyperLogLog on a hash-sampled sixteenth, measured with the cache off too)
// against the true count of distinct destinations, and ghost hits: a trace cycling
// over a few more destinations than the cache holds is mostly misses that twice the
// cache would have hit; one cycling over far more is not.
func TestCacheMeasurements(t *testing.T) {
	d := testDataplane(t)
	p, err := NewProbe(d, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Every destination has a route (the answer cached).
	if err := p.LoadLPM([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	distinct := func(n int) []netip.Addr {
		seen := map[uint32]bool{}
		out := make([]netip.Addr, 0, n)
		for len(out) < n {
			x := rng.Uint32()
			if !seen[x] {
				seen[x] = true
				out = append(out, netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}))
			}
		}
		return out
	}
	cycle := func(dsts []netip.Addr, n int) []netip.Addr {
		out := make([]netip.Addr, n)
		for i := range out {
			out[i] = dsts[i%len(dsts)]
		}
		return out
	}
	lookup := func(trace []netip.Addr) {
		t.Helper()
		if _, err := p.Lookup(MechLPMCached, trace, make([]uint32, len(trace))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		n     int
		cache int
		tol   float64
	}{{2000, 0, 0.35}, {30_000, 1 << 10, 0.15}, {300_000, 0, 0.1}} {
		if err := p.SetCache(tc.cache); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Cache().WorkingSet(dcache.IPv4, true); err != nil {
			t.Fatal(err)
		}
		lookup(cycle(distinct(tc.n), 3*tc.n))
		got, err := p.Cache().WorkingSet(dcache.IPv4, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d distinct destinations (cache %d): working set %.0f", tc.n, tc.cache, got)
		if got < float64(tc.n)*(1-tc.tol) || got > float64(tc.n)*(1+tc.tol) {
			t.Errorf("%d distinct destinations: working set %.0f, want within %.0f%%", tc.n, got, 100*tc.tol)
		}
		if after, _ := p.Cache().WorkingSet(dcache.IPv4, false); after != 0 {
			t.Errorf("working set after a reset: %.0f, want 0", after)
		}
	}

	// Ghosts: a 256-entry cache (64 sets, every one keeping ghosts).
	for _, tc := range []struct {
		n        int
		min, max float64 // ghost hits per miss
	}{{320, 0.5, 1}, {20_000, 0, 0.1}} {
		if err := p.SetCache(256); err != nil {
			t.Fatal(err)
		}
		before, _ := p.CacheStats()
		lookup(cycle(distinct(tc.n), 20*tc.n))
		after, err := p.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		s := after.Sub(before)
		ratio := float64(s.GhostHits) / float64(s.Misses)
		t.Logf("%d destinations cycling through 256 entries: %+v, ghost hits per miss %.2f", tc.n, s, ratio)
		if s.Misses == 0 || ratio < tc.min || ratio > tc.max {
			t.Errorf("%d destinations cycling through 256 entries: %d ghost hits for %d misses, want %.1f-%.1f per miss", tc.n, s.GhostHits, s.Misses, tc.min, tc.max)
		}
	}
}

// TestCacheSizes refuses sizes that are not powers of two in range.
func TestCacheSizes(t *testing.T) {
	d := testDataplane(t)
	for _, n := range []int{-4, 1, 2, 3, 6, 100, dcache.MaxEntries * 2} {
		if err := d.Cache().Resize(dcache.IPv4, n); err == nil {
			t.Errorf("a cache of %d entries was accepted", n)
		}
	}
	for _, n := range []int{0, 4, 1 << 12, dcache.MaxEntries} {
		if err := d.Cache().Resize(dcache.IPv6, n); err != nil {
			t.Errorf("a cache of %d entries: %v", n, err)
		}
		if got := d.Cache().Entries(dcache.IPv6); got != n {
			t.Errorf("resized to %d, Entries says %d", n, got)
		}
	}
}

// TestResizeUnderTraffic resizes both families' caches over and over (and turns them
// off and on) while frames of both families keep going through the forwarding
// program: every frame must still leave by its route, none dropped, none passed.
func TestResizeUnderTraffic(t *testing.T) {
	d := testDataplane(t)
	frames := [][]byte{frame(frameOpts{dst: netip.MustParseAddr("198.51.100.7"), payload: 20}), frame6(frame6Opts{dst: "2001:db8:100::7", payload: 20})}
	const rounds = 40
	var resized atomic.Int32
	errc := make(chan error, 1)
	go func() {
		sizes := []int{4, 64, 0, 1024, 16, 1 << 14, 256, 0}
		for n := 0; n < rounds; n++ {
			for f := range 2 {
				if err := d.Cache().Resize(dcache.Family(f), sizes[n%len(sizes)]); err != nil {
					errc <- err
					return
				}
			}
			resized.Add(1)
		}
		errc <- nil
	}()
	sent := 0
	for ; resized.Load() < rounds && sent < 10_000_000; sent++ {
		in := frames[sent%2]
		opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+512)}
		ret, err := d.Program().Run(opts)
		if err != nil {
			t.Fatal(err)
		}
		if ret != xdpRedirect || !bytes.Equal(opts.DataOut[:6], gwMAC) {
			t.Fatalf("frame %d during resizes: action %d, destination MAC %x; want a redirect to %s", sent, ret, opts.DataOut[:6], gwMAC)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames forwarded during %d resizes of each family", sent, rounds)
	s := stats(t, d)
	if s[Forwarded].Packets+s[ForwardedV6].Packets != uint64(sent) || s[ForwardedV6].Packets != uint64(sent/2) || s.Passed() != 0 {
		t.Errorf("counters %+v: want all %d frames forwarded and nothing passed", s, sent)
	}
}
