package dataplane

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/fibfleet/fibfleet/nic"
	"golang.org/x/sys/unix"
)

// Missing is one thing the kernel, or one interface's driver, lacks that the
// dataplane needs. Its Error is one line an operator can act on: what is missing,
// where, and the oldest mainline kernel that has it.
type Missing struct {
	Feature   string // "the bpf_loop helper", "native XDP"; empty: the interface itself
	Interface string // empty for a kernel-wide feature
	Since     string // the oldest mainline Linux that has it, empty when unknown
	Hint      string // what to do instead, if anything can be done
}

func (m Missing) Error() string {
	var b strings.Builder
	if m.Interface != "" && m.Feature == "" {
		fmt.Fprintf(&b, "interface %s does not exist in this network namespace", m.Interface)
	} else if m.Interface != "" {
		fmt.Fprintf(&b, "interface %s lacks %s", m.Interface, m.Feature)
	} else {
		fmt.Fprintf(&b, "kernel %s lacks %s", KernelRelease(), m.Feature)
	}
	if m.Since != "" {
		fmt.Fprintf(&b, " (Linux %s and later have it)", m.Since)
	}
	if m.Hint != "" {
		b.WriteString(": " + m.Hint)
	}
	return b.String()
}

// A kernelFeature is one probe of the running kernel.
type kernelFeature struct {
	name  string
	since string
	probe func() error
}

// Mainline kernels that introduced the helpers and map types the programs use, for
// the one-line message; the probes themselves come from the objects (below), so a
// new helper is probed without being listed here, only with a vaguer message.
var (
	helperSince = map[asm.BuiltinFunc]string{
		asm.FnMapLookupElem:     "3.19",
		asm.FnMapUpdateElem:     "3.19",
		asm.FnMapDeleteElem:     "3.19",
		asm.FnGetSmpProcessorId: "4.1",
		asm.FnKtimeGetNs:        "4.1",
		asm.FnGetPrandomU32:     "4.1",
		asm.FnXdpAdjustHead:     "4.10",
		asm.FnRedirectMap:       "4.14",
		asm.FnFibLookup:         "4.18",
		asm.FnLoop:              "5.17",
	}
	mapSince = map[ebpf.MapType]string{
		ebpf.Hash:        "3.19",
		ebpf.Array:       "3.19",
		ebpf.PerCPUHash:  "4.6",
		ebpf.PerCPUArray: "4.6",
		ebpf.LPMTrie:     "4.11",
		ebpf.ArrayOfMaps: "4.12",
		ebpf.HashOfMaps:  "4.12",
		ebpf.DevMap:      "4.14",
		ebpf.DevMapHash:  "5.4",
	}
)

// needed lists what the forwarding program needs of the kernel, read from its
// object: the program type, each helper its programs call, each map type and flag
// its maps use, and what no object shows (bounded loops, devmap entries that carry
// more than an ifindex); and what the calibration probes need, which the node runs
// to measure its cache's worth (bpf_loop).
func needed() ([]kernelFeature, error) {
	var specs []*ebpf.CollectionSpec
	for _, load := range []func() (*ebpf.CollectionSpec, error){loadXdpfwd, loadFib4probe, loadFib6probe} {
		spec, err := load()
		if err != nil {
			return nil, fmt.Errorf("dataplane: parse embedded program: %w", err)
		}
		specs = append(specs, spec)
	}
	fs := []kernelFeature{
		{"XDP programs", "4.8", func() error { return features.HaveProgramType(ebpf.XDP) }},
		{"bounded loops in BPF programs", "5.3", features.HaveBoundedLoops},
	}
	type use struct {
		pt ebpf.ProgramType
		fn asm.BuiltinFunc
	}
	var helpers []use
	maps := map[string]*ebpf.MapSpec{}
	for _, spec := range specs {
		for _, p := range spec.Programs {
			for _, ins := range p.Instructions {
				if ins.IsBuiltinCall() {
					helpers = append(helpers, use{p.Type, asm.BuiltinFunc(ins.Constant)})
				}
			}
		}
		for n, m := range spec.Maps {
			maps[n] = m
		}
	}
	slices.SortFunc(helpers, func(a, b use) int { return int(a.fn) - int(b.fn) })
	for _, h := range slices.Compact(helpers) {
		fs = append(fs, kernelFeature{
			name:  "the " + helperName(h.fn) + " helper in " + strings.ToUpper(h.pt.String()) + " programs",
			since: helperSince[h.fn],
			probe: func() error { return features.HaveProgramHelper(h.pt, h.fn) },
		})
	}
	var types []ebpf.MapType
	mmapable := false
	for _, m := range maps {
		types = append(types, m.Type)
		if m.InnerMap != nil {
			types = append(types, m.InnerMap.Type)
			mmapable = mmapable || m.InnerMap.Flags&unix.BPF_F_MMAPABLE != 0
		}
		mmapable = mmapable || m.Flags&unix.BPF_F_MMAPABLE != 0
	}
	slices.Sort(types)
	for _, t := range slices.Compact(types) {
		fs = append(fs, kernelFeature{
			name:  "BPF maps of type " + mapTypeName(t),
			since: mapSince[t],
			probe: func() error { return features.HaveMapType(t) },
		})
	}
	if mmapable {
		fs = append(fs, kernelFeature{"memory-mapped BPF arrays (BPF_F_MMAPABLE)", "5.5",
			func() error { return features.HaveMapFlag(features.BPF_F_MMAPABLE) }})
	}
	if m, ok := maps["tx_ports"]; ok && m.ValueSize > 4 {
		fs = append(fs, kernelFeature{"devmap entries with a value struct (struct bpf_devmap_val)", "5.8", func() error {
			return probeMap(&ebpf.MapSpec{Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize, MaxEntries: 1})
		}})
	}
	return fs, nil
}

