package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/memory"
)

// memLimit keeps Go's soft memory limit where package memory decides it: from the
// running configuration's memory_limit, or the formula over what the speaker holds
// and the live heap (every second: a limit left under a growing live heap makes the
// collector take half the CPU), lowered to the cgroup's share.
type memLimit struct {
	setting func() memory.Setting
	cgroup  func() (uint64, error)
	log     *slog.Logger

	mu sync.Mutex
	d  memory.Decision
}

// update decides again and applies a decision that changed by more than a
// sixteenth, or changed its source; a change of a quarter or more is logged.
func (l *memLimit) update(h memory.Holdings) {
	d := memory.Decide(l.setting(), memory.DefaultFormula, h, l.cgroup)
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.d
	diff := d.Limit - old.Limit
	if diff < 0 {
		diff = -diff
	}
	if d.Source == old.Source && diff <= old.Limit/16 {
		return
	}
	memory.Apply(d)
	l.d = d
	if d.Source != old.Source || diff >= old.Limit/4 {
		if d.Source == "off" {
			l.log.Info("Go soft memory limit off")
		} else {
			l.log.Info("Go soft memory limit", "limit_mib", d.Limit>>20, "source", d.Source, "paths_held", h.Paths, "mesh_peers", h.MeshPeers, "live_heap_mib", h.LiveHeap>>20, "gc_costly", h.GCCostly)
		}
	}
}

// run decides again every interval until ctx ends, with the collector's cost
// measured over the same intervals.
func (l *memLimit) run(ctx context.Context, every time.Duration, holdings func() memory.Holdings) {
	t := time.NewTicker(every)
	defer t.Stop()
	var gc memory.GCMeter
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			gc.Sample()
			h := holdings()
			h.GCCostly = gc.Costly()
			l.update(h)
		}
	}
}

// decision is the limit in force.
func (l *memLimit) decision() memory.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d
}
