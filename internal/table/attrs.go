package table

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Attrs is what a route carries besides its prefix: the AS path from the neighbour
// to the origin (origin last) and its communities (ASN<<16 | value).
type Attrs struct {
	Path        []uint32
	Communities []uint32
	// Transit is the model's set it extends (Model.Assign): Path is that set's
	// path, then the origin unless the origin is reserved.
	Transit int
}

// Model holds the distinct attribute sets of one peer of a real RIB, each without
// its origin AS, and how many sets that peer had per prefix.
type Model struct {
	Transits      []Attrs
	SetsPerPrefix float64
}

// ReadModel decodes a model file (gzip): comment lines (#), a line
// "sets_per_prefix <x>", then one set per line, "<AS path without the origin>|<communities
// as asn:value>", space-separated.
func ReadModel(r io.Reader) (Model, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return Model{}, fmt.Errorf("table: attribute model: not a gzip file: %w", err)
	}
	var m Model
	sc := bufio.NewScanner(zr)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if v, ok := strings.CutPrefix(line, "sets_per_prefix "); ok {
			if m.SetsPerPrefix, err = strconv.ParseFloat(v, 64); err != nil || m.SetsPerPrefix <= 0 || m.SetsPerPrefix > 1 {
				return Model{}, fmt.Errorf("table: attribute model line %d: sets_per_prefix %q: want a number in (0, 1]", n, v)
			}
			continue
		}
		path, comms, ok := strings.Cut(line, "|")
		if !ok {
			return Model{}, fmt.Errorf("table: attribute model line %d: %q has no '|'", n, line)
		}
		var a Attrs
		for _, f := range strings.Fields(path) {
			as, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return Model{}, fmt.Errorf("table: attribute model line %d: AS %q: %w", n, f, err)
			}
			a.Path = append(a.Path, uint32(as))
		}
		for _, f := range strings.Fields(comms) {
			hi, lo, ok := strings.Cut(f, ":")
			h, err1 := strconv.ParseUint(hi, 10, 16)
			l, err2 := strconv.ParseUint(lo, 10, 16)
			if !ok || err1 != nil || err2 != nil {
				return Model{}, fmt.Errorf("table: attribute model line %d: community %q: want asn:value, each 0-65535", n, f)
			}
			a.Communities = append(a.Communities, uint32(h)<<16|uint32(l))
		}
		m.Transits = append(m.Transits, a)
	}
	if err := sc.Err(); err != nil {
		return Model{}, fmt.Errorf("table: attribute model: %w", err)
	}
	if len(m.Transits) == 0 || m.SetsPerPrefix == 0 {
		return Model{}, fmt.Errorf("table: attribute model has no sets or no sets_per_prefix line")
	}
	return m, nil
}

// Assign gives each route attributes: the routes of one origin AS are spread over
// max(1, round(n x SetsPerPrefix)) variants (the real RIB's ratio of distinct
// attribute sets to prefixes), each variant a real set of the model (chosen by a
// hash of the origin and the variant) with the origin appended. It returns the
// distinct sets and each route's index into them; the same table gives the same
// answer every time.
func (m Model) Assign(routes []Route) (sets []Attrs, of []int32) {
	perOrigin := map[uint32]int{}
	for _, r := range routes {
		perOrigin[r.OriginAS]++
	}
	type key struct {
		origin  uint32
		variant int
	}
	index := map[key]int32{}
	seen := map[uint32]int{}
	of = make([]int32, len(routes))
	for i, r := range routes {
		k := max(1, int(math.Round(float64(perOrigin[r.OriginAS])*m.SetsPerPrefix)))
		key := key{r.OriginAS, seen[r.OriginAS] % k}
		seen[r.OriginAS]++
		id, ok := index[key]
		if !ok {
			ti := int(mix(uint64(key.origin)<<20|uint64(key.variant)) % uint64(len(m.Transits)))
			t := m.Transits[ti]
			a := Attrs{Path: append([]uint32(nil), t.Path...), Communities: t.Communities, Transit: ti}
			if !reservedASN(r.OriginAS) {
				a.Path = append(a.Path, r.OriginAS)
			}
			id = int32(len(sets))
			sets = append(sets, a)
			index[key] = id
		}
		of[i] = id
	}
	return sets, of
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// reservedASN is an AS no real path carries (0, AS_TRANS, documentation, the
// last 16- and 32-bit ASes, the IANA-reserved 65552-131071): import rules refuse
// them, as a real upstream's would have.
func reservedASN(as uint32) bool {
	return as == 0 || as == 23456 || as == 65535 || as >= 64496 && as <= 64511 || as >= 65536 && as <= 131071 || as == 4294967295
}

// PublicASN is an AS a real path between networks carries: not reserved and not
// private (64512-65534, 4200000000-4294967294).
func PublicASN(as uint32) bool {
	return !reservedASN(as) && !(as >= 64512 && as <= 65534 || as >= 4200000000 && as <= 4294967294)
}
