package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// restartTries is how many times each kind of restart runs (FIBFLEET_RESTART_TRIES,
// default 10).
func restartTries(t *testing.T) int {
	if v := os.Getenv("FIBFLEET_RESTART_TRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FIBFLEET_RESTART_TRIES=%q: give a positive count", v)
		}
		return n
	}
	return 10
}

// birdWatch polls the upstream's BIRD every 50 ms while a test restarts the node:
// whether it holds the node's announcement of OriginLocal (its route from the node,
// stale or not), and whether it is in graceful restart for the node.
type birdWatch struct {
	mu      sync.Mutex
	polls   int
	missing []time.Time // polls that found no route from the node
	grSeen  int         // polls that found graceful restart active
	stop    chan struct{}
	done    chan struct{}
}

func watchBird(sk *lab.Skeleton) *birdWatch {
	w := &birdWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			route, err1 := sk.Birdc("show", "route", "for", lab.OriginLocal.String(), "protocol", "node")
			proto, err2 := sk.Birdc("show", "protocols", "all", "node")
			w.mu.Lock()
			w.polls++
			if err1 == nil && !strings.Contains(route, lab.OriginLocal.String()) {
				w.missing = append(w.missing, time.Now())
			}
			if err2 == nil && strings.Contains(proto, "graceful restart active") {
				w.grSeen++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *birdWatch) close() { close(w.stop); <-w.done }

func (w *birdWatch) snapshot() (polls, missing, gr int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polls, len(w.missing), w.grSeen
}

// TestRestart restarts the node while UDP flows cross it at a constant rate, the
// skeleton's router forwarding nothing in its kernel (a frame XDP passes up is lost):
// SIGTERM then start, SIGKILL then start, and an upgrade to a build whose XDP program
// differs (-tags fibfleet_variant, and back), each restartTries times. Every restart
// must lose no datagram, leave the FIB's digest as it was, and leave BIRD holding
// the node's announcement throughout (graceful restart: BIRD keeps it stale while
// the node is away). A route BIRD withdraws while the node is down is gone from the
// FIB after the restart. Last, the node is killed and not restarted: after the
// restart time its XDP program passes everything to the kernel (counted as stale),
// and node -uninstall removes it.
func TestRestart(t *testing.T) {
	const restart = 15 * time.Second
	sk := startSkeleton(t, lab.SkeletonConfig{Announce: true, RestartTime: restart})
	ctx := context.Background()
	node := build(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node")
	variant := buildTags(t, "github.com/fibfleet/fibfleet/cmd/node", "fibfleet-node-variant", "fibfleet_variant")
	tries := restartTries(t)

	fibState := func() (nodeapi.FIB, error) { return apiGet[nodeapi.FIB](sk.Get, "/api/v1/fib") }
	announced := func() (bool, error) {
		out, err := sk.Birdc("show", "route", "for", lab.OriginLocal.String(), "protocol", "node")
		return strings.Contains(out, lab.OriginLocal.String()), err
	}
	if err := lab.WaitFor(ctx, 90*time.Second, "BIRD to hold the node's announcement of "+lab.OriginLocal.String(), announced); err != nil {
		t.Fatal(err)
	}
	var want nodeapi.FIB
	if err := lab.WaitFor(ctx, 30*time.Second, "the FIB to settle", func() (bool, error) {
		a, err := fibState()
		if err != nil {
			return false, err
		}
		time.Sleep(500 * time.Millisecond)
		b, err := fibState()
		want = b
		return err == nil && a.Digest == b.Digest && b.Routes >= lab.Routes4(), err
	}); err != nil {
		t.Fatal(err)
	}
	dsts := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("1.1.1.1")}
	flows, err := sk.NewFlows(dsts, 12)
	if err != nil {
		t.Fatal(err)
	}
	const rate = 2000 // datagrams per second, all flows together
	bw := watchBird(sk)
	defer bw.close()

	metric := func(name string) float64 {
		m, err := sk.Metrics()
		if err != nil {
			return -1
		}
		return m[name]
	}
	// restartOnce stops the node with sig, runs during (if any) while it is down,
	// starts bin, and waits until the restart is complete: the adopted program kept,
	// then this process's FIB swapped in.
	restartOnce := func(sig syscall.Signal, bin string, during func()) time.Duration {
		t.Helper()
		t0 := time.Now()
		if err := sk.StopNode(sig, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if during != nil {
			during()
		}
		if err := sk.RestartNode(bin); err != nil {
			t.Fatal(err)
		}
		if err := lab.WaitFor(ctx, 2*restart, "the restarted node to adopt the forwarding and swap in its own FIB", func() (bool, error) {
			return metric(`fibfleet_restart_state{state="adopted"}`) == 1 && metric(`fibfleet_restart_state{state="pending"}`) == 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	checkDigest := func(what string) {
		t.Helper()
		got, err := fibState()
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest || got.Routes != want.Routes {
			t.Errorf("%s: FIB digest %s with %v routes, want %s with %v (as before)", what, got.Digest, got.Routes, want.Digest, want.Routes)
		}
	}

	withdrawn := lab.SkeletonRoutes[3] // 9.9.9.0/24: no flow goes there
	running := node                    // the build the node runs
	for _, mode := range []struct {
		name string
		sig  syscall.Signal
		bin  func(i int) string
	}{
		{"SIGTERM then start", syscall.SIGTERM, func(int) string { return node }},
		{"SIGKILL then start", syscall.SIGKILL, func(int) string { return node }},
		// An upgrade each time: to the variant, then back to the build before.
		{"upgrade to a different XDP program", syscall.SIGTERM, func(i int) string { return map[bool]string{true: variant, false: node}[i%2 == 0] }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			sent0 := flows.Sent()
			a0, b0 := flows.Received()
			_, missing0, gr0 := bw.snapshot()
			from := time.Now()
			if err := flows.Start(rate); err != nil {
				t.Fatal(err)
			}
			defer flows.Stop() // on failure; Stop twice is once
			var took []time.Duration
			for i := range tries {
				progs, err := dataplane.AttachedPrograms("", sk.NodeName)
				if err != nil {
					t.Fatal(err)
				}
				var during func()
				if i == 0 && mode.sig == syscall.SIGTERM && mode.bin(0) == node {
					// A route withdrawn while the node is away: the old FIB keeps it
					// until the swap, the new one never has it.
					during = func() {
						if out, err := sk.Birdc("disable", lab.StaticProtocol(withdrawn)); err != nil {
							t.Fatalf("birdc disable: %v: %s", err, out)
						}
					}
				}
				took = append(took, restartOnce(mode.sig, mode.bin(i), during))
				after, err := dataplane.AttachedPrograms("", sk.NodeName)
				if err != nil {
					t.Fatal(err)
				}
				for ifname, p := range after {
					if p.ID == progs[ifname].ID {
						t.Errorf("try %d: %s still runs program %d: the new process's program was never swapped in", i, ifname, p.ID)
					}
					if changed := p.Tag != progs[ifname].Tag; changed != (mode.bin(i) != running) {
						t.Errorf("try %d: %s's program tag %s -> %s: want a new tag exactly when the build changes", i, ifname, progs[ifname].Tag, p.Tag)
					}
				}
				running = mode.bin(i)
				if during != nil {
					got, err := fibState()
					if err != nil {
						t.Fatal(err)
					}
					if got.Routes != want.Routes-1 || got.Digest == want.Digest {
						t.Errorf("after a restart during which %s was withdrawn: %d routes, digest %s; want %d and another digest", withdrawn.Prefix, got.Routes, got.Digest, want.Routes-1)
					}
					// The kernel's copy too: adopted at the start, swept once the FIB is complete.
					if err := lab.WaitFor(ctx, 30*time.Second, withdrawn.Prefix.String()+" swept from the router's kernel table", func() (bool, error) {
						out, err := sk.Router.Exec("ip", "route", "show", "table", "main", "exact", withdrawn.Prefix.String())
						return err == nil && strings.TrimSpace(out) == "", err
					}); err != nil {
						t.Error(err)
					}
					if out, err := sk.Birdc("enable", lab.StaticProtocol(withdrawn)); err != nil {
						t.Fatalf("birdc enable: %v: %s", err, out)
					}
					if err := lab.WaitFor(ctx, 30*time.Second, withdrawn.Prefix.String()+" back in the FIB", func() (bool, error) {
						got, err := fibState()
						return err == nil && got.Digest == want.Digest, err
					}); err != nil {
						t.Fatal(err)
					}
				}
				checkDigest(fmt.Sprintf("try %d", i))
				// The kernel's routes were adopted, not written again.
				m, err := sk.Metrics()
				if err != nil {
					t.Fatal(err)
				}
				op := func(o string) float64 { return m[`fibfleet_fib_kernel_sync_routes_total{op="`+o+`"}`] }
				if op("adopted") == 0 || op("kept") == 0 || op("installed") >= op("adopted") {
					t.Errorf("try %d: kernel sync adopted %v routes, kept %v, installed %v: want the routes found kept, not written again", i, op("adopted"), op("kept"), op("installed"))
				}
			}
			flows.Stop()
			to := time.Now()
			a1, b1 := flows.Received()
			sent, received := flows.Sent()-sent0, a1+b1-a0-b0
			_, missing1, gr1 := bw.snapshot()
			t.Logf("%d restarts (each from the signal to the new FIB swapped in: %v); %d datagrams sent at %d/s, %d received, %d lost; longest gap of a flow %v; BIRD in graceful restart for the node in %d polls, without its route in %d",
				tries, took, sent, rate, received, sent-received, flows.LongestGap(from, to.Add(-200*time.Millisecond)), gr1-gr0, missing1-missing0)
			if sent-received != 0 {
				t.Errorf("%d of %d datagrams lost across %d restarts: want none", sent-received, sent, tries)
			}
			if missing1 > missing0 {
				t.Errorf("BIRD held no route from the node for %s in %d polls: its announcement was withdrawn during a restart", lab.OriginLocal, missing1-missing0)
			}
			if gr1 == gr0 {
				t.Errorf("BIRD never showed graceful restart for the node across %d restarts", tries)
			}
		})
	}

	t.Run("killed and not restarted: the kernel takes over after the restart time; -uninstall removes it", func(t *testing.T) {
		if err := flows.Start(rate); err != nil {
			t.Fatal(err)
		}
		defer flows.Stop()
		killed := time.Now()
		if err := sk.StopNode(syscall.SIGKILL, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		stale := func() uint64 {
			s, err := dataplane.ReadPinnedStats("", sk.NodeName)
			if err != nil {
				t.Fatal(err)
			}
			return s[dataplane.PassStale].Packets
		}
		if n := stale(); n != 0 {
			t.Fatalf("%d frames passed as stale right after the kill: want the FIB trusted for the restart time", n)
		}
		if err := lab.WaitFor(ctx, restart+30*time.Second, "XDP to pass frames to the kernel as stale", func() (bool, error) { return stale() > 0, nil }); err != nil {
			t.Fatal(err)
		}
		after := time.Since(killed)
		// The deadline is the last heartbeat's (one a second) plus the restart time.
		if after < restart-time.Second {
			t.Errorf("frames passed as stale %v after the kill: want the FIB trusted for the restart time, %v, after the last heartbeat", after, restart)
		}
		// The router's kernel forwards nothing: what XDP passes now is lost.
		a0, b0 := flows.Received()
		time.Sleep(time.Second)
		if a1, b1 := flows.Received(); a1+b1 > a0+b0 {
			t.Errorf("%d datagrams still reached the sinks after the heartbeat expired: want the FIB no longer used", a1+b1-a0-b0)
		}
		t.Logf("stale passes began %v after the kill (restart time %v); %d frames passed as stale", after.Round(time.Millisecond), restart, stale())

		out, err := sk.Router.Exec(node, "-uninstall", "-node-name", sk.NodeName)
		if err != nil {
			t.Fatalf("node -uninstall: %v: %s", err, out)
		}
		if !strings.Contains(out, "XDP link on") {
			t.Errorf("node -uninstall said %q: want each link it detached named", out)
		}
		if _, err := os.Stat(dataplane.PinDir("", sk.NodeName)); !os.IsNotExist(err) {
			t.Errorf("pins still there after node -uninstall: %v", err)
		}
		for _, ifname := range []string{sk.If("r0"), sk.If("r1")} {
			out, err := sk.Router.Exec("ip", "-d", "link", "show", ifname)
			if err != nil || strings.Contains(out, "xdp") {
				t.Errorf("%s after node -uninstall: %v %s: want no XDP program", ifname, err, out)
			}
		}
	})
}
