// Command fibbench compares IPv4 lookup cost on a real table: fibfleet's DIR-24-8 vs the
// kernel's FIB (bpf_fib_lookup, same routes in a kernel table) vs a BPF LPM trie, on a
// uniform and a Zipf trace, each figure the median of interleaved runs. It prints a
// Markdown table with ratios against the kernel and writes a PNG bar chart. As root:
//
//	go run ./internal/bench/fibbench -png docs/fib-lookup.png
//
// The other measurements of docs/BENCHMARKS.md: -pps (forwarding through veth),
// -convergence (full-table BGP against BIRD 2), -import-ab (full-table loads with the
// import rules and without), -policy (a policy change on a full table reaching the
// dataplane), -flush (fleet flush propagation),
// -detect (failure detection of a crashed member), -v6 (the IPv6 FIB against the trie
// candidates, bpf_fib_lookup and the LPM trie), -cache (the destination cache over
// flows and floods, off vs fixed vs auto, in front of every FIB of both families).
package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/bench"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func main() {
	which := flag.String("table", "2026", "bundled table: 2026 (1,168,945 prefixes) or caida2016 (656,331, some longer than /24); with -pps also 2026v6 (the 2026 IPv6 table)")
	n := flag.Int("trace", 1<<20, "lookups per trace")
	runs := flag.Int("runs", 5, "interleaved runs per mechanism and trace (the median is reported)")
	png := flag.String("png", "", "write a bar chart here")
	pps := flag.Bool("pps", false, "measure forwarding through veth (packets per second) instead of lookups")
	frames := flag.Int("frames", 1_000_000, "frames per forwarding measurement (with -pps)")
	conv := flag.Bool("convergence", false, "measure full-table BGP convergence of the node against BIRD 2 instead")
	attrs := flag.Bool("attrs", true, "with -convergence: the table's routes carry real AS paths and communities (table.Attrs2014); false: one AS path for all")
	before := flag.String("before", "", "with -convergence: also run this node binary (a build before a change), interleaved with the current one, run by run; with -upstreams, one or more such binaries, comma-separated; with -mesh, one, whose fleet runs in every round too")
	profDir := flag.String("profile", "", "with -convergence: save the node's CPU profile of the load and its heap profile at its end into this directory, run by run; with -upstreams: its heap profile at each load's end; with -mesh: n1's CPU profile of the load's first minute, n2's of its first 150 s, and n1's heap at 80% of its load and at its end")
	v6 := flag.Bool("v6", false, "compare the IPv6 FIB candidates on the 2026 IPv6 table instead")
	v6len := flag.Int("v6-trace-len", 0, "with -v6: draw trace destinations only from prefixes of this length (0: all), to see the cost per trie level")
	v6layout := flag.Int("v6-layout", 0, "stride layout of the IPv6 tries: 0 (16,8,8,...), 1 (24,8,...) or 2 (16,16,8,...)")
	flush := flag.Bool("flush", false, "measure fleet flush propagation (etcd write -> every node's BPF map) over a 3-member etcd of processes, for 3 and 20 in-process nodes, instead")
	flushes := flag.Int("flushes", 200, "flushes per fleet size (with -flush)")
	detect := flag.Bool("detect", false, "measure failure detection (a crashed gossip member marked dead by all others), tuned profile against memberlist's LAN defaults, instead")
	crashes := flag.Int("crashes", 15, "crashes per profile (with -detect)")
	kill := flag.Bool("kill", false, "SIGKILL a real node of a three-node fleet (namespaces, etcd, BIRD) and time its death and unpeering by the others, instead")
	kills := flag.Int("kills", 10, "kills (with -kill)")
	importAB := flag.Bool("import-ab", false, "measure full-table convergence with the lab's import rules and without, interleaved (-runs pairs), instead")
	rovAB := flag.Bool("rov-ab", false, "measure full-table convergence without route origin validation, against the 9,999 real VRPs and against 500,000 synthesized ones (rpki.invalid: mark), interleaved (-runs rounds), instead")
	rovLate := flag.Bool("rov-late", false, "measure a validator's 500,000 VRPs arriving after the full table is loaded (sessions do not wait for validators): the set's transfer and the re-check until the invalid routes left the FIB (-runs times), instead")
	failover := flag.Bool("failover", false, "fail the better of two upstreams (its link's carrier lost; it gone silent, found by BFD 300 ms x 3) under 64 flows at 6,400 datagrams/s, the node against BIRD 2 and FRR 8.4 into the kernel, at 10k, 100k prefixes and the whole table (-runs times each), instead")
	upstreams := flag.Bool("upstreams", false, "load the whole table with real attributes (-attrs) from each number of upstreams in -upstreams-counts (one and two by default), fibfleet against BIRD 2 and FRR 8.4 into the kernel, interleaved (-runs rounds): from the sessions Established to the forwarding table complete, peak RSS, CPU-seconds, instead")
	hogs := flag.Int("hogs", 0, "with -mesh: this many busy loops (processes spinning on the CPU) beside each fleet load; issue 35's load condition is 2")
	fleetsOnly := flag.Bool("fleets-only", false, "with -mesh: run only the fleets (this build, and -before's), not BIRD 2 and FRR; with -upstreams: only fibfleet's builds")
	upstreamsN := flag.Int("upstreams-prefixes", 0, "with -upstreams or -mesh: the first N prefixes of the table (0: all)")
	upstreamsCounts := flag.String("upstreams-counts", "1,2", "with -upstreams: the numbers of full-table upstreams to load from (1 to 4, comma-separated)")
	mesh := flag.Bool("mesh", false, "load the whole table with real attributes (-attrs) from one upstream into a router with two iBGP peers: fibfleet's fleet of three (n1's upstream, its two mesh peers) against BIRD 2 and FRR 8.4 sending it to two iBGP peers (BIRDs), and the node alone with the same upstream (what a mesh peer costs n1), interleaved (-runs rounds): time, peak RSS, CPU-seconds per node, instead")
	restart := flag.Bool("restart", false, "restart the router under 64 flows at 6,400 datagrams/s with the whole table from two upstreams: the node by SIGTERM, SIGKILL and an upgrade to a build with another XDP program, against BIRD 2 restarting gracefully with its kernel routes kept (-tries each): datagrams lost, time to the full table again, peak RSS, instead")
	tries := flag.Int("tries", 10, "restarts of each kind (with -restart)")
	bfdLoad := flag.Bool("bfdload", false, "load the whole table from two upstreams at once with BFD at 300, 100 and 50 ms x 3 on both sessions and count the sessions' flaps during the load and 30 s after (-runs times each), instead")
	policy := flag.Bool("policy", false, "measure a policy change on a full table (refuse the upstream's routes, then accept them again) reaching the dataplane (-runs times), instead")
	cacheModes := flag.Bool("cache", false, "measure the destination cache (floods; off vs fixed 512 vs auto over flows to D destinations) in front of each FIB instead; -png takes a %s for the FIB's name")
	flag.Parse()
	var err error
	if *importAB {
		err = runImportAB(*runs)
	} else if *rovAB {
		err = runROVAB(*runs)
	} else if *rovLate {
		err = runROVLate(*runs)
	} else if *policy {
		err = runPolicy(*runs)
	} else if *failover {
		err = runFailover(*runs)
	} else if *upstreams {
		err = runUpstreams(*runs, *upstreamsN, *upstreamsCounts, *attrs, *profDir, *before, *fleetsOnly)
	} else if *mesh {
		err = runMesh(*runs, *upstreamsN, *attrs, *profDir, *before, *fleetsOnly, *hogs)
	} else if *restart {
		err = runRestart(*tries)
	} else if *bfdLoad {
		err = runBFDLoad(*runs)
	} else if *kill {
		err = runKill(*kills)
	} else if *flush {
		err = runFlush(*flushes)
	} else if *detect {
		err = runDetect(*crashes)
	} else if *cacheModes {
		err = runCache(*which, *n, *runs, *png)
	} else if *v6 {
		err = run6(*n, *runs, *v6layout, *v6len)
	} else if *conv {
		err = runConvergence(*runs, *attrs, *profDir, *before)
	} else if *pps {
		err = runPPS(*which, *n, *runs, *frames, *png)
	} else {
		err = run(*which, *n, *runs, *png)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fibbench:", err)
		os.Exit(1)
	}
}

