// Package bench holds fibfleet's benchmarks that need a whole setup: the IPv4 lookup
// comparison (fibfleet's DIR-24-8 vs the kernel's FIB through bpf_fib_lookup vs a BPF
// LPM trie) on a real table. The fibbench command prints the table and draws the plot
// for docs/BENCHMARKS.md; the package's Go benchmark runs the same code at a small size
// so it cannot rot.
package bench

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// Resolved is a fib.Resolver that resolves every next hop at once to a fixed fake
// neighbour: for tests and benchmarks of the FIB itself, not of neighbours.
type Resolved struct{}

func (Resolved) Resolve(gw netip.Addr) (fib.Resolution, error) {
	return fib.Resolution{Neighbor: gw, Nexthop: dataplane.Nexthop{Ifindex: 1, MTU: 1500, Resolved: true,
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}}, nil
}
func (Resolved) Release(netip.Addr) {}

// LoadFIB applies routes (next hop gw(route)) in batches of 10,000, as the BGP stream
// delivers a dump.
func LoadFIB(f *fib.FIB, routes []table.Route, gw func(table.Route) netip.Addr) error {
	batch := make([]fib.Update, 0, 10000)
	for i, r := range routes {
		batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: gw(r)})
		if len(batch) == cap(batch) || i == len(routes)-1 {
			if err := f.Apply(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// SettleFIB retries, as the node's retry tick does, until no IPv6 key is pending (a
// key that found both its buckets full waits, its /16 passing to the kernel, for the
// neighbour moved out of its way to clear the grace period).
func SettleFIB(f *fib.FIB, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); f.Stats().V6Pending > 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		f.RetryUnresolved()
	}
	if n := f.Stats().V6Pending; n > 0 {
		return fmt.Errorf("IPv6 FIB: %d keys still pending after %v", n, timeout)
	}
	return nil
}

// LookupSetup holds one table loaded three ways: fibfleet's FIB, a kernel routing
// table in a namespace of its own (for bpf_fib_lookup) and a BPF LPM trie.
type LookupSetup struct {
	Routes []table.Route
	// Load times, for the report.
	FIBLoad, KernelLoad, LPMLoad time.Duration

	lab   *lab.Lab
	ns    *lab.Netns
	dp    *dataplane.Dataplane
	fib   *fib.FIB
	probe *dataplane.Probe
}

func gwFor(as uint32) netip.Addr { return netip.AddrFrom4([4]byte{10, 255, byte(as % 200), 1}) }

// NewLookupSetup loads routes (and sizes the probe for traces of up to traceLen).
func NewLookupSetup(routes []table.Route, traceLen int) (_ *LookupSetup, err error) {
	// Not the named result: a failure returns nil, and the cleanup below must
	// still see what was built.
	s := &LookupSetup{Routes: routes}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.lab, err = lab.New(); err != nil {
		return nil, err
	}
	if s.ns, err = s.lab.Netns("bench"); err != nil {
		return nil, err
	}
	if err = s.lab.Link(s.ns, "b0", "10.255.0.1/16", s.ns, "b1", ""); err != nil {
		return nil, err
	}
	// bpf_fib_lookup in a test run looks up as if the packet came in on lo of the
	// calling thread's namespace: forwarding must be on there (the namespace has no
	// link to the outside).
	if err = s.ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return nil, err
	}
	if s.dp, err = dataplane.Load(dataplane.Config{NodeName: s.lab.Prefix + "-bench", GroupsV4: 32768}); err != nil {
		return nil, err
	}
	if s.fib, err = fib.New(s.dp, Resolved{}, nil); err != nil {
		return nil, err
	}
	if s.probe, err = dataplane.NewProbe(s.dp, traceLen); err != nil {
		return nil, err
	}

	start := time.Now()
	if err = LoadFIB(s.fib, routes, func(r table.Route) netip.Addr { return gwFor(r.OriginAS) }); err != nil {
		return nil, err
	}
	s.FIBLoad = time.Since(start)

	start = time.Now()
	err = installKernelRoutes(s.ns, s.lab.If("b0"), routes, func(r table.Route) netip.Addr { return gwFor(r.OriginAS) })
	if err != nil {
		return nil, fmt.Errorf("kernel table: %w", err)
	}
	s.KernelLoad = time.Since(start)

	start = time.Now()
	prefixes := make([]netip.Prefix, len(routes))
	values := make([]uint32, len(routes))
	for i, r := range routes {
		prefixes[i] = r.Prefix
		values[i], _ = s.fib.SingleGroupID(gwFor(r.OriginAS))
	}
	if err = s.probe.LoadLPM(prefixes, values); err != nil {
		return nil, err
	}
	s.LPMLoad = time.Since(start)
	return s, nil
}

// Close removes everything the setup made (once; later calls do nothing).
func (s *LookupSetup) Close() {
	if s.probe != nil {
		s.probe.Close()
	}
	if s.dp != nil {
		s.dp.Close()
	}
	if s.lab != nil {
		s.lab.Close()
	}
	s.probe, s.dp, s.lab = nil, nil, nil
}

// Trace is a named list of destinations.
type Trace struct {
	Name  string
	Addrs []netip.Addr
}

func randomIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	x |= rng.Uint32() & uint32(uint64(1)<<(32-p.Bits())-1)
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
}

// RandomIn6 is a random address inside an IPv6 prefix.
func RandomIn6(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	for i := p.Bits(); i < 128; i++ {
		if rng.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	return netip.AddrFrom16(b)
}

// Traces returns the two traces of the IPv4 benchmarks: uniform over the table (a
// random route, then a random address in it) and Zipf (s = 1.1) over 10,000 such
// addresses.
func Traces(routes []table.Route, n int, seed uint64) []Trace {
	return traces(rand.New(rand.NewPCG(seed, 1)), routes, n, randomIn)
}

// Traces6 returns the same two traces for an IPv6 table.
func Traces6(routes []table.Route, n int, seed uint64) []Trace {
	return traces(rand.New(rand.NewPCG(seed, 6)), routes, n, RandomIn6)
}

func traces(rng *rand.Rand, routes []table.Route, n int, in func(*rand.Rand, netip.Prefix) netip.Addr) []Trace {
	uniform := make([]netip.Addr, n)
	for i := range uniform {
		uniform[i] = in(rng, routes[rng.IntN(len(routes))].Prefix)
	}
	hot := make([]netip.Addr, 10000)
	for i := range hot {
		hot[i] = in(rng, routes[rng.IntN(len(routes))].Prefix)
	}
	z := rand.NewZipf(rng, 1.1, 1, uint64(len(hot)-1))
	zipf := make([]netip.Addr, n)
	for i := range zipf {
		zipf[i] = hot[z.Uint64()]
	}
	return []Trace{{"uniform", uniform}, {"zipf-10k", zipf}}
}

// interleave runs every mechanism over a trace runs times, interleaved (each run
// measures all mechanisms back to back), in ns, and returns each one's answers and
// per-lookup times. lookup runs in ns, the namespace whose routes bpf_fib_lookup reads.
func interleave[M comparable](ns *lab.Netns, tr Trace, runs int, mechs []M, lookup func(M, []netip.Addr, []uint32) (time.Duration, error)) (map[M][]uint32, map[M][]float64, error) {
	out, per := map[M][]uint32{}, map[M][]float64{}
	for r := 0; r < runs; r++ {
		for _, m := range mechs {
			if out[m] == nil {
				out[m] = make([]uint32, len(tr.Addrs))
			}
			var d time.Duration
			err := ns.Do(func() error {
				var err error
				d, err = lookup(m, tr.Addrs, out[m])
				return err
			})
			if err != nil {
				return nil, nil, err
			}
			per[m] = append(per[m], float64(d.Nanoseconds())/float64(len(tr.Addrs)))
		}
	}
	return out, per, nil
}

// Mechanisms are compared in this order; the kernel's is the baseline.
var Mechanisms = []dataplane.Mechanism{dataplane.MechKernel, dataplane.MechFIB4, dataplane.MechTbl24, dataplane.MechLPMTrie}

// Result is the median of one mechanism (or, for forwarding, Label) on one trace.
type Result struct {
	Trace     string
	Mechanism dataplane.Mechanism
	Label     string
	Runs      []float64 // ns per lookup, in run order
	Median    float64
}

// Run measures every mechanism on every trace, runs times, interleaved (each run
// measures all mechanisms back to back), and checks that the three agree on which
// addresses have a route and that fibfleet (both ways) and the trie agree on the next hop.
func (s *LookupSetup) Run(traces []Trace, runs int) ([]Result, error) {
	var results []Result
	for _, tr := range traces {
		out, per, err := interleave(s.ns, tr, runs, Mechanisms, s.probe.Lookup)
		if err != nil {
			return nil, err
		}
		for i := range tr.Addrs {
			f, d, k, l := out[dataplane.MechFIB4][i], out[dataplane.MechTbl24][i], out[dataplane.MechKernel][i], out[dataplane.MechLPMTrie][i]
			if f != l || d != f || (f != 0) != (k != 0) {
				return nil, fmt.Errorf("%s: %s: fibfleet %d (tbl24 read directly %d), LPM trie %d, kernel ifindex %d disagree", tr.Name, tr.Addrs[i], f, d, l, k)
			}
		}
		for _, m := range Mechanisms {
			results = append(results, Result{Trace: tr.Name, Mechanism: m, Runs: per[m], Median: Median(per[m])})
		}
	}
	return results, nil
}

// installKernelRoutes writes routes into the main table of ns, via gw(route) on ifname.
func installKernelRoutes(ns *lab.Netns, ifname string, routes []table.Route, gw func(table.Route) netip.Addr) error {
	return ns.Do(func() error {
		link, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		k, err := fib.NewKernelRoutes(254)
		if err != nil {
			return err
		}
		defer k.Close()
		for _, r := range routes {
			if err := k.Replace(r.Prefix, gw(r), link.Index); err != nil {
				return err
			}
		}
		return k.Flush()
	})
}

// Median is the median of xs (0 for none).
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func shortName(m dataplane.Mechanism) string {
	return map[dataplane.Mechanism]string{dataplane.MechFIB4: "fibfleet", dataplane.MechTbl24: "tbl24", dataplane.MechLPMTrie: "lpm", dataplane.MechKernel: "kernel"}[m]
}
