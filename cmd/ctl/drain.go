package main

import (
	"fmt"
	"io"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/spf13/cobra"
)

// drainResult is `ctl drain`'s and `ctl undrain`'s document.
type drainResult struct {
	Node    string `json:"node"`
	Drained bool   `json:"drained"`
	// Applied says the node reported it applied within --timeout.
	Applied    bool    `json:"applied"`
	AfterMilli float64 `json:"after_ms,omitempty"`
}

func newDrain(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "drain NODE",
		Short: "Take a node out of service before maintenance (GRACEFUL_SHUTDOWN), without a session going down",
		Long: `drain writes the node's drain key in etcd; the node then announces every route it
sends with the GRACEFUL_SHUTDOWN community (RFC 8326), to its upstreams and to the fleet's
mesh, and with local preference 1 (the lowest GoBGP sets) to the mesh, so that its upstreams and the other nodes
move traffic away from it while every session stays up. The node stays drained across
restarts until ctl undrain. ctl waits (within --timeout) until the node reports it
applied (exit status 1 if not).`,
		Example: "  ctl drain edge1 --reason 'line card swap'\n  ctl undrain edge1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setDrain(cmd, g, args[0], true, reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept beside the drain in etcd")
	return cmd
}

func newUndrain(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "undrain NODE",
		Short:   "Put a drained node back in service",
		Long:    `undrain removes the node's drain key: it announces its routes as before. ctl waits (within --timeout) until the node reports it applied.`,
		Example: "  ctl undrain edge1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setDrain(cmd, g, args[0], false, "")
		},
	}
}

func setDrain(cmd *cobra.Command, g *globals, node string, drained bool, reason string) error {
	ctx, cancel := g.context(cmd)
	defer cancel()
	fv, err := g.open(ctx, node)
	if err != nil {
		return err
	}
	defer fv.Close()
	if err := fv.store.Drain(ctx, node, drained, reason); err != nil {
		return err
	}
	res := drainResult{Node: node, Drained: drained}
	acks, _, err := fv.store.WaitAppliedFunc(ctx, []string{node}, func(a cluster.Applied) bool { return a.Drained == drained })
	if err != nil {
		return err
	}
	if len(acks) == 1 {
		res.Applied, res.AfterMilli = true, float64(acks[0].After.Microseconds())/1000
	}
	word := map[bool]string{true: "drained", false: "back in service"}[drained]
	if err := g.render(res, func(w io.Writer) {
		if res.Applied {
			fmt.Fprintf(w, "%s %s: applied after %s\n", node, word, ms(time.Duration(res.AfterMilli*1e6)))
		} else {
			fmt.Fprintf(w, "%s %s in etcd, NOT applied by the node within %s\n", node, word, g.timeout)
		}
	}); err != nil {
		return err
	}
	if !res.Applied {
		return fmt.Errorf("%s did not report the drain applied within %s (is it running? ctl status)", node, g.timeout)
	}
	return nil
}
