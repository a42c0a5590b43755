package bench

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// labNet6 is the benchmark namespace's own IPv6 link: table prefixes overlapping it
// are left out, and the kernel's next hops are on it.
var labNet6 = netip.MustParsePrefix("2001:db8:ffff::/48")

func gw6For(v uint32) netip.Addr {
	b := labNet6.Addr().As16()
	b[14], b[15] = byte(v>>8), byte(v)
	return netip.AddrFrom16(b)
}

// LookupSetup6 holds an IPv6 table loaded five ways: fibfleet's FIB (a dataplane and
// the fib package, as a node has them), the two trie candidates, a kernel routing table
// in a namespace of its own (for bpf_fib_lookup) and a BPF LPM trie.
type LookupSetup6 struct {
	Routes []table.Route
	// StrideBytes and CompressedBytes are the candidates' sizes; Nodes their node
	// count. FIB is the production FIB's state after the load.
	StrideBytes, CompressedBytes, Nodes int
	FIB                                 fib.Stats
	// Load times, for the report.
	BuildTime, FIBLoad, KernelLoad, LPMLoad time.Duration

	lab   *lab.Lab
	ns    *lab.Netns
	dp    *dataplane.Dataplane
	fib   *fib.FIB
	probe *dataplane.Probe6
	cands *candProbe
	// value maps the FIB's nexthop ids to the candidates' values.
	value map[uint32]uint32
}