// lookupSetup loads a bundled IPv4 table three ways (fibfleet, kernel, LPM trie).
func lookupSetup(which string, n int) (*bench.LookupSetup, error) {
	load := map[string]func() ([]table.Route, error){"2026": table.Real2026, "caida2016": table.CAIDA2016}[which]
	if load == nil {
		return nil, fmt.Errorf("unknown table %q: use 2026 or caida2016", which)
	}
	routes, err := load()
	if err != nil {
		return nil, err
	}
	slog.Info("loading the table three ways", "routes", len(routes))
	return bench.NewLookupSetup(routes, n)
}

func run(which string, n, runs int, png string) error {
	s, err := lookupSetup(which, n)
	if err != nil {
		return err
	}
	defer s.Close()
	routes := s.Routes
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	slog.Info("loaded", "fibfleet", s.FIBLoad, "kernel_netlink", s.KernelLoad, "lpm_trie", s.LPMLoad, "go_heap_MiB", ms.HeapAlloc>>20)
	res, err := s.Run(bench.Traces(routes, n, 1), runs)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d prefixes (%s), %d lookups per trace, median of %d interleaved runs, ns per lookup (loop included)\n\n", len(routes), which, n, runs)
	var rows []lookupRow
	for _, r := range res {
		rows = append(rows, lookupRow{r.Trace, r.Mechanism.String(), r.Mechanism == dataplane.MechKernel, r.Median, r.Runs})
	}
	printLookupTable(rows)
	fmt.Printf("\nLoad times: fibfleet FIB %v, kernel table via batched netlink %v, LPM trie %v\n", s.FIBLoad.Round(1e6), s.KernelLoad.Round(1e6), s.LPMLoad.Round(1e6))
	if png != "" {
		return plotResults(res, png, fmt.Sprintf("IPv4 lookup, %d real prefixes (median of %d)", len(routes), runs))
	}
	return nil
}

func run6(n, runs, layout, traceLen int) error {
	if layout < 0 || layout >= len(bench.V6Layouts) {
		return fmt.Errorf("-v6-layout %d: use 0 to %d", layout, len(bench.V6Layouts)-1)
	}
	strides := bench.V6Layouts[layout]
	routes, err := table.Real2026v6()
	if err != nil {
		return err
	}
	slog.Info("building the IPv6 candidates and loading the table into the kernel and an LPM trie", "routes", len(routes))
	s, err := bench.NewLookupSetup6(routes, n, strides)
	if err != nil {
		return err
	}
	defer s.Close()
	from := s.Routes
	if traceLen > 0 {
		from = nil
		for _, r := range s.Routes {
			if r.Prefix.Bits() == traceLen {
				from = append(from, r)
			}
		}
		if len(from) == 0 {
			return fmt.Errorf("-v6-trace-len %d: no prefix of that length", traceLen)
		}
		fmt.Printf("\ntrace destinations from the %d /%d prefixes only\n", len(from), traceLen)
	}
	res, err := s.Run(bench.Traces6(from, n, 1), runs)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d IPv6 prefixes (2026), tries with strides %v, %d lookups per trace, median of %d interleaved runs, ns per lookup (loop included)\n\n", len(s.Routes), strides, n, runs)
	var rows []lookupRow
	for _, r := range res {
		rows = append(rows, lookupRow{r.Trace, r.Mechanism.String(), r.Mechanism == bench.Kernel6, r.Median, r.Runs})
	}
	printLookupTable(rows)
	fmt.Printf("\nfibfleet FIB: %d keys in %d buckets of 64 bytes (%.1f MiB + 512 KiB first level), %d pending, loaded in %v\n",
		s.FIB.V6Keys, s.FIB.V6Buckets, float64(64*s.FIB.V6Buckets)/(1<<20), s.FIB.V6Pending, s.FIBLoad.Round(1e6))
	fmt.Printf("Memory: stride %.1f MiB, compressed %.1f MiB (%d nodes). Build of both %v; kernel table via batched netlink %v; LPM trie %v\n",
		float64(s.StrideBytes)/(1<<20), float64(s.CompressedBytes)/(1<<20), s.Nodes, s.BuildTime.Round(1e6), s.KernelLoad.Round(1e6), s.LPMLoad.Round(1e6))
	return nil
}

// lookupRow is one mechanism on one trace; the kernel's rows are the baseline.
type lookupRow struct {
	trace, mechanism string
	kernel           bool
	median           float64
	runs             []float64
}

// printLookupTable prints the rows as a markdown table, each against the kernel's
// row of its trace.
func printLookupTable(rows []lookupRow) {
	fmt.Println("| trace | mechanism | ns/lookup | runs | vs. bpf_fib_lookup |")
	fmt.Println("|---|---|---|---|---|")
	base := map[string]float64{}
	for _, r := range rows {
		if r.kernel {
			base[r.trace] = r.median
		}
	}
	for _, r := range rows {
		fmt.Printf("| %s | %s | %.1f | %s | %.3fx |\n", r.trace, r.mechanism, r.median, fmtRuns(r.runs, "%.0f"), r.median/base[r.trace])
	}
}

// fmtRuns lists a measurement's runs, each with format.
func fmtRuns(xs []float64, format string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf(format, x)
	}
	return s
}

func plotResults(res []bench.Result, path, title string) error {
	var names []string
	for _, m := range bench.Mechanisms {
		names = append(names, m.String())
	}
	label := func(r bench.Result) string { return r.Mechanism.String() }
	return barChart(res, names, label, []color.Color{red, blue, green, grey}, path, title, "ns per lookup", false)
}

func runPPS(which string, n, runs, frames int, png string) error {
	load := map[string]func() ([]table.Route, error){"2026": table.Real2026, "caida2016": table.CAIDA2016, "2026v6": table.Real2026v6}[which]
	if load == nil {
		return fmt.Errorf("unknown table %q: use 2026, caida2016 or 2026v6", which)
	}
	routes, err := load()
	if err != nil {
		return err
	}
	v6 := which == "2026v6"
	var traces []bench.Trace
	if v6 {
		traces = bench.Traces6(routes, n, 1)
	} else {
		traces = bench.Traces(routes, n, 1)
	}
	modes := bench.PPSModesFor(v6)
	slog.Info("building gen -- router -- sink and loading the table", "routes", len(routes))
	s, err := bench.NewPPSSetup(routes, traces[0].Addrs)
	if err != nil {
		return err
	}
	defer s.Close()
	var res []bench.Result
	fmt.Printf("\n%d prefixes (%s), 64-byte UDP frames through veth, %d frames per measurement, median of %d interleaved runs\n\n", len(routes), which, frames, runs)
	fmt.Println("| trace | router | Mpps | runs | vs. kernel forwarding |")
	fmt.Println("|---|---|---|---|---|")
	for _, tr := range traces {
		if err := s.SetTrace(tr.Addrs); err != nil {
			return err
		}
		per := map[string][]float64{}
		for r := 0; r < runs; r++ {
			for _, m := range modes {
				pps, err := s.Measure(m, frames)
				if err != nil {
					return err
				}
				per[m] = append(per[m], pps/1e6)
			}
		}
		base := bench.Median(per[bench.ModeKernel])
		for _, m := range modes {
			md := bench.Median(per[m])
			fmt.Printf("| %s | %s | %.2f | %s | %.2fx |\n", tr.Name, m, md, fmtRuns(per[m], "%.2f"), md/base)
			res = append(res, bench.Result{Trace: tr.Name, Runs: per[m], Median: md, Label: m})
		}
	}
	if png != "" {
		return plotPPS(res, png, fmt.Sprintf("Forwarding through veth, %d real prefixes (median of %d)", len(routes), runs))
	}
	return nil
}

