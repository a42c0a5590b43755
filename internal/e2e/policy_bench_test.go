package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// benchTable is the first n prefixes of the 2026 table less the lab's: CI runs these
// benchmarks once at that tiny size; the full runs are `go run
// ./internal/bench/fibbench -import-ab` and `-policy`.
func benchTable(b *testing.B, n int) []table.Route {
	testutil.Need(b, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	testutil.Need(b, testutil.Have("bird") && testutil.Have("birdc"), "needs BIRD 2 (make test installs bird2)")
	all, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	return bench.LabTable(all)[:n]
}

// BenchmarkImportRules loads a table with the lab's import rules and without, b.N
// interleaved pairs in alternating order, and reports the ratio of the medians (the
// target: at most 1.15x; at CI's one pair and tiny size the ratio says little: the
// run after a lab's teardown is slower).
func BenchmarkImportRules(b *testing.B) {
	routes := benchTable(b, 20000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	var off, on []float64
	for i := 0; i < b.N; i++ {
		// Alternate which goes first: a lab's teardown (the kernel frees a namespace's
		// routes after it is gone) slows the run after it.
		order := []string{"off", ""}
		if i%2 == 1 {
			order = []string{"", "off"}
		}
		for _, filter := range order {
			c, err := bench.MeasureConvergence(context.Background(), node, b.TempDir(), routes, bench.ConvergenceOptions{ImportFilter: filter, NoBird: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if filter == "" {
				on = append(on, c.NodeFIB.Seconds())
			} else {
				off = append(off, c.NodeFIB.Seconds())
			}
		}
	}
	b.ReportMetric(bench.Median(off), "s-rules-off")
	b.ReportMetric(bench.Median(on), "s-rules-on")
	b.ReportMetric(bench.Median(on)/bench.Median(off), "x-on/off")
}

// BenchmarkPolicyChange changes a loaded table's import policy to refuse the
// upstream's routes and back, b.N times, through a ConfigMap-style swap, and
// reports how long each took to reach the dataplane; it fails if the session did not
// stay up.
func BenchmarkPolicyChange(b *testing.B) {
	routes := benchTable(b, 20000)
	node := build(b, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	var refuse, accept []float64
	for i := 0; i < b.N; i++ {
		pc, err := bench.MeasurePolicyChange(context.Background(), node, b.TempDir(), routes)
		if err != nil {
			b.Fatal(err)
		}
		if !pc.Kept {
			b.Fatal("the session restarted: a policy change must keep it")
		}
		refuse, accept = append(refuse, pc.Refuse.Seconds()), append(accept, pc.Accept.Seconds())
	}
	b.ReportMetric(bench.Median(refuse), "s-refuse")
	b.ReportMetric(bench.Median(accept), "s-accept")
	if left := lab.Leftovers(); len(left) > 0 {
		b.Fatalf("left behind: %v", left)
	}
}
