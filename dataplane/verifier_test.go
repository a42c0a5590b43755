package dataplane

import (
	"testing"

	"github.com/fibfleet/fibfleet/internal/verifier"
)

// bpfObjects lists every object this package embeds, production and probes alike.
var bpfObjects = []verifier.Object{
	{Name: "xdpfwd", Load: loadXdpfwd},
	{Name: "fib4probe", Load: loadFib4probe},
	{Name: "fib6probe", Load: loadFib6probe},
	{Name: "xmitmon", Load: loadXmitmon},
}

// TestVerifierBudget keeps each program far from the verifier's limit (see package
// verifier). The kernel matrix (internal/kernels) runs it on every kernel it boots.
func TestVerifierBudget(t *testing.T) {
	requireBPF(t)
	verifier.Check(t, bpfObjects)
}
