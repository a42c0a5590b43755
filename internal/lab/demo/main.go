// Command demo builds the walking-skeleton lab (see lab.Skeleton), runs the fibfleet
// node in it against BIRD, sends UDP through it and prints what XDP forwarded, until
// Ctrl-C or -duration. Everything it made is removed on exit. Run as root:
//
//	sudo make demo
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

func main() {
	duration := flag.Duration("duration", 0, "stop after sending for this long once the lab is up (0: run until Ctrl-C)")
	nodeBin := flag.String("node", "", "node binary (default: build ./cmd/node)")
	mode := flag.String("xdp-mode", "native", "XDP mode: native or generic")
	rate := flag.Int("pps", 100, "datagrams per second to each prefix")
	keep := flag.Bool("hold", false, "keep the lab up after sending, for poking around (until Ctrl-C)")
	flag.Parse()
	if err := run(*duration, *nodeBin, *mode, *rate, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, nodeBin, mode string, rate int, hold bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "fibfleet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if nodeBin == "" {
		nodeBin = filepath.Join(dir, "fibfleet-node")
		slog.Info("building the node", "out", nodeBin)
		if out, err := exec.Command("go", "build", "-o", nodeBin, "./cmd/node").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/node (run from the repository root): %w\n%s", err, out)
		}
	}
	slog.Info("building the lab: src, router (fibfleet node), two sinks, upstream (BIRD 2)")
	sk, err := lab.StartSkeleton(lab.SkeletonConfig{NodeBinary: nodeBin, Dir: dir, XDPMode: mode})
	if sk != nil {
		defer func() {
			slog.Info("tearing the lab down")
			if err := sk.Close(); err != nil {
				slog.Warn("teardown", "err", err)
			}
		}()
	}
	if err != nil {
		return err
	}
	slog.Info("lab up", "prefix", sk.Prefix, "node_log", sk.NodeLog, "bird_socket", sk.BirdSock)
	err = lab.WaitFor(ctx, 60*time.Second, "the node to learn the routes from BIRD", func() (bool, error) {
		m, err := sk.Metrics()
		return err == nil && m[`fibfleet_fib_routes{family="ipv4"}`] == float64(lab.Routes4()) &&
			m[`fibfleet_fib_routes{family="ipv6"}`] == float64(len(lab.SkeletonRoutes6)) &&
			m[`fibfleet_fib_nexthops{state="resolved"}`] == lab.ResolvedNexthops, err
	})
	if err != nil {
		return err
	}
	sinks := map[int]*lab.Sink{}
	for i, ns := range map[int]*lab.Netns{1: sk.Sink1, 2: sk.Sink2} {
		if sinks[i], err = sk.Listen(ns); err != nil {
			return err
		}
	}
	fmt.Printf("\nThe node learned %d IPv4 and %d IPv6 routes from BIRD (%s has a next hop nobody answers for:\n"+
		"its packets pass to the kernel, counted as unresolved). Try, in another shell:\n", lab.Routes4(), len(lab.SkeletonRoutes6), lab.UnresolvedRoute.Prefix)
	fmt.Printf("  sudo nsenter --net=/run/netns/%s go tool gobgp global rib\n", sk.Router.Name)
	fmt.Printf("  sudo nsenter --net=/run/netns/%s curl -s %s/metrics | grep fibfleet_xdp\n", sk.Router.Name, lab.MetricsAddr)
	fmt.Printf("  sudo bpftool map dump pinned %s/stats\n\n", dataplane.PinDir("", sk.NodeName))
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if !hold {
			for _, r := range append(append(lab.AllRoutes(), lab.ExtendedNexthopRoute), lab.SkeletonRoutes6...) {
				if err := sk.Send(r.Prefix.Addr().Next(), rate); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		st, err := dataplane.ReadPinnedStats("", sk.NodeName)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(w, "%s\tdestination\tBGP next hop\tsink\treceived\n", time.Now().Format("15:04:05"))
		for _, r := range append(append(append([]lab.Route(nil), lab.SkeletonRoutes...), lab.ExtendedNexthopRoute), lab.SkeletonRoutes6...) {
			dst := r.Prefix.Addr().Next()
			fmt.Fprintf(w, "\t%s (%s)\t%s\tsink%d\t%d\n", dst, r.Prefix, r.Nexthop, r.Sink, sinks[r.Sink].Count(dst))
		}
		fmt.Fprintf(w, "\t%s (%s)\t%s\t-\t(unresolved)\n", lab.UnresolvedRoute.Prefix.Addr().Next(), lab.UnresolvedRoute.Prefix, lab.UnresolvedRoute.Nexthop)
		fmt.Fprintf(w, "\tXDP forwarded (IPv4, IPv6)\t\t\t%d, %d\n", st[dataplane.Forwarded].Packets, st[dataplane.ForwardedV6].Packets)
		for _, r := range dataplane.Reasons() {
			if r.Action() != "redirect" && st[r].Packets > 0 {
				fmt.Fprintf(w, "\tpassed to the kernel: %s\t\t\t%d\n", r, st[r].Packets)
			}
		}
		printCache(w, sk)
		w.Flush()
	}
}

// printCache shows the node's destination cache per family (GET /api/v1/cache): its
// mode and size and the controller's last verdict.
func printCache(w io.Writer, sk *lab.Skeleton) {
	body, err := sk.Get("/api/v1/cache")
	if err != nil {
		fmt.Fprintf(w, "\tdst cache: %v\n", err)
		return
	}
	var st nodeapi.Cache
	if err := json.Unmarshal(body, &st); err != nil {
		fmt.Fprintf(w, "\tdst cache: %v\n", err)
		return
	}
	for _, f := range st.Families {
		size := "off"
		if f.Entries > 0 {
			size = fmt.Sprintf("%d entries, %.0f%% hits", f.Entries, 100*f.HitRate)
		}
		fmt.Fprintf(w, "\tdst cache %s (%s): %s\t\t\t%s\n", f.Family, f.Mode, size, f.Reason)
	}
}