func plotPPS(res []bench.Result, path, title string) error {
	return barChart(res, bench.PPSModes, func(r bench.Result) string { return r.Label }, []color.Color{grey, red, blue, green, orange, purple}, path, title, "Mpps (64-byte frames)", true)
}

var (
	red    = color.RGBA{200, 80, 60, 255}
	blue   = color.RGBA{40, 120, 200, 255}
	grey   = color.RGBA{120, 120, 120, 255}
	green  = color.RGBA{60, 160, 90, 255}
	orange = color.RGBA{230, 150, 40, 255}
	purple = color.RGBA{140, 80, 170, 255}
)

// barChart draws one bar per series (in order, in the given colors) for each trace.
func barChart(res []bench.Result, series []string, label func(bench.Result) string, colors []color.Color, path, title, ylabel string, legendLeft bool) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	var traces []string
	for _, r := range res {
		if len(traces) == 0 || traces[len(traces)-1] != r.Trace {
			traces = append(traces, r.Trace)
		}
	}
	w := vg.Points(18)
	for i, name := range series {
		var vals plotter.Values
		for _, tr := range traces {
			for _, r := range res {
				if r.Trace == tr && label(r) == name {
					vals = append(vals, r.Median)
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = colors[i%len(colors)]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(i-1) * w
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	p.Legend.Top = true
	p.Legend.Left = legendLeft
	p.NominalX(traces...)
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// fullTableLab is the 2026 table less the lab's prefixes, a working directory and
// the node binary built into it (cleanup removes both).
func fullTableLab() (routes []table.Route, dir, node string, cleanup func(), err error) {
	all, err := table.Real2026()
	if err != nil {
		return nil, "", "", nil, err
	}
	if dir, err = os.MkdirTemp("", "fibbench-"); err != nil {
		return nil, "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	node = dir + "/fibfleet-node"
	if out, err := exec.Command("go", "build", "-o", node, "./cmd/node").CombinedOutput(); err != nil {
		cleanup()
		return nil, "", "", nil, fmt.Errorf("go build ./cmd/node (run from the repository root): %w\n%s", err, out)
	}
	return bench.LabTable(all), dir, node, cleanup, nil
}

// fullTablePrefixes is fullTableLab's table as prefixes.
func fullTablePrefixes() (all []netip.Prefix, dir, node string, cleanup func(), err error) {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return nil, "", "", nil, err
	}
	all = make([]netip.Prefix, len(routes))
	for i, r := range routes {
		all[i] = r.Prefix
	}
	return all, dir, node, cleanup, nil
}

// settle is the pause after each full-table lab before the next run.
const settle = 30 * time.Second

// runImportAB times full-table loads with the lab's import rules and without,
// interleaved in alternating order, BIRD's baseline left out.
func runImportAB(runs int) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("\n%d prefixes (2026 table less the lab's), BIRD 2 upstream, %d interleaved pairs: Established to dataplane complete, peak RSS\n\n", len(routes), runs)
	fmt.Println("| pair | import rules off | import rules on | on / off |")
	fmt.Println("|---|---|---|---|")
	var off, on, ratio []float64
	for i := 0; i < runs; i++ {
		var pair [2]bench.Convergence
		// Alternate which goes first, and let the machine settle after each lab: the
		// kernel frees a torn-down namespace's million routes after it is gone, and
		// that slows the next run.
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, j := range order {
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			filter := map[int]string{0: "off", 1: ""}[j]
			if pair[j], err = bench.MeasureConvergence(context.Background(), node, rdir, routes, bench.ConvergenceOptions{ImportFilter: filter, NoBird: true}, nil); err != nil {
				return err
			}
			time.Sleep(settle)
		}
		r := pair[1].NodeFIB.Seconds() / pair[0].NodeFIB.Seconds()
		fmt.Printf("| %d | %.1f s, %s | %.1f s, %s | %.2fx |\n", i+1, pair[0].NodeFIB.Seconds(), pair[0].NodeRSS, pair[1].NodeFIB.Seconds(), pair[1].NodeRSS, r)
		off, on, ratio = append(off, pair[0].NodeFIB.Seconds()), append(on, pair[1].NodeFIB.Seconds()), append(ratio, r)
	}
	fmt.Printf("| median | %.1f s | %.1f s | %.2fx |\n", bench.Median(off), bench.Median(on), bench.Median(ratio))
	return nil
}

// runROVAB times full-table loads without route origin validation and with it
// against the real VRPs and against 500,000 synthesized from the 2026 IPv4 and IPv6
// tables, in rotating order. Invalid routes are marked, not refused, so that every
// run ends with the whole table in the FIB: the validation's cost is the same (each
// route is validated once either way), and refusing would only lighten the load.
func runROVAB(runs int) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	real, err := bench.RealVRPs()
	if err != nil {
		return err
	}
	synth, err := synthesized(routes)
	if err != nil {
		return err
	}
	sets := []struct {
		name string
		vrps []rpki.VRP
	}{{"no ROV", nil}, {fmt.Sprintf("%d real VRPs", len(real)), real}, {fmt.Sprintf("%d synthesized VRPs", len(synth)), synth}}
	fmt.Printf("\n%d prefixes (2026 table less the lab's), BIRD 2 upstream, %d rounds in rotating order: Established to dataplane complete, peak RSS, VRPs the node held when the session came up\n\n", len(routes), runs)
	fmt.Println("| round | no ROV | real VRPs | / no ROV | synthesized VRPs | / no ROV |")
	fmt.Println("|---|---|---|---|---|---|")
	secs := make([][]float64, len(sets))
	var r1, r2 []float64
	for i := 0; i < runs; i++ {
		var res [3]bench.Convergence
		for k := range sets {
			j := (i + k) % len(sets)
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			opts := bench.ConvergenceOptions{NoBird: true, VRPs: sets[j].vrps}
			if sets[j].vrps != nil {
				opts.RPKIInvalid = "mark"
			}
			if res[j], err = bench.MeasureConvergence(context.Background(), node, rdir, routes, opts, nil); err != nil {
				return fmt.Errorf("%s: %w", sets[j].name, err)
			}
			secs[j] = append(secs[j], res[j].NodeFIB.Seconds())
			time.Sleep(settle)
		}
		a, b := res[1].NodeFIB.Seconds()/res[0].NodeFIB.Seconds(), res[2].NodeFIB.Seconds()/res[0].NodeFIB.Seconds()
		r1, r2 = append(r1, a), append(r2, b)
		cell := func(c bench.Convergence) string {
			return fmt.Sprintf("%.1f s, %s, %d VRPs", c.NodeFIB.Seconds(), c.NodeRSS, c.VRPsAtEstablished)
		}
		fmt.Printf("| %d | %s | %s | %.2fx | %s | %.2fx |\n", i+1, cell(res[0]), cell(res[1]), a, cell(res[2]), b)
	}
	fmt.Printf("| median | %.1f s | %.1f s | %.2fx | %.1f s | %.2fx |\n", bench.Median(secs[0]), bench.Median(secs[1]), bench.Median(r1), bench.Median(secs[2]), bench.Median(r2))
	return nil
}

// synthesized are 500,000 VRPs from the IPv4 routes and the 2026 IPv6 table.
func synthesized(routes []table.Route) ([]rpki.VRP, error) {
	v6, err := table.Real2026v6()
	if err != nil {
		return nil, err
	}
	return bench.SynthesizeVRPs(500_000, 1, routes, v6)
}

// runROVLate times 500,000 synthesized VRPs arriving after the full table is in the
// FIB.
func runROVLate(runs int) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	synth, err := synthesized(routes)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d prefixes (2026 table less the lab's) in the FIB, all not found; then %d synthesized VRPs at the validator (rpki.invalid: reject), %d runs\n\n", len(routes), len(synth), runs)
	fmt.Println("| run | invalid routes | transfer (written to held) | re-check (held to invalid routes gone) |")
	fmt.Println("|---|---|---|---|")
	var tr, rc []float64
	for i := 0; i < runs; i++ {
		rdir, err := os.MkdirTemp(dir, "run-")
		if err != nil {
			return err
		}
		l, err := bench.MeasureLateVRPs(context.Background(), node, rdir, routes, synth)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %d | %.2f s | %.2f s |\n", i+1, l.Invalid, l.Transfer.Seconds(), l.Recheck.Seconds())
		tr, rc = append(tr, l.Transfer.Seconds()), append(rc, l.Recheck.Seconds())
		time.Sleep(settle)
	}
	fmt.Printf("| median | | %.2f s | %.2f s |\n", bench.Median(tr), bench.Median(rc))
	return nil
}

// runPolicy times a policy change on a full table reaching the dataplane.
func runPolicy(runs int) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("\n%d prefixes (2026 table less the lab's), BIRD 2 upstream, %d runs: a ConfigMap swap that refuses the upstream's whole table (deny_asns), then takes it back\n\n", len(routes), runs)
	fmt.Println("| run | refuse: FIB empty of it | accept: FIB whole again | session kept |")
	fmt.Println("|---|---|---|---|")
	var refuse, accept []float64
	for i := 0; i < runs; i++ {
		rdir, err := os.MkdirTemp(dir, "run-")
		if err != nil {
			return err
		}
		pc, err := bench.MeasurePolicyChange(context.Background(), node, rdir, routes)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.1f s | %.1f s | %v |\n", i+1, pc.Refuse.Seconds(), pc.Accept.Seconds(), pc.Kept)
		refuse, accept = append(refuse, pc.Refuse.Seconds()), append(accept, pc.Accept.Seconds())
	}
	fmt.Printf("| median | %.1f s | %.1f s | |\n", bench.Median(refuse), bench.Median(accept))
	return nil
}

func runConvergence(runs int, attrs bool, profDir, before string) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	opts := bench.ConvergenceOptions{ProfileSeconds: 40}
	what := "one AS path for all"
	if attrs {
		m, err := table.Attrs2014()
		if err != nil {
			return err
		}
		opts.Attrs, what = &m, "real AS paths and communities (table.Attrs2014)"
	}
	type build struct{ name, bin string }
	builds := []build{{"node", node}}
	if before != "" {
		builds = []build{{"before", before}, {"after", node}}
	}
	type series struct{ nodeB, nodeF, lag, nodeK, rss, heap, cpu, birdI, birdK, birdRSS, ratio []float64 }
	res := map[string]*series{}
	fmt.Printf("\n%d prefixes (2026 table less the lab's) with %s, BIRD 2 upstream, %d runs\n\n", len(routes), what, runs)
	fmt.Println("| run | build | node End-of-RIB in GoBGP | node dataplane complete | dataplane lag | node kernel sync | node peak RSS | node peak Go heap | node CPU | BIRD import | BIRD kernel | BIRD peak RSS | node dataplane / BIRD kernel |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i := 0; i < runs; i++ {
		for _, b := range builds {
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			if profDir != "" {
				opts.ProfileDir = filepath.Join(profDir, fmt.Sprintf("%s-%d", b.name, i+1))
				if err := os.MkdirAll(opts.ProfileDir, 0o755); err != nil {
					return err
				}
			}
			c, err := bench.MeasureConvergence(context.Background(), b.bin, rdir, routes, opts, nil)
			if err != nil {
				return err
			}
			rss, birdRSS := rssMB(c.NodeRSS), rssMB(c.BirdRSS)
			fmt.Printf("| %d | %s | %.1f s | %.1f s | %.3f ms | %.1f s | %.0f MB | %.0f MB | %.1f s | %.1f s | %.1f s | %.0f MB | %.2fx |\n", i+1, b.name, c.NodeBGP.Seconds(), c.NodeFIB.Seconds(), float64(c.NodeLag.Microseconds())/1000,
				c.NodeKernel.Seconds(), rss, c.NodeHeapPeak/1e6, c.NodeCPU.Seconds(), c.BirdImport.Seconds(), c.BirdKernel.Seconds(), birdRSS, c.Ratio())
			r := res[b.name]
			if r == nil {
				r = &series{}
				res[b.name] = r
			}
			r.nodeB, r.nodeF, r.lag, r.nodeK = append(r.nodeB, c.NodeBGP.Seconds()), append(r.nodeF, c.NodeFIB.Seconds()), append(r.lag, c.NodeLag.Seconds()), append(r.nodeK, c.NodeKernel.Seconds())
			r.rss, r.heap, r.cpu = append(r.rss, rss), append(r.heap, c.NodeHeapPeak/1e6), append(r.cpu, c.NodeCPU.Seconds())
			r.birdI, r.birdK, r.birdRSS, r.ratio = append(r.birdI, c.BirdImport.Seconds()), append(r.birdK, c.BirdKernel.Seconds()), append(r.birdRSS, birdRSS), append(r.ratio, c.Ratio())
		}
	}
	for _, b := range builds {
		r := res[b.name]
		m := bench.Median
		fmt.Printf("| median | %s | %.1f s | %.1f s | %.3f ms | %.1f s | %.0f MB | %.0f MB | %.1f s | %.1f s | %.1f s | %.0f MB | %.2fx |\n", b.name, m(r.nodeB), m(r.nodeF), m(r.lag)*1000, m(r.nodeK),
			m(r.rss), m(r.heap), m(r.cpu), m(r.birdI), m(r.birdK), m(r.birdRSS), m(r.ratio))
	}
	return nil
}

