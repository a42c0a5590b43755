package memory

import (
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestParseSetting(t *testing.T) {
	for in, want := range map[string]Setting{"": Auto, "auto": Auto, "AUTO": Auto, "off": Off, "1536MiB": 1536 << 20, "2GiB": 2 << 30,
		"2Gi": 2 << 30, "1.5G": 3 << 29, " 512m ": 512 << 20} {
		got, err := ParseSetting(in)
		if err != nil || got != want {
			t.Errorf("ParseSetting(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"2", "2GB", "-1GiB", "0MiB", "lots", "32MiB", "1e400GiB"} {
		if _, err := ParseSetting(in); err == nil {
			t.Errorf("ParseSetting(%q) took it", in)
		}
	}
	if got := Setting(1536 << 20).String(); got != "1536MiB" {
		t.Errorf("String = %q", got)
	}
}

// TestDecide: the configured size, or the formula over what the node holds, lowered
// to the cgroup's share; off is off unless a cgroup limits the process.
func TestDecide(t *testing.T) {
	f := Formula{Base: 100 << 20, PerPath: 500, PerMeshPeer: 50 << 20}
	h := Holdings{Paths: 1_000_000, MeshPeers: 2}
	formula := int64(100<<20) + 500*1_000_000 + 2*(50<<20)
	none := func() (uint64, error) { return 0, errors.New("no cgroup limit") }
	big := func() (uint64, error) { return 16 << 30, nil }
	small := func() (uint64, error) { return 512 << 20, nil }
	unlimited := func() (uint64, error) { return math.MaxUint64, nil }
	share := CgroupShare
	tight := int64(float64(512<<20) * share)
	for _, c := range []struct {
		name   string
		s      Setting
		cgroup func() (uint64, error)
		want   Decision
	}{
		{"auto, no cgroup", Auto, none, Decision{formula, "formula"}},
		{"auto, a roomy cgroup", Auto, big, Decision{formula, "formula"}},
		{"auto, a tight cgroup", Auto, small, Decision{tight, "cgroup"}},
		{"auto, an unlimited cgroup", Auto, unlimited, Decision{formula, "formula"}},
		{"configured", 3 << 30, big, Decision{3 << 30, "config"}},
		{"configured above the cgroup", 3 << 30, small, Decision{tight, "cgroup"}},
		{"off", Off, none, Decision{math.MaxInt64, "off"}},
		{"off in a cgroup", Off, small, Decision{tight, "cgroup"}},
		{"no reader", Auto, nil, Decision{formula, "formula"}},
	} {
		if got := Decide(c.s, f, h, c.cgroup); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if f.For(Holdings{}) != 100<<20 {
		t.Error("nothing held: not the base")
	}
}

// TestDecideLiveFloor: the formula's limit rises to LiveHeadroom times the live heap
// when what is live outgrows it (a limit under the live heap collects without end);
// a configured size is taken as configured, and the cgroup's share still wins.
func TestDecideLiveFloor(t *testing.T) {
	f := Formula{Base: 100 << 20, PerPath: 500, PerMeshPeer: 50 << 20}
	h := Holdings{Paths: 1_000_000, MeshPeers: 2}
	formula := f.For(h)
	h.LiveHeap = formula / 2 // well under: the formula stands
	if d := Decide(Auto, f, h, nil); d != (Decision{formula, "formula"}) {
		t.Errorf("live heap at half the formula: %+v", d)
	}
	h.LiveHeap = formula // at the formula: 1.5 times it
	want := int64(float64(formula) * LiveHeadroom)
	if d := Decide(Auto, f, h, nil); d != (Decision{want, "live"}) {
		t.Errorf("live heap at the formula: %+v, want %d from the live heap", d, want)
	}
	if d := Decide(3<<30, f, Holdings{LiveHeap: 4 << 30}, nil); d != (Decision{3 << 30, "config"}) {
		t.Errorf("configured under the live heap: %+v", d)
	}
	h.GCCostly = true // a costly collector: twice the live heap
	if d := Decide(Auto, f, h, nil); d != (Decision{int64(float64(formula) * CostlyHeadroom), "collector"}) {
		t.Errorf("a costly collector: %+v", d)
	}
	small := func() (uint64, error) { return 512 << 20, nil }
	if d := Decide(Auto, f, h, small); d.Source != "cgroup" {
		t.Errorf("the cgroup's share below the live floor: %+v", d)
	}
}

// TestGCMeter: the collector's share of the CPU, averaged, turns costly above
// GCCostlyAbove and back only under GCCostlyBelow (no flapping in between).
func TestGCMeter(t *testing.T) {
	var m GCMeter
	gc, user := 0.0, 0.0
	step := func(dgc, duser float64, n int) {
		for range n {
			gc, user = gc+dgc, user+duser
			m.add(gc, user)
		}
	}
	step(0.05, 0.95, 20)
	if m.Costly() || m.Share() > 0.06 {
		t.Fatalf("5%% GC: share %.3f costly %v", m.Share(), m.Costly())
	}
	step(0.5, 0.5, 1) // one busy second: not yet
	if m.Costly() {
		t.Fatalf("one second at 50%% made it costly (share %.3f)", m.Share())
	}
	step(0.5, 0.5, 10)
	if !m.Costly() {
		t.Fatalf("ten seconds at 50%%: share %.3f, not costly", m.Share())
	}
	step(0.15, 0.85, 20) // between the thresholds: stays costly
	if !m.Costly() {
		t.Fatalf("15%% GC after a costly spell: share %.3f, no longer costly", m.Share())
	}
	step(0.02, 0.98, 30)
	if m.Costly() {
		t.Fatalf("2%% GC: share %.3f, still costly", m.Share())
	}
	step(0, 0, 5) // idle: nothing changes
	if m.Costly() {
		t.Fatal("idle seconds made it costly")
	}
	var live GCMeter // the runtime's counters can be read
	live.Sample()
	runtime.GC()
	live.Sample()
	if live.Share() < 0 || live.Share() > 1 {
		t.Errorf("share from the runtime %.3f", live.Share())
	}
}

// TestLiveHeap: what the runtime reports as live after a collection, which holds
// what this test keeps.
func TestLiveHeap(t *testing.T) {
	keep := make([]byte, 64<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	runtime.GC()
	if live := LiveHeap(); live < 64<<20 {
		t.Errorf("LiveHeap = %d with 64 MiB kept", live)
	}
	runtime.KeepAlive(keep)
}

// TestApply: the runtime takes the limit, and gives back the previous one.
func TestApply(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	Apply(Decision{Limit: 3 << 30})
	if got := Apply(Decision{Limit: prev}); got != 3<<30 {
		t.Errorf("the runtime's limit was %d, want 3 GiB", got)
	}
}
