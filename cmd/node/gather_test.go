package main

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
)

func changesEvent(n int) bgp.Event {
	return bgp.Event{Changes: make([]bgp.Change, n)}
}

// A trickle of UPDATEs right after a batch waits out the hold and goes as one
// batch; after a quiet spell a change goes at once.
func TestGatherHoldsATrickle(t *testing.T) {
	events := make(chan bgp.Event, 100)
	fire := make(chan time.Time)
	var asked []time.Duration
	g := gatherer{events: events, hold: time.Hour, after: func(d time.Duration) <-chan time.Time {
		asked = append(asked, d)
		return fire
	}}
	ctx := context.Background()

	// The first batch: no batch before it, so nothing waits.
	evs, ok := g.gather(ctx, changesEvent(3), nil)
	if !ok || len(evs) != 1 || len(asked) != 0 {
		t.Fatalf("first event: %d events, ok %v, timers %v; want it alone at once", len(evs), ok, asked)
	}

	// The next UPDATE comes within the hold: the gatherer waits, and takes what
	// arrives meanwhile.
	done := make(chan []bgp.Event)
	go func() {
		evs, _ := g.gather(ctx, changesEvent(3), nil)
		done <- evs
	}()
	for range 9 {
		events <- changesEvent(3)
	}
	select {
	case evs := <-done:
		t.Fatalf("the batch went before its hold ended, with %d events", len(evs))
	case <-time.After(50 * time.Millisecond):
	}
	fire <- time.Now()
	evs = <-done
	if len(evs) != 10 {
		t.Fatalf("held batch has %d events, want 10 (the one that started it and the 9 that came during the hold)", len(evs))
	}
	if len(asked) != 1 || asked[0] <= 0 || asked[0] > time.Hour {
		t.Fatalf("timers asked for: %v, want one for the rest of the hour", asked)
	}

	// After a quiet spell longer than the hold: at once.
	g.lastStart = time.Now().Add(-2 * time.Hour)
	evs, _ = g.gather(ctx, changesEvent(1), nil)
	if len(evs) != 1 || len(asked) != 1 {
		t.Fatalf("after a quiet spell: %d events, timers %v; want the event at once", len(evs), asked)
	}
}

// What is not only changes (a session's end, before its withdrawals, for the
// backup next hops; a session's start; an End-of-RIB) is never held back.
func TestGatherNeverHoldsSessionEvents(t *testing.T) {
	peer := netip.MustParseAddr("192.0.2.1")
	for name, ev := range map[string]bgp.Event{
		"session down": {SessionDown: peer},
		"session up":   {SessionUp: peer},
		"End-of-RIB":   {EndOfRIB: peer},
	} {
		t.Run(name, func(t *testing.T) {
			events := make(chan bgp.Event, 10)
			never := make(chan time.Time) // the hold's timer never fires
			g := gatherer{events: events, hold: time.Hour, lastStart: time.Now(),
				after: func(time.Duration) <-chan time.Time { return never }}
			// Arriving first: no wait.
			evs, ok := g.gather(context.Background(), ev, nil)
			if !ok || len(evs) != 1 {
				t.Fatalf("got %d events, ok %v; want it at once", len(evs), ok)
			}
			// Arriving during a hold: it ends the hold.
			done := make(chan []bgp.Event, 1)
			go func() {
				evs, _ := g.gather(context.Background(), changesEvent(3), nil)
				done <- evs
			}()
			time.Sleep(10 * time.Millisecond)
			events <- ev
			select {
			case evs := <-done:
				if len(evs) != 2 {
					t.Fatalf("got %d events, want the held change and the %s", len(evs), name)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the %s did not end the hold", name)
			}
		})
	}
}

// A hold ends once a full batch's changes have come, and when the node stops.
func TestGatherHoldEnds(t *testing.T) {
	events := make(chan bgp.Event, 10)
	never := make(chan time.Time)
	g := gatherer{events: events, hold: time.Hour, lastStart: time.Now(),
		after: func(time.Duration) <-chan time.Time { return never }}
	events <- changesEvent(maxApplyBatch / 2)
	events <- changesEvent(maxApplyBatch / 2)
	evs, ok := g.gather(context.Background(), changesEvent(1), nil)
	if !ok || len(evs) != 3 {
		t.Fatalf("a full batch waiting: %d events, ok %v; want the 3 at once", len(evs), ok)
	}

	g.lastStart = time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() {
		_, ok := g.gather(ctx, changesEvent(1), nil)
		done <- ok
	}()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("gather said go on after its context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("gather kept waiting after its context ended")
	}
}
