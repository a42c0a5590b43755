package bench

import (
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/internal/testutil"
	"github.com/fibfleet/fibfleet/internal/verifier"
)

// TestVerifierBudget keeps the study programs as far from the verifier's limit as
// the dataplane's (see package verifier).
func TestVerifierBudget(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root to load BPF programs (CI runs as root)")
	verifier.Check(t, []verifier.Object{{Name: "v6cand", Load: loadV6cand}, {Name: "pktgen", Load: loadPktgen}})
}
