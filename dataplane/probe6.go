package dataplane

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
)

// Mechanism6 is an IPv6 lookup the Probe6 can run.
type Mechanism6 int

const (
	// Mech6Kernel is bpf_fib_lookup(AF_INET6) on the calling thread's network
	// namespace (answers: egress ifindex, 0 when there is no route).
	Mech6Kernel Mechanism6 = iota
	// Mech6LPMTrie is a BPF LPM trie filled with LoadLPM.
	Mech6LPMTrie
	// Mech6Loop is the loop alone (answers: the address's first word): the floor
	// included in every other figure.
	Mech6Loop
	// Mech6FIB is fibfleet's IPv6 FIB (bpf/fib6.h), on a Dataplane's maps (answers:
	// group ids).
	Mech6FIB
	// Mech6FIBCached, Mech6LPMCached and Mech6KernelCached are Mech6FIB,
	// Mech6LPMTrie and Mech6Kernel behind the destination cache (bpf/dcache.h, sized
	// with SetCache); answers carry ProbeHit when the cache answered.
	Mech6FIBCached
	Mech6LPMCached
	Mech6KernelCached
)

func (m Mechanism6) String() string {
	return [...]string{"bpf_fib_lookup", "BPF LPM trie", "loop alone (floor)", "fibfleet FIB (length hash)",
		"fibfleet FIB + cache", "BPF LPM trie + cache", "bpf_fib_lookup + cache"}[m]
}

// Probe6 runs IPv6 lookups over a trace inside BPF (bpf_loop in BPF_PROG_TEST_RUN),
// each mechanism timed the same way, loop included: for differential tests, per-lookup
// benchmarks and the cache's cost calibration.
type Probe6 struct {
	objs          fib6probeObjects
	cache         *Cache
	trace, result []uint32
	mmaps         [][]byte
}

// NewProbe6 loads the probe for up to capacity addresses per Lookup on d's IPv6 FIB
// maps (d may be nil: then Mech6FIB finds no route).
func NewProbe6(d *Dataplane, capacity int) (*Probe6, error) {
	var fibMaps map[string]*ebpf.Map
	if d != nil {
		fibMaps = map[string]*ebpf.Map{"fib6_dir": d.objs.Fib6Dir, "fib6_table": d.objs.Fib6Table, "fib6_long": d.objs.Fib6Long, "fib6_gen": d.objs.Fib6Gen}
	}
	return newProbe6(capacity, fibMaps)
}

// NewPinnedProbe6 loads the probe (Mech6FIB only) on the IPv6 FIB maps a running node
// pinned, to look up what its XDP program would answer from outside its process.
func NewPinnedProbe6(bpffs, node string, capacity int) (*Probe6, error) {
	dir, err := LivePinDir(bpffs, node)
	if err != nil {
		return nil, err
	}
	maps := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range maps {
			m.Close() // the probe's program holds its own references
		}
	}()
	for _, name := range fib6MapNames {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if err != nil {
			return nil, fmt.Errorf("dataplane: open pinned %s of node %q (is it running?): %w", name, node, err)
		}
		maps[name] = m
	}
	return newProbe6(capacity, maps)
}

func newProbe6(capacity int, fibMaps map[string]*ebpf.Map) (*Probe6, error) {
	spec, err := loadFib6probe()
	if err != nil {
		return nil, err
	}
	if t := fibMaps["fib6_table"]; t != nil {
		log := bits.Len32(t.MaxEntries()) - 1
		if err := spec.Variables["fib6_log2"].Set(uint32(log)); err != nil {
			return nil, err
		}
	} else {
		spec.Maps["fib6_table"].MaxEntries = 2 // unused: no FIB to read
		if err := spec.Variables["fib6_log2"].Set(uint32(1)); err != nil {
			return nil, err
		}
	}
	for _, name := range fib6MapNames {
		spec.Maps[name].Pinning = ebpf.PinNone
		if m := fibMaps[name]; m != nil {
			spec.Maps[name].MaxEntries = m.MaxEntries()
		}
	}
	rows := func(n, per int) uint32 { return uint32(max(1, (n+per-1)/per)) }
	spec.Maps["probe6_trace"].MaxEntries = rows(capacity, 64)
	spec.Maps["probe6_result"].MaxEntries = rows(capacity, 256)
	p := &Probe6{}
	if err := spec.LoadAndAssign(&p.objs, &ebpf.CollectionOptions{MapReplacements: fibMaps}); err != nil {
		return nil, fmt.Errorf("dataplane: load IPv6 lookup probe: %w", err)
	}
	o := &p.objs
	p.cache = newCache(o.DcCtl, o.Dc4Maps, o.Dc6Maps, o.DcStats, o.DcHll)
	for _, f := range []struct {
		m   *ebpf.Map
		dst *[]uint32
	}{{p.objs.Probe6Trace, &p.trace}, {p.objs.Probe6Result, &p.result}} {
		u, b, err := mmapU32(f.m)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.mmaps = append(p.mmaps, b)
		*f.dst = u
	}
	return p, nil
}

// Close frees the probe.
func (p *Probe6) Close() error {
	p.cache.close()
	return closeProbe(&p.mmaps, &p.objs)
}

// Cache is the probe's own destination cache (the production code, its own maps).
func (p *Probe6) Cache() *Cache { return p.cache }

// LoadLPM fills the LPM trie reference with prefix -> value.
func (p *Probe6) LoadLPM(prefixes []netip.Prefix, values []uint32) error {
	keys := make([]fib6probeLpmKeyV6, len(prefixes))
	for i, pf := range prefixes {
		b := pf.Masked().Addr().As16()
		keys[i].Prefixlen = uint32(pf.Bits())
		for w := range 4 {
			keys[i].Addr[w] = binary.NativeEndian.Uint32(b[4*w:])
		}
	}
	for i := 0; i < len(keys); i += 1 << 16 {
		j := min(i+1<<16, len(keys))
		if _, err := p.objs.Probe6Lpm.BatchUpdate(keys[i:j], values[i:j], nil); err != nil {
			return fmt.Errorf("dataplane: fill IPv6 LPM trie: %w", err)
		}
	}
	return nil
}

// Lookup looks every address up with a mechanism, writing the answers to out, and
// returns the time the kernel measured for all of them (loop overhead included).
func (p *Probe6) Lookup(m Mechanism6, addrs []netip.Addr, out []uint32) (time.Duration, error) {
	if 4*len(addrs) > len(p.trace) || len(out) < len(addrs) {
		return 0, fmt.Errorf("dataplane: probe holds %d addresses, asked for %d (out %d)", len(p.trace)/4, len(addrs), len(out))
	}
	for i, a := range addrs {
		b := a.As16()
		for w := range 4 {
			p.trace[4*i+w] = binary.NativeEndian.Uint32(b[4*w:])
		}
	}
	prog := map[Mechanism6]*ebpf.Program{Mech6Kernel: p.objs.Probe6KernelFib, Mech6LPMTrie: p.objs.Probe6LpmTrie, Mech6Loop: p.objs.Probe6Null, Mech6FIB: p.objs.Probe6Fib,
		Mech6FIBCached: p.objs.Probe6FibCached, Mech6LPMCached: p.objs.Probe6LpmCached, Mech6KernelCached: p.objs.Probe6KernelCached}[m]
	total, err := RunProbe(prog, p.objs.ProbeParams, len(addrs), m.String())
	copy(out, p.result[:len(addrs)])
	return total, err
}
