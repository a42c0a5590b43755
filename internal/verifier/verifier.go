// Package verifier keeps every BPF program of the repository far from the kernel
// verifier's limit (1,000,000 processed instructions): a program near it fails on the
// next kernel, whose verifier explores differently. The dataplane's tests and the
// study programs' tests (internal/bench) check their objects with Check; the kernel
// matrix (internal/kernels) reads the lines it logs.
package verifier

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// Budget is every program's: a quarter of the limit at most. XDPFwdBudget is the
// forwarding program's, which later features grow: well below that.
const (
	Budget       = 250_000
	XDPFwdBudget = 150_000
)

// Object is one bpf2go object: its name and its generated spec loader.
type Object struct {
	Name string
	Load func() (*ebpf.CollectionSpec, error)
}

// Check loads each program of each object on its own, logs how many instructions the
// verifier processed ("verifier: object/program N (budget B)", one line each, parsed
// by the kernel matrix) and fails above the budget. The caller checks the
// prerequisites (root, bpffs).
func Check(t *testing.T, objects []Object) {
	t.Helper()
	for _, o := range objects {
		spec, err := o.Load()
		if err != nil {
			t.Fatalf("%s: parse: %v", o.Name, err)
		}
		names := make([]string, 0, len(spec.Programs))
		for n := range spec.Programs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			budget := Budget
			if n == "xdp_fwd" {
				budget = XDPFwdBudget
			}
			got, err := Processed(spec, n)
			switch {
			case err != nil:
				t.Errorf("%s/%s: %v", o.Name, n, err)
			case got > budget:
				t.Errorf("%s/%s: the verifier processed %d instructions, over the budget of %d: restructure it (see dataplane/doc.go)", o.Name, n, got, budget)
			}
			t.Logf("verifier: %s/%s %d (budget %d)", o.Name, n, got, budget)
		}
	}
}

var processedRe = regexp.MustCompile(`(?i)processed (\d+) insns?`)

// Processed loads one program of a spec, with its maps, and returns how many
// instructions the verifier processed; for a program the verifier refused, the
// count its log gives, with the refusal.
func Processed(spec *ebpf.CollectionSpec, prog string) (int, error) {
	s := spec.Copy()
	for n := range s.Programs {
		if n != prog {
			delete(s.Programs, n)
		}
	}
	for _, m := range s.Maps {
		m.Pinning = ebpf.PinNone // a private copy: nothing left behind in bpffs
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			// Again with the instructions in the log, to show where it failed.
			if _, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch, LogSizeStart: 1 << 26}}); err != nil {
				errors.As(err, &verr)
			}
			for _, l := range slices.Backward(verr.Log) {
				if m := processedRe.FindStringSubmatch(l); m != nil {
					n, _ := strconv.Atoi(m[1])
					return n, fmt.Errorf("refused after %d processed instructions: %s; the log ends:\n%s", n, verr.Cause, strings.Join(verr.Log[max(0, len(verr.Log)-40):], "\n"))
				}
			}
		}
		return 0, err
	}
	defer coll.Close()
	info, err := coll.Programs[prog].Info()
	if err != nil {
		return 0, err
	}
	if n, ok := info.VerifiedInstructions(); ok {
		return int(n), nil
	}
	// Kernels before 5.16 do not report it: the stats line of the log does.
	if m := processedRe.FindStringSubmatch(coll.Programs[prog].VerifierLog); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, nil
	}
	return 0, errors.New("the kernel reports no count of verified instructions")
}
