package dataplane

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
)

// TestFeatures probes the running kernel for everything the forwarding program needs
// (the kernel matrix runs it on every kernel it boots): all present. Then a feature
// the kernel really lacks, where it does (cgroup storage maps came in 6.2: Debian 12's
// 6.1 lacks them), and one made to be missing on every kernel: each is one line naming
// the feature and the oldest kernel with it, never a verifier dump.
func TestFeatures(t *testing.T) {
	requireBPF(t)
	fs, err := needed()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.name)
	}
	t.Logf("kernel %s, probed: %s", KernelRelease(), strings.Join(names, "; "))
	for _, want := range []string{"the bpf_loop helper in XDP programs", "BPF maps of type devmap_hash", "memory-mapped BPF arrays (BPF_F_MMAPABLE)", "BPF maps of type array_of_maps"} {
		if !strings.Contains(strings.Join(names, ";"), want) {
			t.Errorf("%q is not probed; the program needs it", want)
		}
	}
	if err := CheckFeatures(nil, ModeNative); err != nil {
		t.Fatalf("the kernel this suite loads the program on lacks what it needs: %v", err)
	}

	cgrp := kernelFeature{"BPF cgroup storage maps (BPF_MAP_TYPE_CGRP_STORAGE)", "6.2", func() error { return features.HaveMapType(ebpf.CgroupStorage) }}
	simulated := kernelFeature{"a feature no kernel has", "99.1", func() error { return ebpf.ErrNotSupported }}
	err = probe(append(fs, cgrp, simulated), nil, ModeNative)
	var lines []string
	for _, e := range unjoin(err) {
		var m Missing
		if !errors.As(e, &m) {
			t.Fatalf("%v: not a Missing", e)
		}
		lines = append(lines, e.Error())
	}
	t.Logf("missing: %q", lines)
	want := []string{"kernel " + KernelRelease() + " lacks a feature no kernel has (Linux 99.1 and later have it)"}
	if major, minor := kernelVersion(t); major < 6 || major == 6 && minor < 2 {
		want = append([]string{"kernel " + KernelRelease() + " lacks BPF cgroup storage maps (BPF_MAP_TYPE_CGRP_STORAGE) (Linux 6.2 and later have it)"}, want...)
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("missing features reported as\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if strings.Contains(l, "\n") || len(l) > 200 {
			t.Errorf("not one short line: %q", l)
		}
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func kernelVersion(t *testing.T) (major, minor int) {
	t.Helper()
	parts := strings.SplitN(KernelRelease(), ".", 3)
	if len(parts) < 2 {
		t.Fatalf("kernel release %q", KernelRelease())
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		t.Fatalf("kernel release %q", KernelRelease())
	}
	return major, minor
}
