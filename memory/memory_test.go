package memory

import (
	"errors"
	"math"
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

// TestApply: the runtime takes the limit, and gives back the previous one.
func TestApply(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	Apply(Decision{Limit: 3 << 30})
	if got := Apply(Decision{Limit: prev}); got != 3<<30 {
		t.Errorf("the runtime's limit was %d, want 3 GiB", got)
	}
}
