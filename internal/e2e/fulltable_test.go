package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// TestFullTableBGP has BIRD 2 send the whole real 2026 table to the node over eBGP and
// checks that every prefix is in the XDP dataplane (looked up through the node's pinned
// maps by the BPF probe); it logs the convergence times and peak RSS of the node and of
// BIRD 2 loading the same table (bench.MeasureConvergence; fibbench -convergence takes
// the median of several runs).
func TestFullTableBGP(t *testing.T) {
	need(t, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	need(t, have("bird") && have("birdc"), "needs BIRD 2 (make test installs bird2)")
	all, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes := bench.LabTable(all)
	check := func(sk *lab.Skeleton) error {
		probe, err := dataplane.NewPinnedProbe("", sk.NodeName, len(routes)+1)
		if err != nil {
			return err
		}
		defer probe.Close()
		rng := rand.New(rand.NewPCG(1, 2))
		addrs := []netip.Addr{netip.MustParseAddr("198.51.100.1")} // via 10.11.1.2, like the table
		for _, r := range routes {
			b := r.Prefix.Addr().As4()
			x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			x |= rng.Uint32() & uint32(uint64(1)<<(32-r.Prefix.Bits())-1)
			addrs = append(addrs, addrOf(x))
		}
		out := make([]uint32, len(addrs))
		if _, err := probe.Lookup(dataplane.MechFIB4, addrs, out); err != nil {
			return err
		}
		if out[0] == 0 {
			return fmt.Errorf("198.51.100.1 has no route in the dataplane")
		}
		bad := 0
		for i, id := range out {
			if id != out[0] {
				if bad++; bad <= 5 {
					t.Errorf("%s: dataplane answers %#x, want nexthop %d (10.11.1.2)", addrs[i], id, out[0])
				}
			}
		}
		if bad > 0 {
			return fmt.Errorf("%d of %d table prefixes wrong in the dataplane", bad, len(routes))
		}
		t.Logf("every one of the %d table prefixes answers nexthop %d in the dataplane", len(routes), out[0])
		return nil
	}
	c, err := bench.MeasureConvergence(context.Background(), build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node"), t.TempDir(), routes, check)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node: End-of-RIB in GoBGP %v after Established, dataplane complete %v (lag %v), kernel sync %v, peak RSS %s",
		c.NodeBGP, c.NodeFIB, c.NodeLag, c.NodeKernel, c.NodeRSS)
	t.Logf("BIRD 2: imported %v after Established, kernel table %v, peak RSS %s", c.BirdImport, c.BirdKernel, c.BirdRSS)
	t.Logf("node FIB / BIRD kernel = %.2fx", c.Ratio())
}