// probeMap creates a map to see whether the kernel takes it: EINVAL means it does
// not know the type, flag or size; anything else is not an answer.
func probeMap(spec *ebpf.MapSpec) error {
	m, err := ebpf.NewMap(spec)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
	}
	if err != nil {
		return err
	}
	return m.Close()
}

// CheckFeatures checks the running kernel, and each interface's driver for mode, against
// what the forwarding program needs, without loading or attaching it. It returns
// every Missing feature; an error that is not a Missing means a probe could not
// run (most often: no privileges), which says nothing about the kernel.
func CheckFeatures(interfaces []string, mode Mode) error {
	fs, err := needed()
	if err != nil {
		return err
	}
	return probe(fs, interfaces, mode)
}

func probe(fs []kernelFeature, interfaces []string, mode Mode) error {
	var errs []error
	for _, f := range fs {
		err := f.probe()
		switch {
		case err == nil:
		case errors.Is(err, ebpf.ErrNotSupported):
			errs = append(errs, Missing{Feature: f.name, Since: f.since})
		case errors.Is(err, unix.EPERM):
			return fmt.Errorf("dataplane: probe the kernel for %s: %w (run as root, or with CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN)", f.name, err)
		default:
			return fmt.Errorf("dataplane: probe the kernel for %s: %w", f.name, err)
		}
	}
	for _, ifname := range interfaces {
		if err := probeInterface(ifname, mode); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// probeInterface checks that the interface exists and, in native mode, that its
// driver runs XDP programs and lets them redirect, where the kernel can say (the
// netdev netlink family's xdp-features, Linux 6.3 and later; older kernels answer
// only at attach time).
func probeInterface(ifname string, mode Mode) error {
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		return Missing{Interface: ifname, Hint: "check the interfaces list in the configuration"}
	}
	if mode == ModeGeneric {
		return nil
	}
	xf, err := nic.ReadXDPFeatures(iface.Index)
	if err != nil {
		return nil // the kernel cannot say; Attach will
	}
	if xf&(nic.XDPBasic|nic.XDPRedirect) != nic.XDPBasic|nic.XDPRedirect {
		return noNativeXDP(ifname, "native XDP with XDP_REDIRECT", ", xdp-features "+xf.String())
	}
	return nil
}

// noNativeXDP is the one line for an interface whose driver cannot run the program
// natively, whether the kernel said so beforehand (xdp-features) or at attach.
func noNativeXDP(ifname, feature, detail string) Missing {
	return Missing{Feature: feature + " (driver " + nic.Driver(ifname) + detail + ")", Interface: ifname,
		Hint: "use a NIC whose driver has it, or set xdp_mode: generic (every frame then builds an skb: far slower)"}
}

func helperName(h asm.BuiltinFunc) string {
	s := h.String() // "FnLoop"
	s = strings.TrimPrefix(s, "Fn")
	var b strings.Builder
	b.WriteString("bpf")
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		} else if i == 0 {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func mapTypeName(t ebpf.MapType) string {
	switch t {
	case ebpf.LPMTrie:
		return "lpm_trie"
	case ebpf.PerCPUArray:
		return "percpu_array"
	case ebpf.PerCPUHash:
		return "percpu_hash"
	case ebpf.ArrayOfMaps:
		return "array_of_maps"
	case ebpf.HashOfMaps:
		return "hash_of_maps"
	case ebpf.DevMapHash:
		return "devmap_hash"
	}
	return strings.ToLower(t.String())
}

func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "(unknown)"
	}
	return unix.ByteSliceToString(u.Release[:])
}
