package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// scaleFIB loads the dataplane (not attached anywhere) and a FIB on it, with a probe.
func scaleFIB(t *testing.T, groups uint32, capacity int) (*fib.FIB, *dataplane.Probe) {
	t.Helper()
	testutil.Need(t, os.Geteuid() == 0, "needs root to load BPF programs (CI runs as root)")
	dp, err := dataplane.Load(dataplane.Config{NodeName: fmt.Sprintf("fftest-scale-%d", rand.Uint32()), GroupsV4: groups})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	f, err := fib.New(dp, bench.Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dataplane.NewProbe(dp, capacity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return f, p
}

// refTable is the reference longest-prefix match: one map per length, tried from /32
// down. It shares no code with the compiler.
type refTable [33]map[netip.Prefix]netip.Addr

func newRef() *refTable {
	var r refTable
	for i := range r {
		r[i] = map[netip.Prefix]netip.Addr{}
	}
	return &r
}

func (r *refTable) lookup(a netip.Addr) (netip.Addr, bool) {
	for l := 32; l >= 0; l-- {
		p, _ := a.Prefix(l)
		if gw, ok := r[l][p]; ok {
			return gw, true
		}
	}
	return netip.Addr{}, false
}

func gwFor(asn uint32) netip.Addr { return netip.AddrFrom4([4]byte{10, 255, byte(asn % 61), 1}) }

func addrOf(x uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// probeAddrs picks addresses: uniform random ones, plus each sampled route's first and
// last address and the ones just outside it, /24 boundaries and 0.0.0.0.
func probeAddrs(rng *rand.Rand, ref *refTable, uniform, routes int) []netip.Addr {
	out := []netip.Addr{addrOf(0), addrOf(0xffffffff)}
	for i := 0; i < uniform; i++ {
		out = append(out, addrOf(rng.Uint32()))
	}
	n := 0
	for l := 0; l <= 32; l++ {
		for p := range ref[l] {
			if l > 16 && rng.IntN(4) != 0 {
				continue
			}
			first := u32(p.Addr())
			last := first | uint32(uint64(1)<<(32-l)-1)
			out = append(out, addrOf(first), addrOf(last), addrOf(first-1), addrOf(last+1), addrOf(first|0xff))
			if n++; n >= routes {
				return out
			}
		}
	}
	return out
}

// refBytes measures the heap the reference table takes for these routes.
func refBytes(t *testing.T, routes []table.Route) int64 {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ref := newRef()
	for _, r := range routes {
		ref[r.Prefix.Bits()][r.Prefix] = gwFor(r.OriginAS)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(ref)
	return int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
}

// verify compares the BPF program's answers for addrs with the reference.
func verify(t *testing.T, f *fib.FIB, p *dataplane.Probe, ref *refTable, addrs []netip.Addr, stage string) {
	t.Helper()
	out := make([]uint32, len(addrs))
	if _, err := p.Lookup(dataplane.MechFIB4, addrs, out); err != nil {
		t.Fatal(err)
	}
	ids := map[netip.Addr]uint32{}
	bad := 0
	for i, a := range addrs {
		gw, ok := ref.lookup(a)
		want := uint32(0)
		if ok {
			id, cached := ids[gw]
			if !cached {
				id, _ = f.SingleGroupID(gw)
				ids[gw] = id
			}
			want = id
		}
		if out[i] != want {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s: BPF answers %#x, reference %v (id %d)", stage, a, out[i], gw, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d addresses wrong", stage, bad, len(addrs))
	}
	t.Logf("%s: %d addresses agree with the reference", stage, len(addrs))
}

// TestRealTablesDifferential loads each bundled real table through the FIB in BGP-sized
// batches, checks the BPF program's own answers against the reference, churns (withdraw,
// next-hop change, new prefixes of every length including /25-/32) and checks again.
func TestRealTablesDifferential(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func() ([]table.Route, error)
	}{{"2026", table.Real2026}, {"caida2016", table.CAIDA2016}} {
		t.Run(tc.name, func(t *testing.T) {
			routes, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			const capacity = 1 << 21
			f, probe := scaleFIB(t, 16384, capacity)
			rng := rand.New(rand.NewPCG(11, uint64(len(routes))))
			ref := newRef()
			batch := make([]fib.Update, 0, 10000)
			flush := func() {
				if err := f.Apply(batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
			runtime.GC()
			var m0 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			for _, r := range routes {
				gw := gwFor(r.OriginAS)
				batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: gw})
				ref[r.Prefix.Bits()][r.Prefix] = gw
				if len(batch) == cap(batch) {
					flush()
				}
			}
			flush()
			elapsed := time.Since(start)
			runtime.GC()
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			// The reference table is built alongside; measure it alone to subtract it.
			heap := int64(m1.HeapAlloc) - int64(m0.HeapAlloc) - refBytes(t, routes)
			t.Logf("loaded %d routes in %v; FIB userspace heap +%d MiB = %d bytes/route (besides the fixed 80 MiB per-/24 shadow arrays allocated at start)",
				len(routes), elapsed.Round(time.Millisecond), heap>>20, heap/int64(len(routes)))
			s := f.Stats()
			if s.Routes != len(routes) || s.Refused != 0 || s.DirFallback != 0 {
				t.Fatalf("after the load: %+v", s)
			}
			t.Logf("compressed first level: %d nodes in %d lines = %.1f MiB, plus the 256 KiB dir", s.DirNodes, s.DirLines, float64(s.DirLines*64)/(1<<20))
			verify(t, f, probe, ref, probeAddrs(rng, ref, 1_000_000, 200_000), "after load")

			// Churn: 5% withdrawn, 5% moved to another next hop, 20k new prefixes.
			for i, r := range routes {
				switch {
				case i%20 == 0:
					batch = append(batch, fib.Update{Prefix: r.Prefix, Withdraw: true})
					delete(ref[r.Prefix.Bits()], r.Prefix)
				case i%20 == 1:
					gw := gwFor(r.OriginAS + 7)
					batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: gw})
					ref[r.Prefix.Bits()][r.Prefix] = gw
				}
				if len(batch) == cap(batch) {
					flush()
				}
			}
			for i := 0; i < 20000; i++ {
				p := netip.PrefixFrom(addrOf(rng.Uint32()), 8+rng.IntN(25)).Masked()
				gw := gwFor(rng.Uint32())
				batch = append(batch, fib.Update{Prefix: p, Nexthop: gw})
				ref[p.Bits()][p] = gw
				if len(batch) == cap(batch) {
					flush()
				}
			}
			flush()
			verify(t, f, probe, ref, probeAddrs(rng, ref, 1_000_000, 200_000), "after churn")
		})
	}
}

// TestConsistentUnderUpdate runs BPF lookups over a whole /16 while routes in it flip
// between two states: every answer must be the old or the new route of its address.
// Each address is covered by exactly one flipping route, so its two states are known:
// /24s that come and go over a /16, /26s that come and go inside a /24 (group creation
// and collapse), and /24s whose next hop flips in place.
func TestConsistentUnderUpdate(t *testing.T) {
	f, probe := scaleFIB(t, 16384, 1<<16)
	gw := func(i byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 254, 0, i}) }
	base := []fib.Update{{Prefix: netip.MustParsePrefix("10.0.0.0/16"), Nexthop: gw(1)}}
	// Anchor every next hop with a route outside the /16, so ids stay fixed.
	for i := byte(1); i <= 6; i++ {
		base = append(base, fib.Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 0, i}), 32), Nexthop: gw(i)})
	}
	for k := 0; k < 64; k++ {
		base = append(base, fib.Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(64 + k), 0}), 24), Nexthop: gw(3)})
	}
	flip := func(on bool) []fib.Update {
		var u []fib.Update
		for k := 0; k < 64; k++ {
			u = append(u,
				fib.Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(k), 0}), 24), Nexthop: gw(2), Withdraw: !on},
				fib.Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(64 + k), 128}), 26), Nexthop: gw(4), Withdraw: !on},
				fib.Update{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(128 + k), 0}), 24), Nexthop: gw(map[bool]byte{true: 5, false: 6}[on])})
		}
		return u
	}
	if err := f.Apply(append(base, flip(false)...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(flip(true)); err != nil { // every next hop exists from here on
		t.Fatal(err)
	}
	ids := map[byte]uint32{}
	for i := byte(1); i <= 6; i++ {
		ids[i], _ = f.SingleGroupID(gw(i))
	}
	id := func(i byte) uint32 { return ids[i] }
	// allowed[x] holds the two answers of 10.0.x.y for y in the flipping part.
	allowed := func(a netip.Addr) [2]uint32 {
		b := a.As4()
		switch {
		case b[2] < 64:
			return [2]uint32{id(1), id(2)}
		case b[2] < 128 && b[3] >= 128 && b[3] < 192:
			return [2]uint32{id(3), id(4)}
		case b[2] < 128:
			return [2]uint32{id(3), id(3)}
		case b[2] < 192:
			return [2]uint32{id(5), id(6)}
		}
		return [2]uint32{id(1), id(1)}
	}
	addrs := make([]netip.Addr, 1<<16)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var runs, bad int
	var firstBad string
	wg.Add(1)
	go func() {
		defer wg.Done()
		out := make([]uint32, len(addrs))
		for !stop.Load() {
			if _, err := probe.Lookup(dataplane.MechFIB4, addrs, out); err != nil {
				firstBad = err.Error()
				bad++
				return
			}
			runs++
			for i, a := range addrs {
				if w := allowed(a); out[i] != w[0] && out[i] != w[1] {
					if bad++; firstBad == "" {
						firstBad = fmt.Sprintf("%s answered %#x, allowed %v", a, out[i], w)
					}
				}
			}
		}
	}()
	// 300 flips, 2 ms apart: each "on" flip creates 64 groups, which stay retired for
	// the grace period, so the 16,384-group pool never runs dry.
	on := true
	const flips = 300
	for i := 0; i < flips; i++ {
		on = !on
		if err := f.Apply(flip(on)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if bad > 0 {
		t.Fatalf("%d answers were neither the old nor the new route; first: %s", bad, firstBad)
	}
	if runs < 10 {
		t.Fatalf("only %d lookup passes ran during the updates", runs)
	}
	if s := f.Stats(); s.Refused != 0 {
		t.Fatalf("the group pool ran dry during the test: %+v", s)
	}
	t.Logf("%d passes over 65,536 addresses during %d flips: every answer old or new", runs, flips)
}
