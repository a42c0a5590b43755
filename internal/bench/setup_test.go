package bench

import (
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestSetupsFailCleanly makes each benchmark setup fail part way, after it has built a
// lab, loaded a dataplane and filled a FIB: it must return its error (no panic in the
// cleanup) and leave nothing behind.
func TestSetupsFailCleanly(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for BPF and namespaces (CI runs as root)")
	routes, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes6, err := table.Real2026v6()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		new  func() error
	}{
		// A probe for no addresses: the kernel refuses an empty trace map, after the
		// lab, the dataplane and the FIB are up.
		{"lookup", func() error { _, err := NewLookupSetup(routes[:1000], 0); return err }},
		// Strides the candidate tries take and the probe refuses, after the same.
		{"lookup6", func() error { _, err := NewLookupSetup6(routes6[:1000], 1<<10, []int{16, 12, 12, 12, 12}); return err }},
		// A generator with no destinations, after the namespaces and links.
		{"pps", func() error { _, err := NewPPSSetup(routes[:1000], nil); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.new(); err == nil {
				t.Fatal("the setup succeeded; want an error")
			} else {
				t.Logf("failed as it should: %v", err)
			}
			if left := lab.Leftovers(); len(left) > 0 {
				t.Fatalf("the failed setup left %v", left)
			}
		})
	}
}
