package main

import (
	"context"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
)

// maxApplyBatch is how many waiting changes one pass of consume gathers.
const maxApplyBatch = 8192

// applyHold is the least time between the starts of two FIB batches while changes
// trickle in. A load arrives an UPDATE (about three prefixes) at a time, each an
// event; a node that kept up with its feed applied each as its own batch: 460,000
// to 490,000 batches for a full table on each node of the fleet, every one paying
// the FIB's commit, a kernel sync wake-up with its netlink write, and walks of maps
// sized by the largest batch seen. With a 20 ms hold the same load took 4,600
// batches and a sixth less CPU on the nodes taking it from the mesh (5 ms: 15,000
// batches, within a round's spread of none; docs/BENCHMARKS.md). A change after a
// quiet spell is applied at once; only one that follows a batch within applyHold
// waits for the rest of it, with what else comes.
const applyHold = 20 * time.Millisecond

// gatherer collects the events of one FIB batch.
type gatherer struct {
	events <-chan bgp.Event
	hold   time.Duration
	// after is time.After, replaced in tests.
	after func(time.Duration) <-chan time.Time
	// lastStart is when the last batch was handed out.
	lastStart time.Time
}

// gather appends first and the events already waiting to evs; when the last batch
// started less than hold ago, it waits out the rest of the hold for more, unless
// an event that is not only changes (a session's start or end, an End-of-RIB: they
// are never held back) or maxApplyBatch changes end the wait. It returns false
// when ctx ends while it waits.
func (g *gatherer) gather(ctx context.Context, first bgp.Event, evs []bgp.Event) ([]bgp.Event, bool) {
	evs = append(evs, first)
	n := len(first.Changes)
	urgent := !onlyChanges(first)
	var timeout <-chan time.Time
gather:
	for n < maxApplyBatch {
		var more bgp.Event
		select {
		case more = <-g.events:
		default:
			// Nothing waiting: the batch is whole unless a hold runs.
			if urgent {
				break gather
			}
			if timeout == nil {
				wait := g.hold - time.Since(g.lastStart)
				if wait <= 0 {
					break gather
				}
				timeout = g.after(wait)
			}
			select {
			case more = <-g.events:
			case <-timeout:
				break gather
			case <-ctx.Done():
				return evs, false
			}
		}
		evs = append(evs, more)
		n += len(more.Changes)
		urgent = urgent || !onlyChanges(more)
	}
	g.lastStart = time.Now()
	return evs, true
}

func onlyChanges(ev bgp.Event) bool {
	return !ev.EndOfRIB.IsValid() && !ev.SessionDown.IsValid() && !ev.SessionUp.IsValid()
}
