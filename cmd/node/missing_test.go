package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
)

// TestMissingFeaturesReport: whatever wraps them, the missing features come out one
// line each, and the node exits with its own status; other errors are not features.
func TestMissingFeaturesReport(t *testing.T) {
	a := dataplane.Missing{Feature: "the bpf_loop helper in XDP programs", Since: "5.17"}
	b := dataplane.Missing{Feature: "native XDP with XDP_REDIRECT", Interface: "eth9", Hint: "set xdp_mode: generic"}
	err := fmt.Errorf("start: %w", errors.Join(a, fmt.Errorf("probe: %w", b)))
	got := missingFeatures(err)
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("missingFeatures: %+v, want both", got)
	}
	var out bytes.Buffer
	if code := writeMissing(&out, got); code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"fibfleet-node: kernel " + dataplane.KernelRelease() + " lacks the bpf_loop helper in XDP programs (Linux 5.17 and later have it)",
		"fibfleet-node: interface eth9 lacks native XDP with XDP_REDIRECT: set xdp_mode: generic",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
	if m := missingFeatures(errors.New("dataplane: load program: permission denied")); len(m) != 0 {
		t.Errorf("an ordinary error read as missing features: %+v", m)
	}
}
