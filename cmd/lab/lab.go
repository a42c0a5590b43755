package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// labDir holds a running lab's state, logs, sockets and data: one lab per host.
// FIBFLEET_LAB_DIR moves it (ctl reads the same variable to find the lab's etcd).
func labDir() string { return cmp.Or(os.Getenv("FIBFLEET_LAB_DIR"), "/run/fibfleet-lab-up") }

// labState is the lab process's report (state.json in the lab's directory).
type labState struct {
	PID     int       `json:"pid"`
	Prefix  string    `json:"prefix"`
	Started time.Time `json:"started"`
	// Phase: starting, loading, ready, failed, stopping.
	Phase string `json:"phase"`
	Error string `json:"error,omitempty"`
	// Etcd is the lab's etcd (ctl reads it: its default --etcd while the lab runs),
	// Cluster the fleet's name.
	Etcd    string `json:"etcd"`
	Cluster string `json:"cluster"`
	// Table is how many routes the feeder announces to n1; Example is an address in
	// one of them.
	Table   int        `json:"table"`
	Example string     `json:"example"`
	Nodes   []labNode  `json:"nodes"`
	Flows   labTraffic `json:"traffic"`
}

type labNode struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	API       string `json:"api"`
	Routes    int    `json:"routes"`
}

type labTraffic struct {
	Rate     float64 `json:"rate"`
	Flood    float64 `json:"flood"`
	Sent     uint64  `json:"sent"`
	Received int     `json:"received"`
}

// labOptions are `lab up`'s settings, passed on to the lab process.
type labOptions struct {
	dir        string
	nodes      int
	table      string
	rate       float64
	flood      float64
	nodeBinary string
	wait       time.Duration
}

func newRoot(g *globals) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "lab",
		Short: "A whole fibfleet fleet on this machine, in network namespaces (as root)",
		Long: `lab builds a whole fleet on this machine: router nodes (the real node binary) in network
namespaces on a shared link, an etcd, an upstream BGP feeder announcing a real table
bundled with fibfleet to the first node (the iBGP mesh carries it to the others), a
source sending UDP flows (and, if asked, a flood of random destinations) through the
fleet, and a sink counting what arrives. None of it is connected to the host's network.
Look at it with ctl status, ctl top, ctl lookup (ctl finds the lab's etcd); remove it
with lab down.`,
		Example: `  sudo lab up --table full --flood 0.2
  sudo lab status
  sudo lab down`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if g.output != "table" && g.output != "json" {
				return usagef("-o %q: use table or json", g.output)
			}
			return nil
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	c.PersistentFlags().StringVar(&dir, "dir", labDir(), "the lab's directory (state, logs, sockets, data); env FIBFLEET_LAB_DIR")
	c.PersistentFlags().StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	c.AddCommand(newLabUp(g, &dir), newLabDown(g, &dir), newLabStatus(g, &dir), newLabServe(&dir), newLabFeed())
	return c
}

func readLabState(dir string) (labState, error) {
	var st labState
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, XDP, BPF): run it with sudo")
	}
	return nil
}

