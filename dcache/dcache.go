// Package dcache says what the dataplane's destination cache is, apart from BPF:
// its address families, its size bounds and its counters. The dataplane implements
// the cache; the cache controller, the cluster and ctl reason about it; this leaf
// lets them do so without linking cilium/ebpf and the BPF objects.
package dcache

import "fmt"

// Family is an address family of the destination cache (bpf/dcache.h DC_V4, DC_V6).
type Family int

const (
	IPv4 Family = 0
	IPv6 Family = 1
)

func (f Family) String() string {
	if f == IPv6 {
		return "ipv6"
	}
	return "ipv4"
}

// MaxEntries bounds one family's destination cache (4 ways per set): 2^18 entries
// are 4 MiB per CPU for IPv4 and 8 MiB for IPv6.
const MaxEntries = 1 << 18

// MinEntries is the smallest cache: one set of four ways.
const MinEntries = 4

// SetBytes is the size of one set (four ways) per family, per CPU
// (bpf/dcache.h struct dc4_set, dc6_set).
var SetBytes = [2]int{64, 128}

// CheckEntries says whether a cache size is valid: 0 (off) or a power of two from
// MinEntries to MaxEntries.
func CheckEntries(entries int) error {
	if entries != 0 && (entries < MinEntries || entries > MaxEntries || entries&(entries-1) != 0) {
		return fmt.Errorf("cache of %d entries: use a power of two from %d to %d, or 0 for off", entries, MinEntries, MaxEntries)
	}
	return nil
}

// Stats are a family's cache counters, summed over CPUs, since the program loaded.
type Stats struct {
	// Lookups counts packets that reached the FIB step, the cache on or off.
	Lookups uint64
	Hits    uint64
	// Misses found nothing; Stale found an entry of an old epoch or generation.
	Misses, Stale uint64
	// Inserts, Evictions (an insert replaced a live entry) and Refused (an entry
	// leaving the window was dropped: the main ways were all busier).
	Inserts, Evictions, Refused uint64
	// GhostHits are misses that a cache with twice the ways would have hit,
	// measured on a sample of the sets and scaled to all.
	GhostHits uint64
}

// Sub returns the counts between an earlier reading and s.
func (s Stats) Sub(old Stats) Stats {
	return Stats{Lookups: s.Lookups - old.Lookups, Hits: s.Hits - old.Hits, Misses: s.Misses - old.Misses,
		Stale: s.Stale - old.Stale, Inserts: s.Inserts - old.Inserts, Evictions: s.Evictions - old.Evictions,
		Refused: s.Refused - old.Refused, GhostHits: s.GhostHits - old.GhostHits}
}
