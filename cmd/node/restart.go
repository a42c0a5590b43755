package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/mesh"
)

// restartState is what this start found, for the metrics.
type restartState struct {
	adopted bool        // an earlier process's program was forwarding, and kept
	pending atomic.Bool // it still is, until the swap
}

// swapper is what swapWhenComplete needs of the dataplane.
type swapper interface{ Swap() error }

// restartSpeaker is what swapWhenComplete needs of the speaker.
type restartSpeaker interface {
	Loads() []bgp.Load
	MeshPeers() []bgp.PeerStatus
	RestartDone(context.Context) error
}

// swapWhenComplete waits until the FIB holds every neighbour's table (at most the
// restart time after the start, whatever it holds then: the peers' patience ends
// there too). On a restart that adopted the last process's forwarding, the adopted
// program forwards from its FIB meanwhile, and the dataplane then swaps to this
// process's; stopped before, the node leaves the adopted program forwarding. Then
// announce runs (the originator's decisions, now that the FIB is whole), the speaker's
// selection deferral ends (the peers get the node's routes, the fleet's prefixes
// among them, and End-of-RIB), and sweep removes what an earlier process left in the
// kernel's table that the FIB no longer holds. A first start swapped at once and only
// sweeps.
func swapWhenComplete(ctx context.Context, dp swapper, s restartSpeaker, done func(bgp.Load) bool, members func() int, needOne bool, restart time.Duration,
	announce, sweep func(), state *restartState, log *slog.Logger) {
	start := time.Now()
	deadline := time.NewTimer(restart)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	late := false // the restart time passed: swap to whatever the FIB holds
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			late = true
		case <-tick.C:
		}
		ok, why := restartComplete(s.Loads(), s.MeshPeers(), done, members(), needOne)
		if !ok && !late {
			continue
		}
		if !ok && state.adopted {
			log.Warn("the restart time passed before the FIB was complete; swapping to what it holds", "waiting_for", why)
		}
		if err := dp.Swap(); err != nil {
			// The adopted program goes on forwarding; the next tick tries again.
			log.Error("swap to the new FIB failed; the adopted one keeps forwarding", "err", err)
			continue
		}
		state.pending.Store(false)
		if state.adopted {
			announce()
			if err := s.RestartDone(ctx); err != nil {
				log.Error("the peers did not get End-of-RIB; they sweep the node's routes when their restart timer ends", "err", err)
			}
			log.Info("restart complete: forwarding from this process's FIB", "seconds", roundSeconds(time.Since(start)), "holding", why)
		}
		sweep()
		return
	}
}

// restartComplete says whether the FIB holds what a restart must wait for: the table
// of every configured upstream (a neighbour not in session yet is waited for: its
// routes are in the adopted FIB), and of a mesh session with every other live member
// of the fleet. members is how many other live members have a mesh session to have.
// needOne: the node has neighbours or a mesh, so an empty FIB is not complete.
func restartComplete(loads []bgp.Load, mesh []bgp.PeerStatus, done func(bgp.Load) bool, members int, needOne bool) (bool, string) {
	isMesh := map[netip.Addr]bool{}
	for _, p := range mesh {
		isMesh[p.Address] = true
	}
	var waiting []string
	var upstreams, meshDone int
	for _, l := range loads {
		switch {
		case isMesh[l.Neighbor] && done(l):
			meshDone++
		case isMesh[l.Neighbor]:
			waiting = append(waiting, "mesh peer "+l.Neighbor.String())
		case done(l):
			upstreams++
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%d prefixes so far)", l.Neighbor, l.Received))
		}
	}
	switch {
	case len(waiting) > 0:
	case meshDone < members:
		waiting = append(waiting, fmt.Sprintf("mesh sessions with %d of %d live members", meshDone, members))
	case upstreams+meshDone == 0 && needOne:
		// Neighbours are configured, or a mesh, but none has delivered a table: the
		// gossip may not have found the fleet yet.
		waiting = append(waiting, "a first neighbour's table")
	}
	if len(waiting) > 0 {
		slices.Sort(waiting)
		return false, strings.Join(waiting, ", ")
	}
	return true, fmt.Sprintf("the tables of %d upstreams and %d mesh peers", upstreams, meshDone)
}

// peerMembers is how many other live members the mesh peers with (each one a session
// to wait for); 0 without a mesh.
func (f *fleet) peerMembers() int {
	self, err := netip.ParseAddr(f.cfg.Cluster.Mesh.Address)
	if err != nil || f.members == nil {
		return 0
	}
	want, _ := mesh.Desired(f.members.View(), mesh.Self{Name: f.cfg.NodeName, Address: self, ASN: f.cfg.BGP.ASN})
	return len(want)
}