// NewLookupSetup6 loads routes up to /64 (and sizes the probe for traces of up to
// traceLen), the tries with the given strides (see v6cand.go).
func NewLookupSetup6(all []table.Route, traceLen int, strides []int) (_ *LookupSetup6, err error) {
	// Not the named result: a failure returns nil, and the cleanup below must
	// still see what was built.
	s := &LookupSetup6{}
	for _, r := range all {
		if r.Prefix.Addr().Is6() && r.Prefix.Bits() <= 64 && !r.Prefix.Overlaps(labNet6) {
			s.Routes = append(s.Routes, r)
		}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	start := time.Now()
	trie := buildV6Trie(s.Routes, v6Value, strides)
	stride, comp := trie.Stride(), trie.Compressed()
	s.BuildTime = time.Since(start)
	s.StrideBytes, s.CompressedBytes, s.Nodes = imageBytes(stride), imageBytes(comp), trie.nodes

	if s.lab, err = lab.New(); err != nil {
		return nil, err
	}
	if s.dp, err = dataplane.Load(dataplane.Config{NodeName: s.lab.Prefix + "-bench6", GroupsV4: 16}); err != nil {
		return nil, err
	}
	if s.fib, err = fib.New(s.dp, Resolved{}, nil); err != nil {
		return nil, err
	}
	start = time.Now()
	if err = LoadFIB(s.fib, s.Routes, func(r table.Route) netip.Addr { return gw6For(v6Value(r)) }); err != nil {
		return nil, err
	}
	if err = SettleFIB(s.fib, time.Minute); err != nil {
		return nil, err
	}
	s.FIBLoad = time.Since(start)
	s.FIB = s.fib.Stats()
	s.value = map[uint32]uint32{}
	for v := uint32(1); v <= 200; v++ {
		if id, ok := s.fib.SingleGroupID(gw6For(v)); ok {
			s.value[id] = v
		}
	}
	if s.probe, err = dataplane.NewProbe6(s.dp, traceLen); err != nil {
		return nil, err
	}
	if s.cands, err = newCandProbe(traceLen, stride, comp); err != nil {
		return nil, err
	}
	if s.ns, err = s.lab.Netns("bench6"); err != nil {
		return nil, err
	}
	if err = s.lab.Link(s.ns, "b0", "", s.ns, "b1", ""); err != nil {
		return nil, err
	}
	// nodad: the address is usable at once. Forwarding on, or bpf_fib_lookup refuses.
	if _, err = s.ns.Exec("ip", "-6", "addr", "add", gw6For(0xffff).String()+"/48", "dev", s.lab.If("b0"), "nodad"); err != nil {
		return nil, err
	}
	if err = s.ns.Sysctl("net.ipv6.conf.all.forwarding", "1"); err != nil {
		return nil, err
	}
	start = time.Now()
	if err = installKernelRoutes(s.ns, s.lab.If("b0"), s.Routes, func(r table.Route) netip.Addr { return gw6For(v6Value(r)) }); err != nil {
		return nil, fmt.Errorf("kernel table: %w", err)
	}
	s.KernelLoad = time.Since(start)

	start = time.Now()
	prefixes := make([]netip.Prefix, len(s.Routes))
	values := make([]uint32, len(s.Routes))
	for i, r := range s.Routes {
		prefixes[i], values[i] = r.Prefix, v6Value(r)
	}
	if err = s.probe.LoadLPM(prefixes, values); err != nil {
		return nil, err
	}
	s.LPMLoad = time.Since(start)
	return s, nil
}

// Close removes everything the setup made.
func (s *LookupSetup6) Close() {
	if s.probe != nil {
		s.probe.Close()
	}
	if s.cands != nil {
		s.cands.Close()
	}
	if s.dp != nil {
		s.dp.Close()
	}
	if s.lab != nil {
		s.lab.Close()
	}
}

// Mechanism6 is an IPv6 lookup the comparison runs: one of the dataplane probe's or a
// trie candidate of v6cand.c.
type Mechanism6 int

const (
	Kernel6 Mechanism6 = iota
	Stride6
	Compressed6
	FIB6
	LPMTrie6
	Loop6
)

// probeMech is each mechanism's in the dataplane's probe (the candidates have none).
var probeMech = map[Mechanism6]dataplane.Mechanism6{Kernel6: dataplane.Mech6Kernel, FIB6: dataplane.Mech6FIB,
	LPMTrie6: dataplane.Mech6LPMTrie, Loop6: dataplane.Mech6Loop}

func (m Mechanism6) String() string {
	switch m {
	case Stride6:
		return candStride.String()
	case Compressed6:
		return candCompressed.String()
	}
	return probeMech[m].String()
}

// Mechanisms6 are compared in this order; the kernel's is the baseline.
var Mechanisms6 = []Mechanism6{Kernel6, Stride6, Compressed6, FIB6, LPMTrie6, Loop6}

func (s *LookupSetup6) lookup(m Mechanism6, addrs []netip.Addr, out []uint32) (time.Duration, error) {
	switch m {
	case Stride6:
		return s.cands.Lookup(candStride, addrs, out)
	case Compressed6:
		return s.cands.Lookup(candCompressed, addrs, out)
	}
	return s.probe.Lookup(probeMech[m], addrs, out)
}

// Result6 is the median of one IPv6 mechanism on one trace.
type Result6 struct {
	Trace     string
	Mechanism Mechanism6
	Runs      []float64 // ns per lookup, in run order
	Median    float64
}

// Run measures every mechanism on every trace, runs times, interleaved, and checks
// that fibfleet's FIB, the candidates and the trie give the same answer for every
// address and the kernel finds a route exactly where they do.
func (s *LookupSetup6) Run(traces []Trace, runs int) ([]Result6, error) {
	var results []Result6
	for _, tr := range traces {
		out, per, err := interleave(s.ns, tr, runs, Mechanisms6, s.lookup)
		if err != nil {
			return nil, err
		}
		for i := range tr.Addrs {
			st, c, h, l, k := out[Stride6][i], out[Compressed6][i], s.value[out[FIB6][i]], out[LPMTrie6][i], out[Kernel6][i]
			if st != l || c != l || h != l || (l != 0) != (k != 0) {
				return nil, fmt.Errorf("%s: %s: stride %d, compressed %d, fibfleet %d, LPM trie %d, kernel ifindex %d disagree", tr.Name, tr.Addrs[i], st, c, h, l, k)
			}
		}
		for _, m := range Mechanisms6 {
			results = append(results, Result6{Trace: tr.Name, Mechanism: m, Runs: per[m], Median: Median(per[m])})
		}
	}
	return results, nil
}
