// Command lab builds a whole fibfleet fleet on one machine, in network namespaces, and
// removes it: `sudo make lab` runs `lab up`. It is study and demonstration code, kept
// out of the product's binaries (node, ctl) and so out of the image, with the real
// tables it bundles.
//
// Exit status: 0 done, 1 the command failed, 2 the command line is wrong (nothing was
// done).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func main() {
	g := &globals{out: os.Stdout, errOut: os.Stderr}
	root := newRoot(g)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "lab:", err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}

// globals are the output settings every command shares.
type globals struct {
	output      string
	out, errOut io.Writer
}

// usageError is a wrong command line: exit 2, and nothing was done.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// render prints v as JSON, or calls table with a tab writer.
func (g *globals) render(v any, table func(w io.Writer)) error {
	if g.output == "json" {
		enc := json.NewEncoder(g.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(g.out, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}