func newLabUp(g *globals, dir *string) *cobra.Command {
	o := labOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build a fleet on this machine and start traffic through it",
		Long: `up builds the lab (see lab --help) and returns once every node holds the table and
traffic flows, showing progress while the table loads. It refuses to build a second lab
while one runs. The node binary is the one beside lab (fibfleet-node or node), else
fibfleet-node on PATH, else it is built from the source tree lab runs in (so
'sudo go run ./cmd/lab up' works in a fresh clone).`,
		Example: `  sudo go run ./cmd/lab up
  sudo lab up --nodes 5 --table full --rate 20000 --flood 0.3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.dir = *dir
			if o.nodes < 2 || o.nodes > 50 {
				return usagef("--nodes %d: use 2 to 50", o.nodes)
			}
			if _, err := parseTable(o.table); err != nil {
				return usageError{err}
			}
			if o.rate < 0 || o.rate > 1e6 {
				return usagef("--rate %v: use 0 to 1000000 datagrams per second", o.rate)
			}
			if o.flood < 0 || o.flood > 1 {
				return usagef("--flood %v: use a share from 0 to 1", o.flood)
			}
			if err := needRoot(); err != nil {
				return err
			}
			return labUp(cmd.Context(), g, o)
		},
	}
	o.flags(cmd.Flags())
	cmd.Flags().DurationVar(&o.wait, "wait", 20*time.Minute, "how long to wait for the lab to be ready")
	return cmd
}

// flags are the lab's settings, which `up` passes on to the lab process (`serve`).
func (o *labOptions) flags(f *pflag.FlagSet) {
	f.IntVar(&o.nodes, "nodes", 3, "router nodes")
	f.StringVar(&o.table, "table", "quick", "what the feeder announces: quick (about 100,000 real prefixes), full (the whole 2026 table, 1,168,945), or a number of prefixes")
	f.Float64Var(&o.rate, "rate", 2000, "datagrams per second the source sends")
	f.Float64Var(&o.flood, "flood", 0, "share of the datagrams sent to fresh random destinations (a flood), 0 to 1")
	f.StringVar(&o.nodeBinary, "node-binary", "", "the node binary (default: beside lab, on PATH, or built from the source tree)")
}

// parseTable reads --table: quick, full or a count.
func parseTable(spec string) (int, error) {
	switch spec {
	case "quick":
		return 100_000, nil
	case "full":
		return 0, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--table %q: use quick, full or a number of prefixes", spec)
	}
	return n, nil
}

// labTable is the table the feeder announces: n prefixes of the 2026 table spread over
// it (every k-th), or all of it for 0.
func labTable(spec string) ([]table.Route, error) {
	n, err := parseTable(spec)
	if err != nil {
		return nil, err
	}
	all, err := table.Real2026()
	if err != nil {
		return nil, err
	}
	if n == 0 || n >= len(all) {
		return all, nil
	}
	out := make([]table.Route, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out, nil
}

// findNode finds the node binary: beside lab, on PATH, or built from the source tree.
func findNode(o labOptions) (string, error) {
	if o.nodeBinary != "" {
		return o.nodeBinary, nil
	}
	self, err := os.Executable()
	if err == nil {
		for _, name := range []string{"fibfleet-node", "node"} {
			p := filepath.Join(filepath.Dir(self), name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && isNodeBinary(p) {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath("fibfleet-node"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil || strings.TrimSpace(string(out)) != "github.com/fibfleet/fibfleet" {
		return "", errors.New("no node binary: put fibfleet-node beside lab or on PATH (make build writes bin/node), give --node-binary, or run lab from the source tree")
	}
	dst := filepath.Join(o.dir, "fibfleet-node")
	fmt.Fprintln(os.Stderr, "building the node binary from the source tree ...")
	if b, err := exec.Command("go", "build", "-o", dst, "./cmd/node").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/node: %w\n%s", err, b)
	}
	return dst, nil
}

// isNodeBinary tells fibfleet's node from another program called node (Node.js).
func isNodeBinary(p string) bool {
	out, _ := exec.Command(p, "-h").CombinedOutput()
	return strings.Contains(string(out), "fibfleet")
}

func labUp(ctx context.Context, g *globals, o labOptions) error {
	if st, err := readLabState(o.dir); err == nil && alive(st.PID) {
		return fmt.Errorf("a lab is running (process %d, up since %s, in %s): remove it first with lab down", st.PID, st.Started.Format(time.RFC3339), o.dir)
	}
	// What a lab whose process died left behind goes first.
	lab.ReapStale()
	if err := os.RemoveAll(o.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return fmt.Errorf("the lab's directory: %w", err)
	}
	node, err := findNode(o)
	if err != nil {
		return err
	}
	// The lab process runs a copy of lab: 'go run' removes its binary when it exits.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	me := filepath.Join(o.dir, "lab")
	if err := copyFile(self, me); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(o.dir, "lab.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"serve", "--dir", o.dir, "--nodes", strconv.Itoa(o.nodes), "--table", o.table,
		"--rate", fmt.Sprint(o.rate), "--flood", fmt.Sprint(o.flood), "--node-binary", node}
	proc := exec.Command(me, args...)
	proc.Stdout, proc.Stderr = logf, logf
	proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // it outlives this command
	if err := proc.Start(); err != nil {
		return fmt.Errorf("start the lab process: %w", err)
	}
	pid := proc.Process.Pid
	_ = proc.Process.Release()
	fmt.Fprintf(g.errOut, "lab process %d started; log in %s\n", pid, filepath.Join(o.dir, "lab.log"))
	deadline := time.Now().Add(o.wait)
	last := ""
	for {
		st, err := readLabState(o.dir)
		if err == nil {
			line := progress(st)
			if line != last {
				fmt.Fprintln(g.errOut, line)
				last = line
			}
			switch st.Phase {
			case "ready":
				return g.render(st, func(w io.Writer) { printLabReady(w, st, o.dir) })
			case "failed":
				return fmt.Errorf("the lab failed: %s (see %s; lab down removes what is left)", st.Error, filepath.Join(o.dir, "lab.log"))
			}
		}
		if !alive(pid) {
			return fmt.Errorf("the lab process exited (see %s)", filepath.Join(o.dir, "lab.log"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the lab was not ready within %s (see %s; it goes on: lab status, lab down)", o.wait, filepath.Join(o.dir, "lab.log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted; the lab goes on building (lab status, lab down)")
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func progress(st labState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab %s: %s", st.Prefix, st.Phase)
	if st.Phase == "loading" || st.Phase == "ready" {
		for _, n := range st.Nodes {
			pct := 0.0
			if st.Table > 0 {
				pct = 100 * float64(n.Routes) / float64(st.Table+1)
			}
			fmt.Fprintf(&b, "  %s %d routes (%.0f%%)", strings.TrimPrefix(n.Name, st.Prefix+"-"), n.Routes, pct)
		}
	}
	return b.String()
}

func printLabReady(w io.Writer, st labState, dir string) {
	ctl, self := commands()
	fmt.Fprintf(w, "lab %s is up: %d nodes, each with %d routes; traffic %.0f datagrams/s", st.Prefix, len(st.Nodes), st.Table+1, st.Flows.Rate)
	if st.Flows.Flood > 0 {
		fmt.Fprintf(w, " (%.0f%% flood)", 100*st.Flows.Flood)
	}
	fmt.Fprintf(w, "\n\nLook at it (as root; ctl finds the lab's etcd, %s):\n", st.Etcd)
	for _, c := range []string{"status", "top", "lookup " + st.Example, "cache set --mode fixed --entries-v4 4096", "cache flush --wait"} {
		fmt.Fprintf(w, "  %s %s\n", ctl, c)
	}
	fmt.Fprintf(w, "  %s status\n", self)
	fmt.Fprintf(w, "  nsenter --net=/run/netns/%s go tool gobgp neighbor\n", st.Nodes[0].Namespace)
	fmt.Fprintf(w, "(auto keeps the destination cache off in front of the compiled FIB, where it does not pay: fixed shows it at work)\n")
	fmt.Fprintf(w, "\nRemove it: %s down   (logs in %s)\n", self, dir)
}

// commands says how to run ctl and lab again: lab as invoked, unless 'go run' built
// it (its binary is gone); ctl beside it, else from the source tree, else on PATH.
func commands() (ctl, self string) {
	exe, err := os.Executable()
	if err == nil && strings.Contains(exe, "go-build") {
		return "go run ./cmd/ctl", "go run ./cmd/lab"
	}
	ctl = "ctl"
	if dir := filepath.Dir(os.Args[0]); dir != "." { // not found on PATH
		if _, err := os.Stat(filepath.Join(dir, "ctl")); err == nil {
			ctl = filepath.Join(dir, "ctl")
		}
	}
	return ctl, os.Args[0]
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

func newLabStatus(g *globals, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:     "status",
		Short:   "Whether a lab runs, its nodes, and the traffic sent and received",
		Example: "  lab status -o json",
		Args:    noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			st, err := readLabState(*dir)
			if err != nil {
				return fmt.Errorf("no lab in %s (lab up builds one)", *dir)
			}
			if !alive(st.PID) {
				return fmt.Errorf("the lab's process %d is gone (lab down removes what it left)", st.PID)
			}
			return g.render(st, func(w io.Writer) {
				fmt.Fprintln(w, progress(st))
				fmt.Fprintf(w, "traffic: %.0f/s, %.0f%% flood; sent %d, received by the sink %d\n", st.Flows.Rate, 100*st.Flows.Flood, st.Flows.Sent, st.Flows.Received)
				fmt.Fprintf(w, "etcd: %s (cluster %s)\n", st.Etcd, st.Cluster)
			})
		},
	}
}

func newLabDown(g *globals, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:     "down",
		Short:   "Remove the lab: namespaces, links, pins, processes, files",
		Example: "  sudo lab down",
		Args:    noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := needRoot(); err != nil {
				return err
			}
			st, err := readLabState(*dir)
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			if alive(st.PID) {
				_ = syscall.Kill(st.PID, syscall.SIGTERM)
				for deadline := time.Now().Add(2 * time.Minute); alive(st.PID); time.Sleep(100 * time.Millisecond) {
					if time.Now().After(deadline) {
						_ = syscall.Kill(st.PID, syscall.SIGKILL)
						fmt.Fprintf(g.errOut, "the lab process ignored SIGTERM for 2 minutes: killed\n")
						time.Sleep(200 * time.Millisecond)
						break
					}
				}
			}
			lab.ReapStale() // what a dead lab process left
			if err := os.RemoveAll(*dir); err != nil {
				return err
			}
			left := leftovers(st.Prefix)
			if len(left) > 0 {
				return fmt.Errorf("the lab left: %s", strings.Join(left, ", "))
			}
			if st.Prefix == "" {
				fmt.Fprintln(g.out, "no lab was running; nothing left behind")
				return nil
			}
			fmt.Fprintf(g.out, "lab %s removed: no namespaces, pins, processes or files left\n", st.Prefix)
			return nil
		},
	}
}

// leftovers lists what of a lab is still there: namespaces, bpffs pins, processes
// whose command line names the lab.
func leftovers(prefix string) []string {
	if prefix == "" {
		return nil
	}
	var out []string
	if b, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if name, _, _ := strings.Cut(strings.TrimSpace(l), " "); strings.HasPrefix(name, prefix+"-") {
				out = append(out, "namespace "+name)
			}
		}
	}
	pins, _ := filepath.Glob(filepath.Join("/sys/fs/bpf/fibfleet", prefix+"-*"))
	for _, p := range pins {
		out = append(out, "pins "+p)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), prefix+"-") {
			out = append(out, "process "+filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// newLabServe is the lab process (hidden): it builds the lab, reports in state.json,
// and removes everything on SIGTERM.
func newLabServe(dir *string) *cobra.Command {
	o := labOptions{}
	cmd := &cobra.Command{
		Use:    "serve",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.dir = *dir
			return labServe(cmd.Context(), o)
		},
	}
	o.flags(cmd.Flags())
	return cmd
}

func labServe(ctx context.Context, o labOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	st := labState{PID: os.Getpid(), Started: time.Now().UTC(), Phase: "starting", Cluster: "default", Flows: labTraffic{Rate: o.rate, Flood: o.flood}}
	save := func() {
		b, _ := json.MarshalIndent(st, "", "  ")
		tmp := filepath.Join(o.dir, "state.json.tmp")
		if os.WriteFile(tmp, b, 0o644) == nil {
			_ = os.Rename(tmp, filepath.Join(o.dir, "state.json"))
		}
	}
	fail := func(err error) error {
		st.Phase, st.Error = "failed", err.Error()
		save()
		<-ctx.Done() // keep what is there for a look, until lab down
		return err
	}
	save()
	routes, err := labTable(o.table)
	if err != nil {
		return fail(err)
	}
	st.Table = len(routes)
	st.Example = routes[len(routes)/2].Prefix.Addr().Next().String()
	etcd, err := cluster.StartEmbedded(cluster.EmbeddedConfig{Dir: filepath.Join(o.dir, "etcd"), Name: "lab", Listen: "unix://" + filepath.Join(o.dir, "etcd.sock")})
	if err != nil {
		return fail(err)
	}
	defer etcd.Close()
	st.Etcd = etcd.Endpoint
	fleetDir := filepath.Join(o.dir, "fleet")
	if err := os.MkdirAll(fleetDir, 0o755); err != nil {
		return fail(err)
	}
	self := filepath.Join(o.dir, "lab")
	fl, err := lab.StartFleet(lab.FleetConfig{NodeBinary: o.nodeBinary, Dir: fleetDir, Nodes: o.nodes, Etcd: etcd.Endpoint, Cluster: st.Cluster,
		CatchAll: true, Expected: len(routes), Feeder: []string{self, "feed", "--table", o.table}})
	if fl != nil {
		defer func() {
			st.Phase = "stopping"
			save()
			if err := fl.Close(); err != nil {
				slog.Warn("lab teardown", "err", err)
			}
		}()
		st.Prefix = fl.Prefix
		for _, n := range fl.Nodes {
			st.Nodes = append(st.Nodes, labNode{Name: n.Name, Namespace: n.NS.Name, API: "unix://" + n.APISocket})
		}
	}
	if err != nil {
		return fail(err)
	}
	st.Phase = "loading"
	save()
	for {
		done := true
		for i, n := range fl.Nodes {
			var s nodeapi.Status
			if b, err := n.Get("/api/v1/status"); err == nil && json.Unmarshal(b, &s) == nil {
				st.Nodes[i].Routes = s.Routes[0]
			}
			done = done && st.Nodes[i].Routes == len(routes)+1 // and the subnet n1 announces
		}
		save()
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	sink, err := fl.Listen()
	if err != nil {
		return fail(err)
	}
	var tr *lab.Traffic
	if o.rate > 0 {
		if tr, err = lab.StartTraffic(fl.Src, lab.TrafficConfig{Routes: routes, Destinations: 10_000, FlowLength: 10, Rate: o.rate, Flood: o.flood,
			Seed: uint64(time.Now().UnixNano())}); err != nil {
			return fail(err)
		}
		defer tr.Stop()
	}
	st.Phase = "ready"
	for {
		if tr != nil {
			st.Flows.Sent = tr.Sent.Load()
		}
		st.Flows.Received = sink.Total()
		save()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// newLabFeed is the lab's BGP upstream (hidden), run in the upstream namespace: the
// in-process GoBGP feeder announcing the lab's table to n1.
func newLabFeed() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:    "feed",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			routes, err := labTable(spec)
			if err != nil {
				return err
			}
			f, err := lab.StartFeeder(ctx, lab.FeederConfig{ASN: lab.UpstreamASN, RouterID: lab.UpstreamAddr, LocalAddress: lab.UpstreamAddr,
				PeerAddress: lab.RouterUpAddr, PeerASN: lab.RouterASN, PeerPort: 179, Nexthop: netip.MustParseAddr(lab.UpstreamAddr), Routes: routes})
			if err != nil {
				return err
			}
			defer f.Stop()
			slog.Info("feeding the lab's table to n1", "routes", len(routes))
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&spec, "table", "quick", "")
	return cmd
}
