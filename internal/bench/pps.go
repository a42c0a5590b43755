package bench

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// Forwarding modes compared by the packets-per-second benchmark.
const (
	ModeKernel       = "Linux kernel forwarding"
	ModeXDPKernelFIB = "XDP + bpf_fib_lookup"
	ModeXDPCompiled  = "XDP + fibfleet FIB"
	// ModeXDPTbl24 is fibfleet's program with every Dir entry sending lookups to tbl24
	// (its fallback path): plain DIR-24-8, to measure what the compression brings.
	ModeXDPTbl24 = "XDP + fibfleet FIB uncompressed (DIR-24-8)"
	// ModeXDPECMP2 and ModeXDPECMP16 are fibfleet's FIB with every route's group
	// holding 2 and 16 members (ECMP): the flow hash picks one per packet.
	ModeXDPECMP2  = "XDP + fibfleet FIB, 2-way ECMP"
	ModeXDPECMP16 = "XDP + fibfleet FIB, 16-way ECMP"
)

// PPSModes in the order they are measured; the kernel is the baseline.
var PPSModes = []string{ModeKernel, ModeXDPKernelFIB, ModeXDPCompiled, ModeXDPTbl24, ModeXDPECMP2, ModeXDPECMP16}

// PPSSetup is gen -- router -- sink in namespaces, the router holding a table three
// ways: in its kernel table, and in two dataplanes (kernel FIB and compiled FIB) that
// are attached in turn.
type PPSSetup struct {
	lab                  *lab.Lab
	gen, rtr, sink       *lab.Netns
	kernelDP, compiledDP *dataplane.Dataplane
	gen0                 int
	g                    *Generator
	sinkLink             link.Link
	fib                  *fib.FIB
	resolver             *fib.NexthopResolver
	routes               []table.Route
	addrs                ppsAddrs
}

// ppsAddrs are one family's addresses in gen -- router -- sink.
type ppsAddrs struct {
	gen, r0, r1, sink netip.Prefix
	// gateways are the router's neighbours towards the sink (all the sink's MAC): the
	// first is every route's next hop; ECMP modes add the others.
	gateways []netip.Addr
}

func ppsAddrsOf(v6 bool) ppsAddrs {
	a := ppsAddrs{gen: netip.MustParsePrefix("10.20.0.2/24"), r0: netip.MustParsePrefix("10.20.0.1/24"),
		r1: netip.MustParsePrefix("10.21.0.1/24"), sink: netip.MustParsePrefix("10.21.0.2/24")}
	if v6 {
		a = ppsAddrs{gen: netip.MustParsePrefix("fd00:20::2/64"), r0: netip.MustParsePrefix("fd00:20::1/64"),
			r1: netip.MustParsePrefix("fd00:21::1/64"), sink: netip.MustParsePrefix("fd00:21::2/64")}
	}
	gw := a.sink.Addr()
	for range 16 {
		a.gateways = append(a.gateways, gw)
		gw = gw.Next()
	}
	return a
}

// PPSModesFor are the modes that apply to a family (the uncompressed DIR-24-8 is
// IPv4's).
func PPSModesFor(v6 bool) []string {
	if !v6 {
		return PPSModes
	}
	return []string{ModeKernel, ModeXDPKernelFIB, ModeXDPCompiled, ModeXDPECMP2, ModeXDPECMP16}
}

// setMembers points every route at the first n gateways (one group of n members).
func (s *PPSSetup) setMembers(n int) error {
	batch := make([]fib.Update, 0, len(s.routes))
	for _, r := range s.routes {
		batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: s.addrs.gateways[0], Multipath: s.addrs.gateways[1:n]})
	}
	return s.rtr.Do(func() error { return s.fib.Apply(batch) })
}

// Close removes everything.
func (s *PPSSetup) Close() {
	if s.sinkLink != nil {
		s.sinkLink.Close()
	}
	if s.g != nil {
		s.g.Close()
	}
	if s.resolver != nil {
		s.resolver.Close()
	}
	for _, dp := range []*dataplane.Dataplane{s.kernelDP, s.compiledDP} {
		if dp != nil {
			dp.Close()
		}
	}
	if s.lab != nil {
		s.lab.Close()
	}
}

