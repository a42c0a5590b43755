package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// ref6 is the reference IPv6 longest-prefix match: one map per length, tried from /128
// down. It shares no code with the FIB.
type ref6 [129]map[netip.Prefix]netip.Addr

func (r *ref6) lookup(a netip.Addr) (netip.Addr, bool) {
	for l := 128; l >= 0; l-- {
		if len(r[l]) == 0 {
			continue
		}
		if gw, ok := r[l][netip.PrefixFrom(a, l).Masked()]; ok {
			return gw, true
		}
	}
	return netip.Addr{}, false
}

func gw6For(as uint32) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 0xff, 0xff, 14: byte(as % 61 >> 8), 15: byte(1 + as%61)})
}

// verify6 runs the addresses through the BPF lookup (the production fib6_lookup, on
// the dataplane's maps) and compares every answer with the reference.
func verify6(t *testing.T, f *fib.FIB, p *dataplane.Probe6, ref *ref6, addrs []netip.Addr, stage string) {
	t.Helper()
	byID := map[uint32]netip.Addr{}
	for as := uint32(0); as < 61*3; as++ {
		if id, ok := f.SingleGroupID(gw6For(as)); ok {
			byID[id] = gw6For(as)
		}
	}
	out := make([]uint32, len(addrs))
	if _, err := p.Lookup(dataplane.Mech6FIB, addrs, out); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, a := range addrs {
		want, ok := ref.lookup(a)
		got, found := byID[out[i]]
		if found != ok || got != want {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s: BPF answers id %d (%v), reference %v (%v)", stage, a, out[i], got, want, ok)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d addresses wrong", stage, bad, len(addrs))
	}
	t.Logf("%s: %d addresses agree with the reference", stage, len(addrs))
}

// TestRealTablesDifferentialV6 loads each bundled real IPv6 table (the 2026 one, and
// RIPE RIS's 2024 view with 8,000 routes longer than /48 and a default route) through
// the FIB in BGP-sized batches, checks the BPF program's own IPv6 lookup against the
// reference, churns (withdrawals, next-hop changes, new routes of every length from
// /16 to /128) and checks again.
func TestRealTablesDifferentialV6(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root to load BPF programs (CI runs as root)")
	for _, tc := range []struct {
		name string
		load func() ([]table.Route, error)
	}{{"2026", table.Real2026v6}, {"ris2024", table.RIS2024v6}} {
		t.Run(tc.name, func(t *testing.T) {
			routes, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			dp, err := dataplane.Load(dataplane.Config{NodeName: fmt.Sprintf("fftest-scale6-%d", rand.Uint32()), GroupsV4: 16})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dp.Close() })
			f, err := fib.New(dp, bench.Resolved{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			const n = 1 << 20
			probe, err := dataplane.NewProbe6(dp, n)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { probe.Close() })

			var ref ref6
			for l := range ref {
				ref[l] = map[netip.Prefix]netip.Addr{}
			}
			batch := make([]fib.Update, 0, 10000)
			flush := func() {
				if err := f.Apply(batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
			settle := func() {
				if err := bench.SettleFIB(f, 30*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			if err := bench.LoadFIB(f, routes, func(r table.Route) netip.Addr { return gw6For(r.OriginAS) }); err != nil {
				t.Fatal(err)
			}
			loaded := time.Since(start)
			for _, r := range routes {
				ref[r.Prefix.Bits()][r.Prefix] = gw6For(r.OriginAS)
			}
			settle()
			s := f.Stats()
			t.Logf("loaded %d routes in %v (all keys placed after %v): %d keys in %d buckets, %d routes longer than /48",
				len(routes), loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), s.V6Keys, s.V6Buckets, s.V6Long)
			if s.RoutesV6 != len(routes) {
				t.Fatalf("after the load: %d IPv6 routes, want %d", s.RoutesV6, len(routes))
			}
			rng := rand.New(rand.NewPCG(12, uint64(len(routes))))
			addrs := func() []netip.Addr {
				out := make([]netip.Addr, n)
				var all []netip.Prefix
				for l := range ref {
					for p := range ref[l] {
						all = append(all, p)
					}
				}
				for i := range out {
					if i%4 == 0 {
						var b [16]byte
						for k := range b {
							b[k] = byte(rng.Uint32())
						}
						b[0] = 0x20 | b[0]&0x1f
						out[i] = netip.AddrFrom16(b)
					} else {
						out[i] = bench.RandomIn6(rng, all[rng.IntN(len(all))])
					}
				}
				return out
			}
			verify6(t, f, probe, &ref, addrs(), "after load")

			// Churn: 5% withdrawn, 5% moved to another next hop, 20k new routes.
			for i, r := range routes {
				switch {
				case i%20 == 0:
					batch = append(batch, fib.Update{Prefix: r.Prefix, Withdraw: true})
					delete(ref[r.Prefix.Bits()], r.Prefix)
				case i%20 == 1:
					gw := gw6For(r.OriginAS + 7)
					batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: gw})
					ref[r.Prefix.Bits()][r.Prefix] = gw
				}
				if len(batch) == cap(batch) {
					flush()
				}
			}
			for i := 0; i < 20000; i++ {
				base := routes[rng.IntN(len(routes))].Prefix
				p := netip.PrefixFrom(bench.RandomIn6(rng, base), 16+rng.IntN(113)).Masked()
				gw := gw6For(rng.Uint32())
				batch = append(batch, fib.Update{Prefix: p, Nexthop: gw})
				ref[p.Bits()][p] = gw
				if len(batch) == cap(batch) {
					flush()
				}
			}
			flush()
			settle()
			verify6(t, f, probe, &ref, addrs(), "after churn")
		})
	}
}
