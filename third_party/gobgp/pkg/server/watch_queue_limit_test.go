package server

import (
	"testing"
	"time"

	"github.com/eapache/channels"
)

// TestWatchQueueLimit: a watcher at its queue limit makes its notifier wait (up to
// watchQueueWait, then the event is queued anyway); without a limit nothing waits;
// either way every event arrives, in order.
func TestWatchQueueLimit(t *testing.T) {
	newWatcher := func(limit int) *watcher {
		w := &watcher{realCh: make(chan watchEvent, 8), ch: channels.NewInfiniteChannel(), took: make(chan struct{}, 1), opts: watchOptions{queueLimit: limit}}
		go w.loop()
		return w
	}
	// Nobody reads: realCh takes 8 events, the loop holds one, the queue the rest.
	fill := func(w *watcher, n int) (slowest time.Duration) {
		for i := range n {
			start := time.Now()
			w.notify(&watchEventEor{Family: 0, PeerInfo: nil, Timestamp: time.Unix(int64(i), 0)})
			slowest = max(slowest, time.Since(start))
		}
		return slowest
	}
	const events = 20
	free := newWatcher(0)
	if d := fill(free, events); d >= watchQueueWait {
		t.Errorf("without a limit a notify waited %v", d)
	}
	limited := newWatcher(4)
	if d := fill(limited, events); d < watchQueueWait*9/10 {
		t.Errorf("with 4 events queued and nobody reading, the slowest notify took %v, want about %v (it waits for the watcher)", d, watchQueueWait)
	}
	for _, w := range []*watcher{free, limited} {
		for i := range events {
			select {
			case ev := <-w.Event():
				if got := ev.(*watchEventEor).Timestamp.Unix(); got != int64(i) {
					t.Fatalf("event %d arrived as %d", i, got)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("event %d never arrived", i)
			}
		}
	}
}
