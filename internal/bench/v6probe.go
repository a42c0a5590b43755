package bench

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"github.com/fibfleet/fibfleet/dataplane"
)

// V6Node marks an entry that points at a node (V6_NODE in v6cand.c).
const V6Node = 0x40000000

// V6Image is a built candidate, ready to copy into the candidate probe's maps:
// Strides (the first level's bits, then each node level's; they sum to 64), Dir
// (2^Strides[0] entries), Nodes (u32s: 2^stride per stride-trie node, 8 per 64
// positions of a compressed node) and, for the compressed trie, Leaves.
type V6Image struct {
	Strides            []int
	Dir, Nodes, Leaves []uint32
}

// candidate is one of the IPv6 trie candidates v6cand.c runs.
type candidate int

const (
	candStride candidate = iota
	candCompressed
)

func (c candidate) String() string {
	return [...]string{"stride trie", "compressed trie (Poptrie-style)"}[c]
}

// candProbe runs the IPv6 trie candidates over a trace inside BPF, with the same
// loop (and the same timing) as the dataplane's probes.
type candProbe struct {
	objs     v6candObjects
	capacity int
}

// newCandProbe loads both candidates, with the same strides, for traces of up to
// capacity addresses.
func newCandProbe(capacity int, stride, compressed V6Image) (*candProbe, error) {
	spec, err := loadV6cand()
	if err != nil {
		return nil, err
	}
	if !slices.Equal(stride.Strides, compressed.Strides) || len(stride.Strides) > 8 {
		return nil, fmt.Errorf("IPv6 candidates' strides %v and %v: want the same, at most 8 levels", stride.Strides, compressed.Strides)
	}
	var strides [8]uint32
	sum := 0
	for i, st := range stride.Strides {
		strides[i] = uint32(st)
		sum += st
		if st < 6 || st > 24 || i > 0 && st%8 != 0 {
			return nil, fmt.Errorf("IPv6 candidate stride %d: use 8, 16 or 24 bits (the first level 6 to 24)", st)
		}
	}
	if sum != 64 {
		return nil, fmt.Errorf("IPv6 candidate strides %v sum to %d, want 64", stride.Strides, sum)
	}
	if err := spec.Variables["strides"].Set(strides); err != nil {
		return nil, err
	}
	rows := func(n, per int) uint32 { return uint32(max(1, (n+per-1)/per)) }
	for name, n := range map[string]uint32{
		"probe6_trace": rows(capacity, 64), "probe6_result": rows(capacity, 256),
		"s6_dir": rows(len(stride.Dir), 256), "s6_nodes": rows(len(stride.Nodes), 256),
		"c6_dir": rows(len(compressed.Dir), 256), "c6_nodes": rows(len(compressed.Nodes), 16), "c6_leaves": rows(len(compressed.Leaves), 256),
	} {
		spec.Maps[name].MaxEntries = n
	}
	p := &candProbe{capacity: capacity}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		return nil, fmt.Errorf("load the IPv6 candidates: %w", err)
	}
	for _, f := range []struct {
		m   *ebpf.Map
		src []uint32
	}{
		{p.objs.S6Dir, stride.Dir}, {p.objs.S6Nodes, stride.Nodes},
		{p.objs.C6Dir, compressed.Dir}, {p.objs.C6Nodes, compressed.Nodes}, {p.objs.C6Leaves, compressed.Leaves},
	} {
		if err := writeU32(f.m, f.src); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// writeU32 copies u32s to the start of an mmapable array.
func writeU32(m *ebpf.Map, src []uint32) error {
	mem, err := m.Memory()
	if err != nil {
		return fmt.Errorf("map %s (needs BPF_F_MMAPABLE arrays, Linux 5.5+): %w", m, err)
	}
	b := make([]byte, 0, 4*len(src))
	for _, v := range src {
		b = binary.NativeEndian.AppendUint32(b, v)
	}
	if _, err := mem.WriteAt(b, 0); err != nil {
		return fmt.Errorf("%s holds %d bytes, image has %d: %w", m, mem.Size(), len(b), err)
	}
	return nil
}

// Close frees the probe.
func (p *candProbe) Close() error { return p.objs.Close() }

// Lookup looks every address up with a candidate, writing the answers to out, and
// returns the time the kernel measured for all of them (loop overhead included).
func (p *candProbe) Lookup(c candidate, addrs []netip.Addr, out []uint32) (time.Duration, error) {
	if len(addrs) > p.capacity || len(out) < len(addrs) {
		return 0, fmt.Errorf("candidate probe holds %d addresses, asked for %d (out %d)", p.capacity, len(addrs), len(out))
	}
	trace := make([]uint32, 0, 4*len(addrs))
	for _, a := range addrs {
		b := a.As16()
		for w := range 4 {
			trace = append(trace, binary.NativeEndian.Uint32(b[4*w:]))
		}
	}
	if err := writeU32(p.objs.Probe6Trace, trace); err != nil {
		return 0, err
	}
	prog := [...]*ebpf.Program{candStride: p.objs.Cand6Stride, candCompressed: p.objs.Cand6Compressed}[c]
	total, err := dataplane.RunProbe(prog, p.objs.ProbeParams, len(addrs), c.String())
	if err != nil {
		return 0, err
	}
	mem, err := p.objs.Probe6Result.Memory()
	if err != nil {
		return 0, err
	}
	b := make([]byte, 4*len(addrs))
	if _, err := mem.ReadAt(b, 0); err != nil {
		return 0, err
	}
	for i := range addrs {
		out[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return total, nil
}
