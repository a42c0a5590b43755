package e2e

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// TestFeederToSpeaker has the in-process GoBGP feeder announce 200,000 real routes to
// fibfleet's bgp speaker on loopback, and checks every one arrives in the best-path
// stream with the feeder's next hop (and logs the rate).
func TestFeederToSpeaker(t *testing.T) {
	routes, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	routes = routes[:200_000]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx := context.Background()
	sp, err := bgp.Start(ctx, bgp.Config{ASN: 65000, RouterID: netip.MustParseAddr("10.255.0.1"),
		ListenAddresses: []string{"127.0.0.1"}, ListenPort: int32(port),
		Neighbors: []bgp.Neighbor{{Address: netip.MustParseAddr("127.0.0.5"), ASN: 65001, Passive: true, MaxPrefixes: 300_000}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Stop()
	start := time.Now()
	nh := netip.MustParseAddr("10.11.1.2")
	feeder, err := lab.StartFeeder(ctx, lab.FeederConfig{ASN: 65001, RouterID: "10.255.0.5", LocalAddress: "127.0.0.5",
		PeerAddress: "127.0.0.1", PeerASN: 65000, PeerPort: uint32(port), Nexthop: nh, Routes: routes})
	if err != nil {
		t.Fatal(err)
	}
	defer feeder.Stop()
	got := map[netip.Prefix]bool{}
	deadline := time.After(3 * time.Minute)
	var eor time.Time
	for eor.IsZero() {
		select {
		case ev := <-sp.Events():
			if ev.EndOfRIB.IsValid() {
				// The End-of-RIB follows every change of the dump.
				if ev.EndOfRIB != netip.MustParseAddr("127.0.0.5") || len(got) != len(routes) {
					t.Fatalf("End-of-RIB from %s after %d of %d routes", ev.EndOfRIB, len(got), len(routes))
				}
				eor = ev.At
			}
			for _, c := range ev.Changes {
				if c.Withdraw || c.Nexthop != nh {
					t.Fatalf("unexpected change %+v", c)
				}
				got[c.Prefix] = true
			}
		case <-deadline:
			t.Fatalf("%d of %d routes arrived in 3 minutes", len(got), len(routes))
		}
	}
	for _, r := range routes {
		if !got[r.Prefix] {
			t.Fatalf("%s never arrived", r.Prefix)
		}
	}
	loads := sp.Loads()
	if len(loads) != 1 || loads[0].Received != uint64(len(routes)) || loads[0].Expected != uint64(len(routes)) || !loads[0].EndOfRIB.Equal(eor) {
		t.Errorf("load progress = %+v, want %d received and expected, End-of-RIB at %v", loads, len(routes), eor)
	}
	t.Logf("%d routes from the feeder in the best-path stream in %v", len(routes), time.Since(start).Round(time.Millisecond))
}
