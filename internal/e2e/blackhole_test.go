package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// testBlackholes: a blackhole from the upstream allowed to send one (its IPv4
// session), and the fleet's own from ctl (IPv4 and IPv6), drop the destination's
// traffic on every node (packets sent into each node's mesh port, counted by each
// node's XDP), while the destination's neighbours in its /24 are forwarded to the
// sink; the upstream taking the fleet's blackholes receives ctl's with BLACKHOLE and
// NO_EXPORT; removal, and --until, give the traffic back. A blackhole over the IPv6
// session, which may not send one, is refused, counted, and its traffic forwarded.
func testBlackholes(t *testing.T, fl *lab.Fleet, sink *lab.Sink) {
	ctx := context.Background()
	run := fleetCtl(t, fl)
	ctl := func(out any, args ...string) {
		t.Helper()
		if b := run(args...); json.Unmarshal(b, out) != nil {
			t.Fatalf("ctl %s: not the JSON expected:\n%s", strings.Join(args, " "), b)
		}
	}
	stats := func(t *testing.T, n *lab.FleetNode) dataplane.Stats {
		t.Helper()
		s, err := dataplane.ReadPinnedStats("", n.Name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// blackholed waits until every node's FIB holds p as a blackhole (or not).
	blackholed := func(t *testing.T, p netip.Prefix, want bool) {
		t.Helper()
		err := lab.WaitFor(ctx, 20*time.Second, fmt.Sprintf("every node's FIB: %s blackholed %v", p, want), func() (bool, error) {
			for _, n := range fl.Nodes {
				l, err := apiGet[nodeapi.Lookup](n.Get, "/api/v1/lookup?addr="+p.Addr().String())
				if err != nil {
					return false, err
				}
				if (l.Found && l.Blackhole && l.Prefix == p) != want {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// check sends 20 datagrams to the destination and to each neighbour of it into
	// every node: the destination's are dropped by that node's XDP (or forwarded,
	// when not blackholed), the neighbours' all reach the sink.
	check := func(t *testing.T, dst netip.Addr, blackhole bool) {
		t.Helper()
		const per = 20
		for _, n := range fl.Nodes {
			before, got := stats(t, n), sink.Count(dst)
			wantSink := map[netip.Addr]int{dst: got}
			if !blackhole {
				wantSink[dst] = got + per
			}
			for _, a := range []netip.Addr{dst.Prev(), dst.Next()} {
				wantSink[a] = sink.Count(a) + per
			}
			for a := range wantSink {
				if err := fl.SendVia(n, a, per); err != nil {
					t.Fatal(err)
				}
			}
			for a, want := range wantSink {
				err := lab.WaitFor(ctx, 10*time.Second, fmt.Sprintf("via %s: %d datagrams to %s at the sink", n.Name, want, a), func() (bool, error) { return sink.Count(a) >= want, nil })
				if err != nil {
					t.Fatalf("%v (got %d); %s's XDP meanwhile: %s", err, sink.Count(a), n.Name, stats(t, n).Since(before).Counted())
				}
			}
			dropped := stats(t, n)[dataplane.DropBlackhole].Packets - before[dataplane.DropBlackhole].Packets
			if blackhole {
				if d := dropped; d != per {
					t.Errorf("%s dropped %d datagrams as blackhole, want %d", n.Name, d, per)
				}
				if c := sink.Count(dst); c != got {
					t.Errorf("%d datagrams to the blackholed %s reached the sink through %s", c-got, dst, n.Name)
				}
			} else if d := dropped; d != 0 {
				t.Errorf("%s dropped %d datagrams to %s, which is not blackholed", n.Name, d, dst)
			}
		}
	}
	n1 := fl.Nodes[0]

	t.Run("from the upstream allowed to send one", func(t *testing.T) {
		if _, err := fl.Birdc("enable", lab.FleetBlackholeProtocol); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = fl.Birdc("disable", lab.FleetBlackholeProtocol) })
		blackholed(t, lab.FleetBlackhole, true)
		check(t, lab.FleetBlackhole.Addr(), true)
		for _, n := range fl.Nodes {
			m, err := n.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			if b, d := m["fibfleet_fib_blackholes"], m[`fibfleet_xdp_packets_total{action="drop",reason="blackhole"}`]; b != 1 || d < 20 {
				t.Errorf("%s's metrics: %v blackholed routes, %v frames dropped as blackhole; want 1, at least 20", n.Name, b, d)
			}
		}
		if _, err := fl.Birdc("disable", lab.FleetBlackholeProtocol); err != nil {
			t.Fatal(err)
		}
		blackholed(t, lab.FleetBlackhole, false)
		check(t, lab.FleetBlackhole.Addr(), false)
	})

	t.Run("from the upstream's session that may not send one: refused, counted, forwarded", func(t *testing.T) {
		if _, err := fl.Birdc("enable", lab.FleetBlackholeProtocol6); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = fl.Birdc("disable", lab.FleetBlackholeProtocol6) })
		key := fmt.Sprintf(`fibfleet_bgp_import_refused_total{neighbor="%s",reason="blackhole_not_allowed"}`, lab.UpstreamAddr6)
		err := lab.WaitFor(ctx, 20*time.Second, "n1 refuses the IPv6 session's blackhole", func() (bool, error) {
			m, err := n1.Metrics()
			return err == nil && m[key] == 1, err
		})
		if err != nil {
			t.Fatal(err)
		}
		check(t, lab.FleetBlackhole6.Addr(), false)
	})

	t.Run("ctl blackhole add, list, del, --until", func(t *testing.T) {
		v4, v6 := netip.MustParsePrefix("198.51.100.9/32"), netip.MustParsePrefix("2001:db8:100::9/128")
		t.Cleanup(func() {
			for _, p := range []netip.Prefix{v4, v6} {
				_ = exec.Command(build(t, "github.com/fibfleet/fibfleet/cmd/ctl", "ctl"), "--etcd", strings.Join(fl.EtcdSockets, ","), "--cluster", "lab", "blackhole", "del", p.String()).Run()
			}
		})
		for _, p := range []netip.Prefix{v4, v6} {
			var res struct {
				Prefix  netip.Prefix
				Applied []struct{ Node string }
				Missing []string
			}
			start := time.Now()
			ctl(&res, "blackhole", "add", p.Addr().String(), "--reason", "e2e")
			if res.Prefix != p || len(res.Applied) != 3 || len(res.Missing) != 0 {
				t.Fatalf("ctl blackhole add %s: %+v, want applied by 3 nodes", p.Addr(), res)
			}
			blackholed(t, p, true)
			t.Logf("ctl blackhole add %s: applied by all 3 nodes and in every FIB %v after ctl started", p, time.Since(start).Round(time.Millisecond))
			check(t, p.Addr(), true)
		}
		var list []struct {
			Prefix    netip.Prefix
			Active    bool
			Reason    string
			AppliedBy []string `json:"applied_by"`
		}
		ctl(&list, "blackhole", "list")
		if len(list) != 2 || list[0].Prefix != v4 || list[1].Prefix != v6 || !list[0].Active || list[0].Reason != "e2e" || len(list[1].AppliedBy) != 3 {
			t.Errorf("ctl blackhole list: %+v", list)
		}
		// The upstream that takes the fleet's blackholes holds the /32 with
		// BLACKHOLE and NO_EXPORT (BIRD's well-known names for them).
		err := lab.WaitFor(ctx, 20*time.Second, "BIRD holds the fleet's blackhole with BLACKHOLE and NO_EXPORT", func() (bool, error) {
			out, err := fl.Birdc("show", "route", v4.String(), "all")
			return strings.Contains(out, "(65535,666)") && strings.Contains(out, "(65535,65281)"), err
		})
		if err != nil {
			out, _ := fl.Birdc("show", "route", v4.String(), "all")
			t.Fatalf("%v\n%s", err, out)
		}
		if out, _ := fl.Birdc("show", "route", v6.String(), "all"); strings.Contains(out, v6.String()) {
			t.Errorf("BIRD's IPv6 session, whose export takes no blackholes, got %s:\n%s", v6, out)
		}
		for _, p := range []netip.Prefix{v4, v6} {
			var res struct{ Applied []struct{ Node string } }
			ctl(&res, "blackhole", "del", p.Addr().String())
			if len(res.Applied) != 3 {
				t.Fatalf("ctl blackhole del %s: applied by %v, want 3 nodes", p, res.Applied)
			}
			blackholed(t, p, false)
			check(t, p.Addr(), false)
		}
		err = lab.WaitFor(ctx, 20*time.Second, "BIRD no longer holds the fleet's blackhole", func() (bool, error) {
			out, err := fl.Birdc("show", "route", v4.String())
			return !strings.Contains(out, v4.String()), err
		})
		if err != nil {
			t.Fatal(err)
		}

		// --until: dropped until then, by every node's clock, then forwarded.
		var res struct{ Applied []struct{ Node string } }
		ctl(&res, "blackhole", "add", v4.Addr().String(), "--until", "4s")
		if len(res.Applied) != 3 {
			t.Fatalf("ctl blackhole add --until: applied by %v", res.Applied)
		}
		blackholed(t, v4, true)
		blackholed(t, v4, false)
		check(t, v4.Addr(), false)
		ctl(&list, "blackhole", "list")
		if len(list) != 1 || list[0].Prefix != v4 || list[0].Active {
			t.Errorf("ctl blackhole list after the expiry: %+v, want it listed as expired", list)
		}
	})
}
