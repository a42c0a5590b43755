// Command ctl tunes and watches a fibfleet fleet from one place: the fleet's state
// (status, top), its destination cache policy and flushes (cache), where a destination
// goes on every node (lookup). It talks to the fleet's etcd and to the nodes' APIs; it
// never touches a node's BPF maps. (A whole fleet on one machine is cmd/lab's.)
//
// Exit status: 0 done, 1 the command failed (etcd unreachable, a node did not apply a
// flush in time, ...), 2 the command line is wrong (nothing was changed).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() { os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a wrong command line: exit 2, and nothing was done.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// execute runs ctl with args and returns the exit status.
func execute(args []string, in io.Reader, out, errOut io.Writer) int {
	root := newRoot(&globals{out: out, errOut: errOut, in: in})
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(errOut, "ctl:", err)
	var u usageError
	// cobra's own complaints about the command line (unknown commands and flags,
	// argument counts) are usage errors too.
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.HasPrefix(err.Error(), "unknown shorthand flag") || strings.Contains(err.Error(), "arg(s), received") {
		fmt.Fprintln(errOut, "ctl: nothing was changed; see 'ctl --help' or 'ctl <command> --help'")
		return exitUsage
	}
	return exitFailed
}
