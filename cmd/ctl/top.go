package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// topRow is one node's rates over the last interval, per second.
type topRow struct {
	Time      time.Time `json:"time"`
	Node      string    `json:"node"`
	Error     string    `json:"error,omitempty"`
	PPS       float64   `json:"pps"`
	Forwarded float64   `json:"forwarded"`
	Passed    float64   `json:"passed"`
	Hits      float64   `json:"hits"`
	Misses    float64   `json:"misses"`
	Stale     float64   `json:"stale"`
	Refused   float64   `json:"refused"`
	Evictions float64   `json:"evictions"`
	HitRate   float64   `json:"hit_rate"`
	// TxDropped are frames the egress drivers did not take of those counted as
	// forwarded: forwarded is not sent.
	TxDropped float64 `json:"tx_dropped"`
}

type topSample struct {
	at time.Time
	st nodeapi.Status
}

func newTop(g *globals) *cobra.Command {
	var interval time.Duration
	var count int
	cmd := &cobra.Command{
		Use:   "top",
		Short: "A live view of every node: packets, forwarded, dropped by the egress drivers, cache hits, misses, stale, refused, evictions per second",
		Long: `top shows, every interval and for every registered node, what its dataplane did per
second: packets, forwarded, frames forwarded that the egress drivers did not take (TXDROP:
the kernel freed them), passed to the kernel, and its destination cache's hits,
misses, stale entries met, admissions refused and evictions (both families), in the
spirit of rtstat and lnstat. In a terminal it redraws in place and q quits; in a pipe it
prints a frame per interval (with -o json, one JSON line per node and interval).
--timeout bounds each round of requests, not the view.`,
		Example: "  ctl top\n  ctl top --interval 2s --count 10 -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond {
				return usagef("--interval %s: use at least 100ms", interval)
			}
			if count < 0 {
				return usagef("--count %d: use 0 (until q or Ctrl-C) or more", count)
			}
			return runTop(cmd.Context(), g, interval, count)
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between two frames")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many frames (0: until q or Ctrl-C)")
	return cmd
}

func runTop(ctx context.Context, g *globals, interval time.Duration, count int) error {
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	s, cli, err := g.store(cctx)
	cancel()
	if err != nil {
		return err
	}
	defer cli.Close()
	a, err := g.api()
	if err != nil {
		return err
	}
	out, isFile := g.out.(*os.File)
	tty := isFile && term.IsTerminal(int(out.Fd())) && g.output == "table"
	quit := make(chan struct{})
	if in, ok := g.in.(*os.File); ok && tty && term.IsTerminal(int(in.Fd())) {
		// Raw mode, so q arrives without Enter; restored on the way out.
		if old, err := term.MakeRaw(int(in.Fd())); err == nil {
			defer func() { _ = term.Restore(int(in.Fd()), old) }()
			go func() {
				b := make([]byte, 1)
				for {
					if n, err := in.Read(b); err != nil || n == 1 && (b[0] == 'q' || b[0] == 3) {
						close(quit)
						return
					}
				}
			}()
		}
	}
	prev := map[string]topSample{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for frame := 0; ; {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		nodes, err := s.Nodes(rctx)
		if err != nil {
			cancel()
			return err
		}
		now := time.Now()
		samples := make([]*nodeapi.Status, len(nodes))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var st nodeapi.Status
				if errs[i] = a.get(rctx, n.APIAddress, "/api/v1/status", &st); errs[i] == nil {
					samples[i] = &st
				}
			}()
		}
		wg.Wait()
		cancel()
		var rows []topRow
		for i, n := range nodes {
			r := topRow{Time: now, Node: n.Name}
			if errs[i] != nil {
				r.Error = errs[i].Error()
				rows = append(rows, r)
				continue
			}
			if p, ok := prev[n.Name]; ok {
				r.rates(p, topSample{at: now, st: *samples[i]})
			}
			prev[n.Name] = topSample{at: now, st: *samples[i]}
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(a, b topRow) int { return compare(a.Node, b.Node) })
		if frame > 0 { // rates need two samples
			if err := drawTop(g, rows, tty, interval); err != nil {
				return err
			}
		}
		frame++
		if count > 0 && frame > count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-quit:
			return nil
		case <-tick.C:
		}
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rates fills the row from two samples of a node's totals.
func (r *topRow) rates(a, b topSample) {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return
	}
	per := func(x, y uint64) float64 {
		if y < x { // the node restarted: its counters too
			return 0
		}
		return float64(y-x) / dt
	}
	pa, pb := a.st.Packets, b.st.Packets
	r.PPS = per(pa.Forwarded+pa.Passed+pa.Dropped, pb.Forwarded+pb.Passed+pb.Dropped)
	r.Forwarded, r.Passed = per(pa.Forwarded, pb.Forwarded), per(pa.Passed, pb.Passed)
	r.TxDropped = per(a.st.TxDropped(), b.st.TxDropped())
	sum := func(st nodeapi.Status, f func(nodeapi.CacheFamily) uint64) uint64 {
		var t uint64
		for _, c := range st.Cache {
			t += f(c)
		}
		return t
	}
	for _, x := range []struct {
		dst *float64
		f   func(nodeapi.CacheFamily) uint64
	}{
		{&r.Hits, func(c nodeapi.CacheFamily) uint64 { return c.Hits }}, {&r.Misses, func(c nodeapi.CacheFamily) uint64 { return c.Misses }},
		{&r.Stale, func(c nodeapi.CacheFamily) uint64 { return c.Stale }}, {&r.Refused, func(c nodeapi.CacheFamily) uint64 { return c.Refused }},
		{&r.Evictions, func(c nodeapi.CacheFamily) uint64 { return c.Evictions }},
	} {
		*x.dst = per(sum(a.st, x.f), sum(b.st, x.f))
	}
	if n := r.Hits + r.Misses + r.Stale; n > 0 {
		r.HitRate = r.Hits / n
	}
}

func drawTop(g *globals, rows []topRow, tty bool, interval time.Duration) error {
	if g.output == "json" {
		enc := json.NewEncoder(g.out)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if g.output == "yaml" {
		return g.render(rows, nil)
	}
	var w io.Writer = g.out
	// In raw mode a newline does not return the carriage.
	eol := "\n"
	if tty {
		eol = "\r\n"
		fmt.Fprint(w, "\x1b[H\x1b[2J") // home, clear
	}
	fmt.Fprintf(w, "fibfleet top  %s  every %s  (per second; q quits)%s", time.Now().Format("15:04:05"), interval, eol)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "NODE\tPKT/s\tFWD/s\tTXDROP/s\tPASS/s\tHIT/s\tMISS/s\tSTALE/s\tREFUSED/s\tEVICT/s\tHIT%\t"+eol)
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t(unreachable)\t\t\t\t\t\t\t\t\t\t%s", r.Node, eol)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%s", r.Node, r.PPS, r.Forwarded, r.TxDropped, r.Passed, r.Hits, r.Misses, r.Stale, r.Refused, r.Evictions, 100*r.HitRate, eol)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !tty {
		fmt.Fprint(w, eol)
	}
	return nil
}
