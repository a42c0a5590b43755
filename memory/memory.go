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
	"runtime/metrics"
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
// GoBGP records what it sent); and the heap live after the last collection, under
// which the limit never goes (LiveHeadroom), and whether the collector costs too
// much CPU (GCMeter), when the limit steps aside.
type Holdings struct {
	Paths     int64
	MeshPeers int
	LiveHeap  int64 // bytes (LiveHeap())
	GCCostly  bool  // GCMeter.Costly()
}

// LiveHeadroom is how far above the live heap the formula's limit stays at least. A
// limit at or under the live heap makes the collector run without end (Go caps it at
// half the CPU), and the formula is an estimate: a node holding more than it says
// (a mesh peer's dump under way, an attribute-poor feed) must not pay for it so.
// Above the formula, the collector runs at worst as often as with GOGC=50.
const LiveHeadroom = 1.5

// CostlyHeadroom is the live heap's headroom while the collector is costly
// (GCMeter): GOGC=100's own, so that the limit no longer makes it collect sooner.
// A soft limit trades CPU for memory; a router whose CPU is short (a fleet node
// sending a full table to its mesh peers while it loads one, on 2 cores) must not
// pay for memory with its sessions' keepalives: in TestFleetJoinDuringLoad (then
// with the whole table), with the formula's limit, n1 took the table in 465 s
// instead of 200 s and a mesh session reset on its hold timer until the test gave
// up.
const CostlyHeadroom = 2.0

// The collector is costly once it takes more than GCCostlyAbove of the process's
// CPU (a moving average over about ten seconds), and no longer under GCCostlyBelow.
const (
	GCCostlyAbove = 0.25
	GCCostlyBelow = 0.10
)

// GCMeter follows the collector's share of the process's CPU (runtime/metrics:
// the GC's CPU over the GC's and the program's), sampled by Sample.
type GCMeter struct {
	gc, user float64 // cumulative CPU-seconds at the last sample
	share    float64 // moving average
	costly   bool
	started  bool
}

// Sample reads the runtime's CPU counters and updates the share; call it every
// second or so.
func (m *GCMeter) Sample() {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/user:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 || s[1].Value.Kind() != metrics.KindFloat64 {
		return
	}
	m.add(s[0].Value.Float64(), s[1].Value.Float64())
}

// add takes cumulative GC and program CPU-seconds.
func (m *GCMeter) add(gc, user float64) {
	dgc, duser := gc-m.gc, user-m.user
	m.gc, m.user = gc, user
	if !m.started {
		m.started = true
		return
	}
	if dgc < 0 || duser < 0 || dgc+duser <= 0 {
		return // idle, or counters reset
	}
	const alpha = 0.2 // about ten samples
	m.share += alpha * (dgc/(dgc+duser) - m.share)
	switch {
	case m.share > GCCostlyAbove:
		m.costly = true
	case m.share < GCCostlyBelow:
		m.costly = false
	}
}

// Share is the collector's share of the process's CPU, averaged.
func (m *GCMeter) Share() float64 { return m.share }

// Costly says whether the collector costs too much for the limit to press it.
func (m *GCMeter) Costly() bool { return m.costly }

// LiveHeap is the heap the last collection found live, in bytes.
func LiveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
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
// PerPath was 480 until GoBGP patches 25 and 26 took 39 bytes a prefix off the
// global table and its lookups' garbage: one upstream's live heap at the load's end
// is about 500 MB, and 400 bytes a path leaves the collector 1.7 times it (one
// round each, 2026-12-06: peak RSS 1,015 MB at 440, 994 MB at 400, in no more
// time; docs/BENCHMARKS.md). PerMeshPeer was 224 MiB until GoBGP patch 27 made the
// record of what a peer was sent 28 bytes a prefix (33 MB for a full table, 179 MB
// before); the rest is room for the peer's queued updates while it reads the dump.
// Base was 384 MiB until the IPv4 FIB stopped keeping a copy of tbl24 in the heap
// (64 MiB, so the live heap above is about 64 MiB less): the same room for the
// collector, 64 MiB less peak.
var DefaultFormula = Formula{Base: 320 << 20, PerPath: 400, PerMeshPeer: 64 << 20}

// For returns the formula's limit for the holdings, without the live heap's floor.
func (f Formula) For(h Holdings) int64 {
	return f.Base + f.PerPath*h.Paths + f.PerMeshPeer*int64(h.MeshPeers)
}

// CgroupShare is the part of the cgroup's hard limit the soft limit may reach: the
// rest is for what the Go runtime does not count (the mapped BPF tables, stacks,
// what the collector has not yet returned).
const CgroupShare = 0.85

// Decision is the limit in force and where it comes from: "config", "formula",
// "live" (the live heap with its headroom was above the formula), "collector"
// (the collector was costly: the limit stepped aside to twice the live heap),
// "cgroup" (the cgroup's share was lower), or "off".
type Decision struct {
	Limit  int64 // bytes; math.MaxInt64 when off
	Source string
}

// Decide picks the limit: the configured size (as configured), or the formula's
// raised to LiveHeadroom times the live heap (CostlyHeadroom while the collector
// is costly); lowered to the cgroup's share (cgroup
// returns its hard limit, 0 when there is none), where the kernel's limit leaves no
// choice.
func Decide(s Setting, f Formula, h Holdings, cgroup func() (uint64, error)) Decision {
	var d Decision
	switch {
	case s == Off:
		d = Decision{Limit: math.MaxInt64, Source: "off"}
	case s > 0:
		d = Decision{Limit: int64(s), Source: "config"}
	default:
		d = Decision{Limit: f.For(h), Source: "formula"}
		if floor := int64(float64(h.LiveHeap) * LiveHeadroom); floor > d.Limit {
			d = Decision{Limit: floor, Source: "live"}
		}
		if floor := int64(float64(h.LiveHeap) * CostlyHeadroom); h.GCCostly && floor > d.Limit {
			d = Decision{Limit: floor, Source: "collector"}
		}
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