// rssMB reads PeakRSS's "N kB" as megabytes (0 if unknown).
func rssMB(s string) float64 {
	var kb float64
	if _, err := fmt.Sscanf(s, "%f kB", &kb); err != nil {
		return 0
	}
	return kb / 1000
}

// runCache prints the destination cache's tables (issue 5): floods, then for each
// FIB (IPv4: compiled, kernel backend, LPM trie on the whole table; IPv6: compiled
// and LPM trie on the whole IPv6 table) the cost per packet with the cache off, fixed
// at 512 entries and auto, over flows to D destinations, uniform and Zipf; with -png
// a plot per FIB (its path with the FIB's name in place of "%s").
func runCache(which string, n, runs int, png string) error {
	cfg := bench.ModeConfig{Dests: []int{1, 2, 15, 100, 500, 1000, 2000, 4000, 8000, 100_000, 1_000_000, 10_000_000},
		Zipfs: []float64{0.9, 1.2, 0}, Packets: n, Runs: runs, Intervals: 50, Fixed: 512, Min: 1 << 10, Max: 1 << 16}
	s, err := lookupSetup(which, n)
	if err != nil {
		return err
	}
	defer s.Close()
	targets := s.CacheTargets()
	kernel := targets[1]
	costs, err := cache.Calibrate(kernel.Runner, bench.Destinations(kernel.Routes, cache.CalibrationDestinations, 1), 7)
	if err != nil {
		return err
	}
	floods, err := bench.RunFlood(kernel, costs, 1<<14, 4000, n, runs, cfg.Intervals, 1.2, []float64{0, 0.5, 0.9})
	if err != nil {
		return err
	}
	fmt.Printf("\nFloods, in front of bpf_fib_lookup: legitimate flows of 8-10 packets to 4,000 destinations (Zipf s=1.2) mixed with one-packet flood packets to random destinations; "+
		"a 16k-entry cache (fixed) and auto, each from a cold start; %d packets in %d intervals, median of %d\n\n", n, cfg.Intervals, runs)
	fmt.Println("| flood share | legitimate hit rate, fixed (flood-free) | kept | without admission | ns/packet off | fixed | fixed / off | auto | auto / off | auto: legitimate hit rate, size at the end |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range floods {
		fmt.Printf("| %.0f%% | %.1f%% (%.1f%%) | %.0f%% | %.1f%% | %.1f | %.1f | %.2fx | %.1f | %.2fx | %.1f%%, %s |\n", 100*r.Flood, 100*r.LegitHit, 100*r.NoFlood, 100*r.LegitHit/r.NoFlood,
			100*r.LegitHitNoAdmit, r.Off, r.Fixed, r.Fixed/r.Off, r.Auto, r.Auto/r.Off, 100*r.AutoLegitHit, size(r.AutoEntries))
	}
	if err := cacheTables(targets, cfg, png); err != nil {
		return err
	}
	s.Close()

	routes6, err := table.Real2026v6()
	if err != nil {
		return err
	}
	slog.Info("loading the IPv6 table", "routes", len(routes6))
	s6, err := bench.NewLookupSetup6(routes6, n, bench.V6Layouts[0])
	if err != nil {
		return err
	}
	defer s6.Close()
	return cacheTables(s6.CacheTargets(), cfg, png)
}

