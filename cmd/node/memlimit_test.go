package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/fibfleet/fibfleet/memory"
)

// TestMemLimitUpdate: the node's soft memory limit follows what it holds (the
// formula), but not every small change; a configured size, then off, take over at
// once; the runtime has what the decision says.
func TestMemLimitUpdate(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	setting := memory.Auto
	l := &memLimit{setting: func() memory.Setting { return setting }, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f := memory.DefaultFormula
	runtime := func() int64 { return debug.SetMemoryLimit(-1) }

	l.update(memory.Holdings{Paths: 1_000_000})
	want := f.For(memory.Holdings{Paths: 1_000_000})
	if d := l.decision(); d.Limit != want || d.Source != "formula" || runtime() != want {
		t.Fatalf("decision %+v, runtime %d; want the formula's %d", d, runtime(), want)
	}
	l.update(memory.Holdings{Paths: 1_010_000}) // a small change: kept
	if l.decision().Limit != want {
		t.Errorf("a 1%% change moved the limit to %d", l.decision().Limit)
	}
	l.update(memory.Holdings{Paths: 2_000_000, MeshPeers: 2})
	if want := f.For(memory.Holdings{Paths: 2_000_000, MeshPeers: 2}); l.decision().Limit != want || runtime() != want {
		t.Errorf("a second table and two mesh peers: %d, want %d", l.decision().Limit, want)
	}
	setting = 3 << 30
	l.update(memory.Holdings{Paths: 2_000_000, MeshPeers: 2})
	if d := l.decision(); d != (memory.Decision{Limit: 3 << 30, Source: "config"}) || runtime() != 3<<30 {
		t.Errorf("configured 3 GiB: %+v", d)
	}
	setting = memory.Off
	l.update(memory.Holdings{})
	if d := l.decision(); d.Source != "off" || runtime() != math.MaxInt64 {
		t.Errorf("off: %+v, runtime %d", d, runtime())
	}
}
