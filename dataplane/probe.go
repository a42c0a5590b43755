package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/dcache"
	"golang.org/x/sys/unix"
)

// Mechanism is a lookup the Probe can run.
type Mechanism int

const (
	// MechFIB4 is fibfleet's compiled FIB, the code xdp_fwd.c runs (answers: group ids).
	MechFIB4 Mechanism = iota
	// MechLPMTrie is a BPF LPM trie filled with LoadLPM (answers: the values loaded).
	MechLPMTrie
	// MechKernel is bpf_fib_lookup() on the calling thread's network namespace
	// (answers: egress ifindex, 0 when there is no route).
	MechKernel
	// MechTbl24 is fibfleet's FIB read as plain DIR-24-8 (tbl24, not the compressed
	// first level that MechFIB4 reads), for comparison.
	MechTbl24
	// MechFIB4Cached, MechLPMCached and MechKernelCached are MechFIB4, MechLPMTrie and
	// MechKernel behind the destination cache (bpf/dcache.h; SetCache sizes it).
	MechFIB4Cached
	MechLPMCached
	MechKernelCached
)

func (m Mechanism) String() string {
	return [...]string{"fibfleet FIB", "BPF LPM trie", "bpf_fib_lookup", "DIR-24-8 (tbl24 read directly)",
		"fibfleet FIB + cache", "BPF LPM trie + cache", "bpf_fib_lookup + cache"}[m]
}

// Probe runs lookups over a trace inside BPF (bpf_loop in BPF_PROG_TEST_RUN), against
// a Dataplane's own FIB maps: for differential tests at millions of addresses and for
// per-lookup benchmarks that time every mechanism the same way.
type Probe struct {
	objs          fib4probeObjects
	cache         *Cache
	trace, result []uint32
	mmaps         [][]byte
}

// probeChunk bounds the lookups of one test run: the kernel reports a run's duration
// as a u32 of nanoseconds, and the slowest mechanism costs ~2 us per lookup.
const probeChunk = 1 << 18

// NewProbe loads the probe for up to capacity addresses per Lookup, sharing d's maps.
func NewProbe(d *Dataplane, capacity int) (*Probe, error) {
	return newProbe(d.fib4Maps(), capacity)
}

// NewPinnedProbe loads the probe on the FIB maps a running node pinned, to look up
// what its XDP program would answer from outside its process.
func NewPinnedProbe(bpffs, node string, capacity int) (*Probe, error) {
	dir, err := LivePinDir(bpffs, node)
	if err != nil {
		return nil, err
	}
	maps := map[string]*ebpf.Map{}
	for _, name := range fib4MapNames {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if err != nil {
			for _, o := range maps {
				o.Close()
			}
			return nil, fmt.Errorf("dataplane: open pinned %s of node %q (is it running?): %w", name, node, err)
		}
		maps[name] = m
	}
	p, err := newProbe(maps, capacity)
	for _, m := range maps {
		m.Close() // the probe's program holds its own references
	}
	return p, err
}

func newProbe(fibMaps map[string]*ebpf.Map, capacity int) (*Probe, error) {
	spec, err := loadFib4probe()
	if err != nil {
		return nil, err
	}
	rows := uint32((capacity + 255) / 256)
	spec.Maps["probe_trace"].MaxEntries = rows
	spec.Maps["probe_result"].MaxEntries = rows
	for name, m := range fibMaps {
		spec.Maps[name].Pinning = ebpf.PinNone
		spec.Maps[name].MaxEntries = m.MaxEntries() // pools are sized by the loader
	}
	p := &Probe{}
	err = spec.LoadAndAssign(&p.objs, &ebpf.CollectionOptions{MapReplacements: fibMaps})
	if err != nil {
		return nil, fmt.Errorf("dataplane: load lookup probe: %w", err)
	}
	o := &p.objs
	p.cache = newCache(o.DcCtl, o.Dc4Maps, o.Dc6Maps, o.DcStats, o.DcHll)
	for _, m := range []struct {
		m   *ebpf.Map
		dst *[]uint32
	}{{p.objs.ProbeTrace, &p.trace}, {p.objs.ProbeResult, &p.result}} {
		u, b, err := mmapU32(m.m)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.mmaps = append(p.mmaps, b)
		*m.dst = u
	}
	return p, nil
}

// Close frees the probe.
func (p *Probe) Close() error {
	p.cache.close()
	return closeProbe(&p.mmaps, &p.objs)
}

// closeProbe unmaps a probe's arrays and closes its objects.
func closeProbe(mmaps *[][]byte, objs io.Closer) error {
	var errs []error
	for _, b := range *mmaps {
		errs = append(errs, unix.Munmap(b))
	}
	*mmaps = nil
	errs = append(errs, objs.Close())
	return errors.Join(errs...)
}

// LoadLPM fills the LPM trie baseline with prefix -> value.
func (p *Probe) LoadLPM(prefixes []netip.Prefix, values []uint32) error {
	keys := make([]fib4probeLpmKeyV4, len(prefixes))
	for i, pf := range prefixes {
		b := pf.Masked().Addr().As4()
		keys[i] = fib4probeLpmKeyV4{Prefixlen: uint32(pf.Bits()), Addr: binary.NativeEndian.Uint32(b[:])}
	}
	for i := 0; i < len(keys); i += 1 << 16 {
		j := min(i+1<<16, len(keys))
		if _, err := p.objs.ProbeLpm.BatchUpdate(keys[i:j], values[i:j], nil); err != nil {
			return fmt.Errorf("dataplane: fill LPM trie: %w", err)
		}
	}
	return nil
}

