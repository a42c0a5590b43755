package dataplane

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Entry values of the IPv4 FIB tables, as in xdp_fwd.c.
const (
	// FIB4Group marks a tbl24 entry that points at a tbl8 group (the low bits).
	FIB4Group = 0x80000000
	// FIB4Kernel marks a /24 whose routes could not be compiled: its packets pass to
	// the kernel.
	FIB4Kernel = 0x00ffffff
	// FIB4Node marks a Dir entry that points at a node (the low bits); FIB4Tbl24 is the
	// Dir entry that sends lookups of its /18 to Tbl24.
	FIB4Node  = 0x40000000
	FIB4Tbl24 = 0x7fffffff
)

// V4Tables are the IPv4 FIB's arrays (DIR-24-8), mapped into this process: a store to
// an entry is seen by the XDP program at once. Write each entry with one atomic 32-bit
// store (sync/atomic), so a concurrent lookup sees the old or the new value, never a mix.
type V4Tables struct {
	// Tbl24 has one entry per /24, indexed by the top 24 bits of the address.
	Tbl24 []uint32
	// Tbl8 has 256 entries per group, indexed by group*256 + the last address byte.
	Tbl8 []uint32
	// Gen16 has one generation per /16, bumped when a route overlapping it changes.
	Gen16 []uint32
	// Dir and Nodes are Tbl24 compressed, what lookups read first (see fib4.h): one
	// Dir entry per /16; Nodes is lines of 16 entries, a node starting at line n at
	// Nodes[16n].
	Dir   []uint32
	Nodes []uint32
}

// Groups is how many tbl8 groups the tables hold.
func (t V4Tables) Groups() int { return len(t.Tbl8) / 256 }

// V4Tables maps the FIB tables into the process (once; later calls return the same).
func (d *Dataplane) V4Tables() (V4Tables, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tables != nil {
		return *d.tables, nil
	}
	var t V4Tables
	for _, m := range []struct {
		m   *ebpf.Map
		dst *[]uint32
	}{{d.objs.Fib4Tbl24, &t.Tbl24}, {d.objs.Fib4Tbl8, &t.Tbl8}, {d.objs.Fib4Gen16, &t.Gen16},
		{d.objs.Fib4Dir, &t.Dir}, {d.objs.Fib4Nodes, &t.Nodes}} {
		u, b, err := mmapU32(m.m)
		if err != nil {
			d.unmapLocked()
			return V4Tables{}, err
		}
		d.mmaps = append(d.mmaps, b)
		*m.dst = u
	}
	d.tables = &t
	return t, nil
}

// fib4MapNames are the maps of the IPv4 FIB, which the lookup probe shares.
var fib4MapNames = []string{"fib4_tbl24", "fib4_tbl8", "fib4_gen16", "fib4_dir", "fib4_nodes"}

func (d *Dataplane) fib4Maps() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{"fib4_tbl24": d.objs.Fib4Tbl24, "fib4_tbl8": d.objs.Fib4Tbl8, "fib4_gen16": d.objs.Fib4Gen16,
		"fib4_dir": d.objs.Fib4Dir, "fib4_nodes": d.objs.Fib4Nodes}
}

// mmapU32 maps a BPF_F_MMAPABLE array whose values are u32 rows, as one []uint32.
func mmapU32(m *ebpf.Map) ([]uint32, []byte, error) {
	size := int(m.MaxEntries() * m.ValueSize())
	b, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("dataplane: mmap %s (%d bytes; needs BPF_F_MMAPABLE arrays, Linux 5.5+): %w", m, size, err)
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), size/4), b, nil
}

func (d *Dataplane) unmapTables() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unmapLocked()
}

func (d *Dataplane) unmapLocked() {
	var errs []error
	for _, b := range d.mmaps {
		errs = append(errs, unix.Munmap(b))
	}
	if err := errors.Join(errs...); err != nil {
		d.log.Warn("unmap FIB tables", "err", err)
	}
	d.mmaps, d.tables, d.tables6 = nil, nil, nil
}