// cacheTables calibrates each target's cost model, measures the modes and prints a
// table per target (and plots it).
func cacheTables(targets []bench.CacheTarget, cfg bench.ModeConfig, png string) error {
	for _, t := range targets {
		costs, err := cache.Calibrate(t.Runner, bench.Destinations(t.Routes, cache.CalibrationDestinations, 1), 7)
		if err != nil {
			return err
		}
		rows, err := bench.RunModes(t, costs, cfg)
		if err != nil {
			return err
		}
		var curve []string
		for _, p := range costs.Curve {
			curve = append(curve, fmt.Sprintf("%.0f destinations: lookup %.1f, hit %.1f, miss +%.1f", p.WorkingSet, p.FIB, p.Hit, p.Miss))
		}
		fmt.Printf("\n%s, %d prefixes: flows of 8-10 packets (16 interleaved) to D destinations, %d packets per run in %d intervals (the sizer ticks between), "+
			"median of %d interleaved runs, each from a cold cache; ns per packet (loop included) and the median of each run's ratio to off. "+
			"Calibrated (ns): %s.\n\n",
			t.Name, len(t.Routes), cfg.Packets, cfg.Intervals, cfg.Runs, strings.Join(curve, "; "))
		fmt.Println("| traffic | D | distinct in trace | off | fixed 512 | hit | auto | hit | auto's size at the end |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Printf("| %s | %d | %d | %.1f | %.1f (%.2fx) | %.0f%% | %.1f (%.2fx) | %.0f%% | %s |\n", dist(r.Zipf), r.Dests, r.Distinct, r.Off,
				r.Fixed, r.FixedRatio, 100*r.FixedHit, r.Auto, r.AutoRatio, 100*r.AutoHit, size(r.AutoEntries))
		}
		if png != "" {
			if err := plotModes(rows, fmt.Sprintf(png, strings.ReplaceAll(strings.ToLower(t.Name), " ", "-")), t.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func dist(z float64) string {
	if z == 0 {
		return "uniform"
	}
	return fmt.Sprintf("Zipf %.1f", z)
}

func size(n int) string {
	if n == 0 {
		return "off"
	}
	return fmt.Sprint(n)
}

// plotModes draws cost relative to off against D (log scale) for fixed and auto, one
// line per traffic distribution.
func plotModes(rows []bench.ModeRow, path, title string) error {
	p := plot.New()
	p.Title.Text = title + ": cost per packet relative to the cache off"
	p.X.Label.Text = "destinations D (flows of 8-10 packets)"
	p.Y.Label.Text = "ns per packet / off"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	colors := map[float64]color.Color{0.9: blue, 1.2: green, 0: red}
	for _, z := range []float64{0.9, 1.2, 0} {
		for _, mode := range []string{"fixed 512", "auto"} {
			var xy plotter.XYs
			for _, r := range rows {
				if r.Zipf == z {
					y := r.AutoRatio
					if mode == "fixed 512" {
						y = r.FixedRatio
					}
					xy = append(xy, plotter.XY{X: float64(r.Dests), Y: y})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = colors[z]
			l.Width = vg.Points(1.5)
			if mode == "fixed 512" {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			p.Legend.Add(mode+", "+dist(z), l)
		}
	}
	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}, {X: 1e7, Y: 1}})
	if err != nil {
		return err
	}
	one.Color = grey
	p.Add(one)
	p.Legend.Top = true
	p.Legend.Left = true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// runFlush measures flush propagation for fleets of 3 and 20 in-process nodes against
// a 3-member etcd of real processes (the etcd server module's binary).
func runFlush(flushes int) error {
	dir, err := os.MkdirTemp("", "fibbench-etcd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := dir + "/etcd"
	if err := goBuild(bin, "go.etcd.io/etcd/server/v3"); err != nil {
		return err
	}
	etcd, err := lab.StartEtcdCluster(bin, dir, 3)
	if err != nil {
		return err
	}
	defer etcd.Close()
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("\nFlush propagation: %d flushes one after the other, 3-member etcd (processes, loopback), in-process nodes each with its own etcd client, gossip member and BPF epoch map\n\n", flushes)
	fmt.Println("| nodes | applied p50 | applied p99 | applied max | acknowledged p50 | acknowledged p99 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, n := range []int{3, 20} {
		res, err := bench.MeasureFlush(context.Background(), etcd.Endpoints, n, flushes)
		if err != nil {
			return err
		}
		a, k := res.Applied, res.Acked
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", n, ms(bench.Percentile(a, 50)), ms(bench.Percentile(a, 99)), ms(bench.Percentile(a, 100)),
			ms(bench.Percentile(k, 50)), ms(bench.Percentile(k, 99)))
	}
	fmt.Println("\napplied: from the flush call (etcd read + compare-and-swap) until the last node wrote the epoch to its BPF map; acknowledged: until the last node's report was read back from etcd (ctl cache flush --wait)")
	return nil
}

// runDetect measures how long 3 gossip members take to mark a crashed one dead, with
// each profile.
func runDetect(crashes int) error {
	fmt.Printf("\nFailure detection: 3 gossip members on loopback, one crashed (no leave), %d times per profile; time until both others mark it dead\n\n", crashes)
	fmt.Println("| profile | p50 | max | min |")
	fmt.Println("|---|---|---|---|")
	for _, p := range []string{cluster.ProfileLAN, cluster.ProfileTuned} {
		ds, err := bench.MeasureDetection(p, 3, crashes)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %.2f s | %.2f s | %.2f s |\n", p, bench.Percentile(ds, 50).Seconds(), bench.Percentile(ds, 100).Seconds(), bench.Percentile(ds, 0).Seconds())
	}
	return nil
}

func goBuild(out, pkg string) error {
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (run from the repository root): %w\n%s", pkg, err, b)
	}
	return nil
}

// runKill kills a real node of a three-node fleet again and again.
func runKill(kills int) error {
	dir, err := os.MkdirTemp("", "fibbench-kill-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	node, etcd := dir+"/fibfleet-node", dir+"/etcd"
	if err := goBuild(node, "./cmd/node"); err != nil {
		return err
	}
	if err := goBuild(etcd, "go.etcd.io/etcd/server/v3"); err != nil {
		return err
	}
	res, err := bench.MeasureKill(node, etcd, dir, kills)
	if err != nil {
		return err
	}
	fmt.Printf("\nA real node SIGKILLed %d times in a fleet of three (tuned gossip); the slower of the other two, polled every 10 ms through their API\n\n", kills)
	fmt.Println("| | p50 | max | min |")
	fmt.Println("|---|---|---|---|")
	for _, r := range []struct {
		what string
		ds   []time.Duration
	}{{"marked dead", res.Dead}, {"iBGP session removed", res.Unpeered}} {
		fmt.Printf("| %s | %.2f s | %.2f s | %.2f s |\n", r.what, bench.Percentile(r.ds, 50).Seconds(), bench.Percentile(r.ds, 100).Seconds(), bench.Percentile(r.ds, 0).Seconds())
	}
	return nil
}

// runBFDLoad counts BFD's false failures while the node loads two full tables at
// once, by interval.
func runBFDLoad(runs int) error {
	all, dir, node, cleanup, err := fullTablePrefixes()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("\nTwo upstreams announce the whole table (%d prefixes) at once; BFD on both sessions (BIRD and the node) at each interval x 3; flaps during the load and 30 s after, %d loads each\n\n", len(all), runs)
	fmt.Println("| BFD interval | detection time | loads | loads with a flap | flaps in all | load time (median) | node's peak RSS (max) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, iv := range []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond} {
		var loads []float64
		flapped, flaps := 0, 0
		var rss int64
		for range runs {
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			r, err := bench.MeasureBFDLoad(bench.BFDLoadOptions{NodeBinary: node, Dir: rdir, Prefixes: all, Interval: iv, After: 30 * time.Second,
				Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
			if err != nil {
				return err
			}
			loads = append(loads, r.Load.Seconds())
			flaps += r.Flaps
			if r.Flaps > 0 {
				flapped++
			}
			rss = max(rss, r.PeakRSS)
			time.Sleep(5 * time.Second)
		}
		fmt.Printf("| %v | %v | %d | %d | %d | %.1f s | %d MB |\n", iv, 3*iv, runs, flapped, flaps, bench.Median(loads), rss>>20)
	}
	return nil
}

// runRestart restarts the router with the whole table in place, each kind of restart
// in a lab of its own: datagrams lost, the longest gap, the time from the new
// process's start to the full table again, its peak RSS.
func runRestart(tries int) error {
	all, dir, node, cleanup, err := fullTablePrefixes()
	if err != nil {
		return err
	}
	defer cleanup()
	variant := dir + "/fibfleet-node-variant"
	if out, err := exec.Command("go", "build", "-tags", "fibfleet_variant", "-o", variant, "./cmd/node").CombinedOutput(); err != nil {
		return fmt.Errorf("go build -tags fibfleet_variant ./cmd/node: %w\n%s", err, out)
	}
	fmt.Printf("\nTwo upstreams announce the same %d prefixes (A's paths better); 64 flows at 6,400 datagrams/s through A; the router restarted %d times each way\n\n", len(all), tries)
	fmt.Println("| router | restart | datagrams lost (total of all tries) | of them dropped by the sinks' sockets | longest gap (max) | start to full table again (median, max) | new process's peak RSS (max) | first start to full table; its peak RSS | pinned maps, one generation |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range []struct{ router, kind string }{{"node", "sigterm"}, {"node", "sigkill"}, {"node", "upgrade"}, {"bird", "sigterm"}} {
		rdir, err := os.MkdirTemp(dir, "run-")
		if err != nil {
			return err
		}
		r, err := bench.MeasureRestart(bench.RestartOptions{NodeBinary: node, VariantBinary: variant, Dir: rdir, Prefixes: all, Router: c.router, Kind: c.kind,
			Tries: tries, Flows: 64, Rate: 6400, Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
		if err != nil {
			return err
		}
		lost, sent, drops := 0, 0, 0
		var full []float64
		var gap time.Duration
		var rss int64
		for _, t := range r.Tries {
			lost, sent, drops, gap, rss = lost+t.Lost, sent+t.Sent, drops+t.SinkDrops, max(gap, t.Gap), max(rss, t.PeakRSS)
			full = append(full, t.Full.Seconds())
		}
		maps := "-"
		if r.MapBytes > 0 {
			maps = fmt.Sprintf("%d MB", r.MapBytes>>20)
		}
		fmt.Printf("| %s | %s | %d of %d | %d | %v | %.1f s, %.1f s | %d MB | %.1f s; %d MB | %s |\n", map[string]string{"node": "fibfleet", "bird": "BIRD 2 + kernel (persist)"}[c.router], c.kind,
			lost, sent, drops, gap.Round(time.Millisecond), bench.Median(full), slices.Max(full), rss>>20, r.First.Seconds(), r.FirstRSS>>20, maps)
		time.Sleep(settle)
	}
	return nil
}

// attrsModel is the real attributes' model when attrs, else nil.
func attrsModel(attrs bool) (*table.Model, error) {
	if !attrs {
		return nil, nil
	}
	m, err := table.Attrs2014()
	return &m, err
}

// runUpstreams loads the table from each count of full-table upstreams into the
// node, BIRD 2 and FRR 8.4 (the kernel forwarding for both), every round running
// each once in a rotating order, and prints the medians; fibfleetOnly leaves BIRD
// and FRR out (a before/after of a change to the node).
func runUpstreams(runs, n int, countList string, attrs bool, profDir, before string, fibfleetOnly bool) error {
	var counts []int
	for _, f := range strings.Split(countList, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > 4 {
			return fmt.Errorf("-upstreams-counts %q: give numbers from 1 to 4, comma-separated", countList)
		}
		counts = append(counts, c)
	}
	all, dir, node, cleanup, err := fullTablePrefixes()
	if err != nil {
		return err
	}
	defer cleanup()
	if n > 0 && n < len(all) {
		all = all[:n]
	}
	model, err := attrsModel(attrs)
	if err != nil {
		return err
	}
	type key struct {
		router    string
		upstreams int
	}
	routers := []string{"node", "bird", "frr"}
	if fibfleetOnly {
		routers = routers[:1]
	}
	// Builds before a change (comma-separated), in the same rounds: the before/after
	// figures, each named by its file.
	builds := map[string]string{}
	if before != "" {
		var named []string
		for _, b := range strings.Split(before, ",") {
			name := "before " + filepath.Base(b)
			builds[name] = b
			named = append(named, name)
		}
		routers = append(named, routers...)
	}
	var keys []key
	for _, u := range counts {
		for _, r := range routers {
			keys = append(keys, key{r, u})
		}
	}
	loads, rss, cpu := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	for i := range runs {
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			o := bench.UpstreamsLoadOptions{NodeBinary: node, Dir: rdir, Prefixes: all, Attrs: model, Router: k.router, Upstreams: k.upstreams}
			if b, ok := builds[k.router]; ok {
				o.NodeBinary, o.Router = b, "node"
			}
			if profDir != "" && (k.router == "node" || builds[k.router] != "") {
				o.ProfileDir = filepath.Join(profDir, fmt.Sprintf("round%d-%dup-%s", i+1, k.upstreams, strings.ReplaceAll(k.router, " ", "-")))
				if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
					return err
				}
			}
			r, err := bench.MeasureUpstreamsLoad(o)
			if err != nil {
				return fmt.Errorf("%s, %d upstreams: %w", k.router, k.upstreams, err)
			}
			fmt.Fprintf(os.Stderr, "round %d: %s, %d upstreams: loaded in %v, peak RSS %d MB, %.1f CPU-s\n", i+1, k.router, k.upstreams, r.Load.Round(100*time.Millisecond), r.PeakRSS>>20, r.CPU.Seconds())
			loads[k] = append(loads[k], r.Load.Seconds())
			rss[k] = append(rss[k], float64(r.PeakRSS>>20))
			cpu[k] = append(cpu[k], r.CPU.Seconds())
			if len(all) > 100_000 {
				time.Sleep(settle)
			}
		}
	}
	fmt.Printf("\n%d prefixes (2026 table less the lab's), real attributes: %v; A's paths the better (B's, C's and D's two ASes longer); medians of %d rounds\n\n", len(all), attrs, runs)
	fmt.Println("| upstreams | router | Established to forwarding table complete | / BIRD | peak RSS | CPU-seconds |")
	fmt.Println("|---|---|---|---|---|---|")
	name := map[string]string{"node": "fibfleet", "bird": "BIRD 2 + kernel", "frr": "FRR 8.4 + kernel"}
	for b := range builds {
		name[b] = "fibfleet " + b
	}
	for _, k := range keys {
		ratio := "-"
		if b := loads[key{"bird", k.upstreams}]; len(b) > 0 {
			ratio = fmt.Sprintf("%.2fx", bench.Median(loads[k])/bench.Median(b))
		}
		fmt.Printf("| %d | %s | %.1f s | %s | %.0f MB | %.1f |\n", k.upstreams, name[k.router], bench.Median(loads[k]),
			ratio, bench.Median(rss[k]), bench.Median(cpu[k]))
	}
	return nil
}

// runMesh loads the table from one upstream into a router that sends it to two
// iBGP peers: fibfleet's fleet of three (n1 the router, n2 and n3 its mesh peers)
// against BIRD 2 and FRR 8.4 (into the kernel) with two BIRDs as iBGP peers, every
// round running each once in a rotating order, and prints the medians.
// With before (a node binary built before a change), its fleet runs in every round
// too. The node alone (the same upstream, no mesh: what a mesh peer costs n1 is
// counted over it) runs in every round unless hogs busy loops run beside the fleets
// (the lone node would run without them); fleetsOnly leaves BIRD and FRR out.
func runMesh(runs, n int, attrs bool, profDir, before string, fleetsOnly bool, hogs int) error {
	routes, dir, node, cleanup, err := fullTableLab()
	if err != nil {
		return err
	}
	defer cleanup()
	if n > 0 && n < len(routes) {
		routes = routes[:n]
	}
	all := make([]netip.Prefix, len(routes))
	for i, r := range routes {
		all[i] = r.Prefix
	}
	model, err := attrsModel(attrs)
	if err != nil {
		return err
	}
	etcd := dir + "/etcd"
	if err := goBuild(etcd, "go.etcd.io/etcd/server/v3"); err != nil {
		return err
	}
	routers := []string{"fleet"}
	binaries := map[string]string{"fleet": node}
	if before != "" {
		routers = append(routers, "fleet-before")
		binaries["fleet-before"] = before
	}
	// "alone": the node with the same upstream and no mesh, the reference for what
	// a mesh peer costs n1.
	if hogs == 0 {
		routers = append(routers, "alone")
	}
	if !fleetsOnly {
		routers = append(routers, "bird", "frr")
	}
	type figures struct {
		own, all, rss, cpu []float64
		// the fleet's nodes
		nodeRSS, nodeCPU [3][]float64
		// sessions down (all nodes' logs) in each round; alarms, resends and losses
		// over the rounds
		resets                []int
		alarms, resends, lost int
	}
	got := map[string]*figures{}
	for _, r := range routers {
		got[r] = &figures{}
	}
	for i := range runs {
		for j := range routers {
			router := routers[(i+j)%len(routers)]
			rdir, err := os.MkdirTemp(dir, "run-")
			if err != nil {
				return err
			}
			f := got[router]
			if bin, ok := binaries[router]; ok {
				o := bench.FleetLoadOptions{NodeBinary: bin, EtcdBinary: etcd, Dir: rdir, Routes: routes, Attrs: model, Hogs: hogs}
				if profDir != "" {
					o.ProfileDir = filepath.Join(profDir, fmt.Sprintf("round%d", i+1), router)
					if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
						return err
					}
				}
				r, err := bench.MeasureFleetLoad(o)
				if err != nil {
					return fmt.Errorf("the fleet: %w", err)
				}
				last := slices.Max(r.Loaded)
				fmt.Fprintf(os.Stderr, "round %d: %s: loaded in %v/%v/%v, peak RSS %d/%d/%d MB, CPU %.1f/%.1f/%.1f s, FIB batches %.0f/%.0f/%.0f\n", i+1, router,
					r.Loaded[0].Round(100*time.Millisecond), r.Loaded[1].Round(100*time.Millisecond), r.Loaded[2].Round(100*time.Millisecond),
					r.PeakRSS[0]>>20, r.PeakRSS[1]>>20, r.PeakRSS[2]>>20, r.CPU[0].Seconds(), r.CPU[1].Seconds(), r.CPU[2].Seconds(),
					r.Batches[0], r.Batches[1], r.Batches[2])
				fmt.Fprintf(os.Stderr, "round %d: %s: %d busy loops; sessions down (logged, each end) %d/%d/%d, most mesh peers in alarm %d, resends %d, routes lost logged %d\n", i+1, router,
					hogs, r.Resets[0], r.Resets[1], r.Resets[2], r.Alarms, r.Resends, r.Lost)
				f.resets = append(f.resets, r.Resets[0]+r.Resets[1]+r.Resets[2])
				f.alarms, f.resends, f.lost = f.alarms+r.Alarms, f.resends+r.Resends, f.lost+r.Lost
				f.own, f.all = append(f.own, r.Loaded[0].Seconds()), append(f.all, last.Seconds())
				f.rss, f.cpu = append(f.rss, float64(r.PeakRSS[0]>>20)), append(f.cpu, r.CPU[0].Seconds())
				for k := range 3 {
					f.nodeRSS[k] = append(f.nodeRSS[k], float64(r.PeakRSS[k]>>20))
					f.nodeCPU[k] = append(f.nodeCPU[k], r.CPU[k].Seconds())
				}
			} else if router == "alone" {
				r, err := bench.MeasureUpstreamsLoad(bench.UpstreamsLoadOptions{NodeBinary: node, Dir: rdir, Prefixes: all, Attrs: model, Router: "node", Upstreams: 1})
				if err != nil {
					return fmt.Errorf("the node alone: %w", err)
				}
				fmt.Fprintf(os.Stderr, "round %d: the node alone (one upstream, no mesh): loaded in %v, peak RSS %d MB, %.1f CPU-s\n", i+1, r.Load.Round(100*time.Millisecond), r.PeakRSS>>20, r.CPU.Seconds())
				f.all, f.rss, f.cpu = append(f.all, r.Load.Seconds()), append(f.rss, float64(r.PeakRSS>>20)), append(f.cpu, r.CPU.Seconds())
			} else {
				r, err := bench.MeasureUpstreamsLoad(bench.UpstreamsLoadOptions{NodeBinary: node, Dir: rdir, Prefixes: all, Attrs: model, Router: router, Upstreams: 1, IBGP: 2})
				if err != nil {
					return fmt.Errorf("%s with two iBGP peers: %w", router, err)
				}
				fmt.Fprintf(os.Stderr, "round %d: %s: loaded (and both iBGP peers) in %v, peak RSS %d MB, %.1f CPU-s\n", i+1, router, r.Load.Round(100*time.Millisecond), r.PeakRSS>>20, r.CPU.Seconds())
				f.all, f.rss, f.cpu = append(f.all, r.Load.Seconds()), append(f.rss, float64(r.PeakRSS>>20)), append(f.cpu, r.CPU.Seconds())
			}
			if len(all) > 100_000 {
				time.Sleep(settle)
			}
		}
	}
	fmt.Printf("\n%d prefixes (2026 table less the lab's), real attributes: %v; one upstream, two iBGP peers; medians of %d rounds\n\n", len(all), attrs, runs)
	fmt.Println("| router | to its own forwarding table complete | to both peers holding it too | / BIRD | peak RSS | CPU-seconds |")
	fmt.Println("|---|---|---|---|---|---|")
	fleets := []string{"fleet"}
	if before != "" {
		fleets = append(fleets, "fleet-before")
	}
	name := map[string]string{"fleet": "fibfleet (n1 of a fleet of three)", "fleet-before": "fibfleet before (n1)"}
	// perBird is a time against BIRD 2's, "-" when BIRD did not run (-fleets-only).
	perBird := func(s float64) string {
		if got["bird"] == nil {
			return "-"
		}
		return fmt.Sprintf("%.2fx", s/bench.Median(got["bird"].all))
	}
	for _, r := range fleets {
		f := got[r]
		fmt.Printf("| %s | %.1f s | %.1f s | %s | %.0f MB | %.1f |\n", name[r], bench.Median(f.own), bench.Median(f.all),
			perBird(bench.Median(f.all)), bench.Median(f.rss), bench.Median(f.cpu))
	}
	for _, r := range []string{"bird", "frr"} {
		f := got[r]
		if f == nil {
			continue
		}
		fmt.Printf("| %s | | %.1f s | %s | %.0f MB | %.1f |\n", map[string]string{"bird": "BIRD 2 + kernel", "frr": "FRR 8.4 + kernel"}[r],
			bench.Median(f.all), perBird(bench.Median(f.all)), bench.Median(f.rss), bench.Median(f.cpu))
	}
	if hogs > 0 {
		fmt.Printf("\nBeside %d busy loops: sessions down in each round (both ends logged), mesh peers in alarm, resends and routes lost over all rounds\n\n", hogs)
		fmt.Println("| build | sessions down, by round | rounds without one | alarms | resends | routes lost |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, r := range fleets {
			f := got[r]
			clean := 0
			for _, n := range f.resets {
				if n == 0 {
					clean++
				}
			}
			fmt.Printf("| %s | %v | %d of %d | %d | %d | %d |\n", map[string]string{"fleet": "this", "fleet-before": "before"}[r], f.resets, clean, len(f.resets), f.alarms, f.resends, f.lost)
		}
	}
	if alone := got["alone"]; alone != nil {
		fmt.Printf("\nThe node alone (this build, the same upstream, no mesh): %.1f s, peak RSS %.0f MB, %.1f CPU-s; n1 costs over it, a mesh peer:", bench.Median(alone.all), bench.Median(alone.rss), bench.Median(alone.cpu))
		for _, r := range fleets {
			fmt.Printf(" %s +%.0f MB, +%.1f CPU-s;", map[string]string{"fleet": "this", "fleet-before": "before (over this build's lone node)"}[r],
				(bench.Median(got[r].rss)-bench.Median(alone.rss))/2, (bench.Median(got[r].cpu)-bench.Median(alone.cpu))/2)
		}
		fmt.Println()
	}
	fmt.Println("\nThe fleet's nodes (CPU during the load; the node's peak RSS since its start):")
	fmt.Println("\n| build | node | peak RSS | CPU-seconds |")
	fmt.Println("|---|---|---|---|")
	for _, r := range fleets {
		for k := range 3 {
			fmt.Printf("| %s | n%d | %.0f MB | %.1f |\n", map[string]string{"fleet": "this", "fleet-before": "before"}[r], k+1,
				bench.Median(got[r].nodeRSS[k]), bench.Median(got[r].nodeCPU[k]))
		}
	}
	return nil
}

// runFailover times an upstream's failure at three table sizes: the longest any flow
// went without a datagram, the node (backup next hops: one write per group) against
// BIRD 2 and FRR 8.4 rewriting the kernel's routes.
func runFailover(runs int) error {
	all, dir, node, cleanup, err := fullTablePrefixes()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("\nTwo upstreams announce the same prefixes (A's paths better); 64 flows at 6,400 datagrams/s (one each 10 ms) through A; A fails. Longest outage of any flow, median of %d (max), and datagrams lost\n\n", runs)
	fmt.Println("| prefixes | router | A fails by | outage median | outage max | lost (median) | start to every flow through A (median) | router's peak RSS (max) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, n := range []int{10_000, 100_000, len(all)} {
		for _, c := range []struct{ router, cause string }{{"node", "link"}, {"bird", "link"}, {"frr", "link"}, {"node", "silent"}, {"bird", "silent"}, {"frr", "silent"}} {
			var outs, lost, loads []float64
			var rss int64
			for range runs {
				rdir, err := os.MkdirTemp(dir, "run-")
				if err != nil {
					return err
				}
				r, err := bench.MeasureFailover(bench.FailoverOptions{NodeBinary: node, Dir: rdir, Prefixes: all[:n], Router: c.router, Cause: c.cause,
					Flows: 64, Rate: 6400, Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
				if err != nil {
					return err
				}
				outs = append(outs, float64(r.Outage)/float64(time.Millisecond))
				lost = append(lost, float64(r.Lost))
				loads = append(loads, r.Load.Seconds())
				rss = max(rss, r.PeakRSS)
				time.Sleep(5 * time.Second)
			}
			fmt.Printf("| %d | %s | %s | %.0f ms | %.0f ms | %.0f | %.1f s | %d MB |\n", n, map[string]string{"node": "fibfleet", "bird": "BIRD 2 + kernel", "frr": "FRR 8.4 + kernel"}[c.router], c.cause,
				bench.Median(outs), slices.Max(outs), bench.Median(lost), bench.Median(loads), rss>>20)
		}
	}
	return nil
}