// Lookup looks every address up with a mechanism, writing the answers to out, and
// returns the time the kernel measured for all of them (loop overhead included).
func (p *Probe) Lookup(m Mechanism, addrs []netip.Addr, out []uint32) (time.Duration, error) {
	if len(addrs) > len(p.trace) || len(out) < len(addrs) {
		return 0, fmt.Errorf("dataplane: probe holds %d addresses, asked for %d (out %d)", len(p.trace), len(addrs), len(out))
	}
	for i, a := range addrs {
		b := a.As4()
		p.trace[i] = binary.NativeEndian.Uint32(b[:])
	}
	prog := map[Mechanism]*ebpf.Program{MechFIB4: p.objs.ProbeFib4, MechLPMTrie: p.objs.ProbeLpmTrie, MechKernel: p.objs.ProbeKernelFib, MechTbl24: p.objs.ProbeTbl24,
		MechFIB4Cached: p.objs.ProbeFib4Cached, MechLPMCached: p.objs.ProbeLpmCached, MechKernelCached: p.objs.ProbeKernelCached}[m]
	total, err := RunProbe(prog, p.objs.ProbeParams, len(addrs), m.String())
	copy(out, p.result[:len(addrs)])
	return total, err
}

// ProbeHit is set in a cached mechanism's answer when the cache answered.
const ProbeHit = 0x80000000

// Cache is the probe's own destination cache (the production code, its own maps).
func (p *Probe) Cache() *Cache { return p.cache }

// SetCache sizes the probe's IPv4 destination cache (entries: a power of two from 4
// to MaxCacheEntries; 0 turns it off), empty, with admission (TinyLFU) on.
func (p *Probe) SetCache(entries int) error {
	if err := p.cache.SetAdmission(true); err != nil {
		return err
	}
	return p.cache.Resize(dcache.IPv4, entries)
}

// FlushCache bumps the cache's epoch: every entry is stale at once, nothing walked.
func (p *Probe) FlushCache() error {
	_, err := p.cache.Flush()
	return err
}

// CacheStats reads the probe's IPv4 cache counters.
func (p *Probe) CacheStats() (dcache.Stats, error) { return p.cache.Stats(dcache.IPv4) }

// OnOneCPU locks the calling goroutine to its thread and the thread to the first CPU
// it may run on, so that test runs of a program meet the same per-CPU state (the
// destination cache) every time; the returned function undoes both.
func OnOneCPU() func() {
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err == nil {
		var one unix.CPUSet
		for c := 0; c < 1024; c++ {
			if old.IsSet(c) {
				one.Set(c)
				break
			}
		}
		if unix.SchedSetaffinity(0, &one) == nil {
			return func() {
				unix.SchedSetaffinity(0, &old)
				runtime.UnlockOSThread()
			}
		}
	}
	return runtime.UnlockOSThread
}

// RunProbe runs a program built on bpf/probe_loop.h (this package's probes, and the
// study candidates of internal/bench) over n trace entries in chunks, and returns the
// time the kernel measured.
func RunProbe(prog *ebpf.Program, params *ebpf.Map, n int, name string) (time.Duration, error) {
	// One CPU for the whole run: the destination cache is per CPU, and a run that
	// hops between CPUs would find a cold cache on each.
	defer OnOneCPU()()
	frame := make([]byte, 64)
	var total time.Duration
	for start := 0; start < n; start += probeChunk {
		args := fib4probeProbeArgs{Start: uint32(start), Count: uint32(min(probeChunk, n-start))}
		if err := params.Put(uint32(0), &args); err != nil {
			return 0, err
		}
		ret, d, err := prog.Benchmark(frame, 1, nil)
		if err != nil {
			return 0, fmt.Errorf("dataplane: run %s probe: %w", name, err)
		}
		if ret != 2 {
			return 0, fmt.Errorf("dataplane: %s probe aborted (%d)", name, ret)
		}
		total += d
	}
	return total, nil
}

// ProbeRunner runs destinations through one of a probe's cached mechanisms (the
// production path: its cache consulted when on), for the cache's cost calibration.
type ProbeRunner struct {
	run    func([]netip.Addr, []uint32) (time.Duration, error)
	cache  *Cache
	family dcache.Family
}

// Runner returns a ProbeRunner of an IPv4 cached mechanism.
func (p *Probe) Runner(m Mechanism) *ProbeRunner {
	return &ProbeRunner{run: func(a []netip.Addr, out []uint32) (time.Duration, error) { return p.Lookup(m, a, out) }, cache: p.cache, family: dcache.IPv4}
}

// Runner returns a ProbeRunner of an IPv6 cached mechanism.
func (p *Probe6) Runner(m Mechanism6) *ProbeRunner {
	return &ProbeRunner{run: func(a []netip.Addr, out []uint32) (time.Duration, error) { return p.Lookup(m, a, out) }, cache: p.cache, family: dcache.IPv6}
}

// Run looks the destinations up and returns the time the kernel measured.
func (r *ProbeRunner) Run(addrs []netip.Addr) (time.Duration, error) {
	return r.run(addrs, make([]uint32, len(addrs)))
}

// Resize sizes the probe's cache of the runner's family (0: off).
func (r *ProbeRunner) Resize(entries int) error { return r.cache.Resize(r.family, entries) }