func mac(ns *lab.Netns, ifname string) (m net.HardwareAddr, index int, err error) {
	err = ns.Do(func() error {
		i, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		m, index = i.HardwareAddr, i.Index
		return nil
	})
	return m, index, err
}

// NewPPSSetup builds the topology and loads routes (next hop: the sink) three ways;
// the routes and the trace are all IPv4 or all IPv6.
func NewPPSSetup(routes []table.Route, trace []netip.Addr) (_ *PPSSetup, err error) {
	if len(routes) == 0 {
		return nil, errors.New("bench: no routes to forward along")
	}
	v6 := routes[0].Prefix.Addr().Is6()
	// Not the named result: a failure returns nil, and the cleanup below must
	// still see what was built.
	s := &PPSSetup{addrs: ppsAddrsOf(v6)}
	a := s.addrs
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.lab, err = lab.New(); err != nil {
		return nil, err
	}
	for _, n := range []struct {
		p    **lab.Netns
		role string
	}{{&s.gen, "gen"}, {&s.rtr, "rtr"}, {&s.sink, "sink"}} {
		if *n.p, err = s.lab.Netns(n.role); err != nil {
			return nil, err
		}
	}
	if err = s.lab.Link(s.gen, "g0", "", s.rtr, "r0", ""); err != nil {
		return nil, err
	}
	if err = s.lab.Link(s.rtr, "r1", "", s.sink, "k1", ""); err != nil {
		return nil, err
	}
	fam, forwarding := "-4", "net.ipv4.ip_forward"
	if v6 {
		fam, forwarding = "-6", "net.ipv6.conf.all.forwarding"
	}
	for _, x := range []struct {
		ns   *lab.Netns
		role string
		addr netip.Prefix
	}{{s.gen, "g0", a.gen}, {s.rtr, "r0", a.r0}, {s.rtr, "r1", a.r1}, {s.sink, "k1", a.sink}} {
		args := []string{"ip", fam, "addr", "add", x.addr.String(), "dev", s.lab.If(x.role)}
		if v6 {
			args = append(args, "nodad")
		}
		if _, err = x.ns.Exec(args...); err != nil {
			return nil, err
		}
	}
	if err = s.rtr.Sysctl(forwarding, "1"); err != nil {
		return nil, err
	}
	sinkMAC, sinkIdx, err := mac(s.sink, s.lab.If("k1"))
	if err != nil {
		return nil, err
	}
	r0MAC, _, err := mac(s.rtr, s.lab.If("r0"))
	if err != nil {
		return nil, err
	}
	g0MAC, g0Idx, err := mac(s.gen, s.lab.If("g0"))
	if err != nil {
		return nil, err
	}
	s.gen0 = g0Idx
	// Permanent neighbours: every mode starts resolved.
	for _, gw := range a.gateways {
		if _, err = s.rtr.Exec("ip", "neigh", "replace", gw.String(), "lladdr", sinkMAC.String(), "dev", s.lab.If("r1"), "nud", "permanent"); err != nil {
			return nil, err
		}
	}
	// Without an XDP program, r0 accepts the generator's XDP frames only with GRO on.
	if err = lab.SetGRO(s.rtr, s.lab.If("r0"), true); err != nil {
		return nil, err
	}
	if s.g, err = NewGenerator(trace, a.gen.Addr(), g0MAC, r0MAC); err != nil {
		return nil, err
	}
	err = s.sink.Do(func() error {
		s.sinkLink, err = link.AttachXDP(link.XDPOptions{Program: s.g.Sink(), Interface: sinkIdx})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attach the sink: %w", err)
	}
	gw := a.gateways[0]
	err = installKernelRoutes(s.rtr, s.lab.If("r1"), routes, func(table.Route) netip.Addr { return gw })
	if err != nil {
		return nil, fmt.Errorf("kernel routes: %w", err)
	}
	if s.kernelDP, err = dataplane.Load(dataplane.Config{NodeName: s.lab.Prefix + "-kfib", FIBBackend: dataplane.BackendKernel}); err != nil {
		return nil, err
	}
	if s.compiledDP, err = dataplane.Load(dataplane.Config{NodeName: s.lab.Prefix + "-cfib", GroupsV4: 32768}); err != nil {
		return nil, err
	}
	if err = s.rtr.Do(func() error { s.resolver, err = fib.NewNexthopResolver(nil); return err }); err != nil {
		return nil, err
	}
	f, err := fib.New(s.compiledDP, s.resolver, nil)
	if err != nil {
		return nil, err
	}
	s.fib, s.routes = f, routes
	batch := make([]fib.Update, 0, len(routes))
	for _, r := range routes {
		batch = append(batch, fib.Update{Prefix: r.Prefix, Nexthop: gw})
	}
	// In the router's namespace, like the node: nexthops resolve there.
	if err = s.rtr.Do(func() error { return f.Apply(batch) }); err != nil {
		return nil, err
	}
	if st := f.Stats(); st.UnresolvedNexthops != 0 {
		return nil, fmt.Errorf("the sink's nexthop did not resolve: %+v", st)
	}
	return s, nil
}

func (s *PPSSetup) attach(dp *dataplane.Dataplane) error {
	return s.rtr.Do(func() error {
		for _, i := range []string{"r0", "r1"} {
			if err := dp.Attach(s.lab.If(i), dataplane.ModeNative); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *PPSSetup) detach(dp *dataplane.Dataplane) error {
	for _, i := range []string{"r0", "r1"} {
		if err := dp.Detach(s.lab.If(i)); err != nil {
			return err
		}
	}
	return nil
}

// Measure offers frames with the router in a mode and returns the rate at which they
// reached the sink, in packets per second.
func (s *PPSSetup) Measure(mode string, frames int) (_ float64, err error) {
	var dp *dataplane.Dataplane
	switch mode {
	case ModeXDPKernelFIB:
		dp = s.kernelDP
	case ModeXDPCompiled:
		dp = s.compiledDP
	case ModeXDPTbl24:
		dp = s.compiledDP
		// Nothing updates the FIB while the benchmark runs: swap the Dir out and back.
		t, err := dp.V4Tables()
		if err != nil {
			return 0, err
		}
		saved := append([]uint32(nil), t.Dir...)
		for i := range t.Dir {
			t.Dir[i] = dataplane.FIB4Tbl24
		}
		defer copy(t.Dir, saved)
	case ModeXDPECMP2, ModeXDPECMP16:
		dp = s.compiledDP
		n := map[string]int{ModeXDPECMP2: 2, ModeXDPECMP16: 16}[mode]
		if err := s.setMembers(n); err != nil {
			return 0, err
		}
		defer func() {
			if e := s.setMembers(1); e != nil {
				err = errors.Join(err, fmt.Errorf("bench: put the routes back on one next hop: %w", e))
			}
		}()
	}
	if dp != nil {
		if err := s.attach(dp); err != nil {
			return 0, err
		}
		defer s.detach(dp)
	}
	before, err := s.g.Received()
	if err != nil {
		return 0, err
	}
	var d time.Duration
	if err := s.gen.Do(func() error { d, err = s.g.Send(s.gen0, frames); return err }); err != nil {
		return 0, err
	}
	time.Sleep(20 * time.Millisecond) // let the last batch drain
	after, err := s.g.Received()
	if err != nil {
		return 0, err
	}
	// The generator offers frames faster than any mode forwards them, so a share is
	// dropped at the veth rings: the rate is the maximum forwarding rate under overload
	// (RFC 2889), and how much is lost depends on the machine's load. Only a path that
	// delivers (almost) nothing is broken.
	if after-before < uint64(frames)/100 {
		var why string
		if dp != nil {
			if st, err := dp.Stats(); err == nil {
				why = " " + st.Counted()
			}
		}
		return 0, fmt.Errorf("%s: only %d of %d frames reached the sink (router XDP counters:%s)", mode, after-before, frames, why)
	}
	return float64(after-before) / d.Seconds(), nil
}

// SetTrace switches the generator to another trace of the same length.
func (s *PPSSetup) SetTrace(trace []netip.Addr) error { return s.g.SetTrace(trace) }

func ppsShort(mode string) string {
	return map[string]string{ModeKernel: "kernel", ModeXDPKernelFIB: "xdp-kfib", ModeXDPCompiled: "fibfleet", ModeXDPTbl24: "tbl24",
		ModeXDPECMP2: "ecmp2", ModeXDPECMP16: "ecmp16"}[mode]
}
