package dataplane

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

// The verifier budget: a program near the verifier's limit (1,000,000 processed
// instructions) fails on the next kernel, whose verifier explores differently. Every
// program stays at a quarter of the limit at most, and the forwarding program, which
// later features grow, well below that.
const (
	verifierBudget       = 250_000
	verifierBudgetXDPFwd = 150_000
)

// bpfObjects lists every object this package embeds, production and probes alike.
var bpfObjects = []struct {
	name string
	load func() (*ebpf.CollectionSpec, error)
}{
	{"xdpfwd", loadXdpfwd},
	{"fib4probe", loadFib4probe},
	{"fib6probe", loadFib6probe},
	{"pktgen", loadPktgen},
	{"xmitmon", loadXmitmon},
}

// TestVerifierBudget loads each program of each object on its own, prints how many
// instructions the verifier processed and fails above the budget. The kernel matrix
// (internal/kernels) runs it on every kernel it boots.
func TestVerifierBudget(t *testing.T) {
	requireBPF(t)
	for _, o := range bpfObjects {
		spec, err := o.load()
		if err != nil {
			t.Fatalf("%s: parse: %v", o.name, err)
		}
		names := make([]string, 0, len(spec.Programs))
		for n := range spec.Programs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			budget := verifierBudget
			if n == "xdp_fwd" {
				budget = verifierBudgetXDPFwd
			}
			got, err := verifiedInsns(spec, n)
			switch {
			case err != nil:
				t.Errorf("%s/%s: %v", o.name, n, err)
			case got > budget:
				t.Errorf("%s/%s: the verifier processed %d instructions, over the budget of %d: restructure it (see dataplane/doc.go)", o.name, n, got, budget)
			}
			// One line per program, parsed by the kernel matrix for its table.
			t.Logf("verifier: %s/%s %d (budget %d)", o.name, n, got, budget)
		}
	}
}

var processedRe = regexp.MustCompile(`(?i)processed (\d+) insns?`)

// verifiedInsns loads one program of a spec, with its maps, and returns how many
// instructions the verifier processed; for a program the verifier refused, the
// count its log gives, with the refusal.
func verifiedInsns(spec *ebpf.CollectionSpec, prog string) (int, error) {
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
