// Package memory sets the node's Go soft memory limit (runtime/debug.SetMemoryLimit).
//
// Go's collector lets the heap grow to twice what is live (GOGC=100) before it
// collects; during a full-table load, whose garbage is several times its live data,
// that headroom is most of the node's peak memory. A soft limit makes the collector
// work harder as the heap nears it instead: the peak follows the limit, at the cost
// of collections (GOGC stays, so below the limit nothing changes). The limit comes
// from the configuration (a size), or from a formula over what the node holds (the
// paths its upstreams and mesh peers sent it, or will: Holdings), and never above a
// share of the cgroup's hard limit, where the kernel would kill the process.
package memory

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// Setting is the configured limit: Auto (the formula), Off, or a size in bytes.
type Setting int64

const (
	// Auto derives the limit from Holdings (Formula).
	Auto Setting = 0
	// Off sets no soft limit (the cgroup's, if any, still bounds it).
	Off Setting = -1
)

// ParseSetting reads "auto", "off", or a size with a unit: "1536MiB", "2GiB", "2G"
// (powers of 1024, as Kubernetes' Mi and Gi).
func ParseSetting(s string) (Setting, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return Auto, nil
	case "off":
		return Off, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"gib", 1 << 30}, {"mib", 1 << 20}, {"gi", 1 << 30}, {"mi", 1 << 20}, {"g", 1 << 30}, {"m", 1 << 20}}
	l := strings.ToLower(strings.TrimSpace(s))
	for _, u := range units {
		if n, ok := strings.CutSuffix(l, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) {
				break
			}
			b := v * u.mult
			if b < 64<<20 {
				return 0, fmt.Errorf("memory limit %q: at least 64MiB (a full table alone needs hundreds)", s)
			}
			return Setting(b), nil
		}
	}
	return 0, fmt.Errorf("memory limit %q: write auto, off, or a size such as 1536MiB or 2GiB", s)
}

func (s Setting) String() string {
	switch s {
	case Auto:
		return "auto"
	case Off:
		return "off"
	}
	return fmt.Sprintf("%dMiB", int64(s)>>20)
}

// Holdings is what the node holds, for the formula: the paths its neighbours sent it
// (each upstream counted at least at its expected dump, so that the limit is there
// before the table is), and its mesh peers (each is sent this node's table, and
// GoBGP records what it sent).
type Holdings struct {
	Paths     int64
	MeshPeers int
}

// Formula is the limit for the holdings: a base for the process (the FIB's tables,
// the dataplane's buffers, GoBGP's own), plus per path held, plus per mesh peer. The
// figures are the node's live heap measured on the full table with real attributes
// (docs/BENCHMARKS.md) with room above it for the collector: a limit at the live
// heap would collect without end.
type Formula struct {
	Base, PerPath, PerMeshPeer int64
}

// DefaultFormula is calibrated on the 2026 table (1.17M prefixes, real attributes).
var DefaultFormula = Formula{Base: 384 << 20, PerPath: 480, PerMeshPeer: 224 << 20}

// For returns the formula's limit for the holdings.
func (f Formula) For(h Holdings) int64 {
	return f.Base + f.PerPath*h.Paths + f.PerMeshPeer*int64(h.MeshPeers)
}

// CgroupShare is the part of the cgroup's hard limit the soft limit may reach: the
// rest is for what the Go runtime does not count (the mapped BPF tables, stacks,
// what the collector has not yet returned).
const CgroupShare = 0.85

// Decision is the limit in force and where it comes from: "config", "formula",
// "cgroup" (the cgroup's share was lower), or "off".
type Decision struct {
	Limit  int64 // bytes; math.MaxInt64 when off
	Source string
}

// Decide picks the limit: the configured size or the formula's, lowered to the
// cgroup's share (cgroup returns its hard limit, 0 when there is none).
func Decide(s Setting, f Formula, h Holdings, cgroup func() (uint64, error)) Decision {
	var d Decision
	switch {
	case s == Off:
		d = Decision{Limit: math.MaxInt64, Source: "off"}
	case s > 0:
		d = Decision{Limit: int64(s), Source: "config"}
	default:
		d = Decision{Limit: f.For(h), Source: "formula"}
	}
	if cgroup == nil {
		return d
	}
	hard, err := cgroup()
	if err != nil || hard == 0 || hard > math.MaxInt64 {
		return d
	}
	if share := int64(float64(hard) * CgroupShare); share < d.Limit {
		return Decision{Limit: share, Source: "cgroup"}
	}
	return d
}

// Apply sets Go's soft memory limit; it returns the previous one.
func Apply(d Decision) int64 {
	return debug.SetMemoryLimit(d.Limit)
}
