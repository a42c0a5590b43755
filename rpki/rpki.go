// Package rpki validates route origins against the RPKI (RFC 6811): a table of
// validated ROA payloads (VRPs: a prefix, a maximum length and the AS allowed to
// originate it) answers, for a route and its origin AS, valid, invalid or not found.
// It reads the VRP files validators write (Routinator's CSV, the JSON of
// rpki-client, Routinator and stayrtr). Pure Go: the node feeds it and decides what
// a state does to a route.
package rpki

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gaissmai/bart"
)

// VRP is one validated ROA payload.
type VRP struct {
	Prefix    netip.Prefix
	MaxLength int
	ASN       uint32
}

// State is a route's origin validation state.
type State uint8

// The states of RFC 6811.
const (
	NotFound State = iota
	Valid
	Invalid
)

func (s State) String() string {
	switch s {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "not_found"
}

// States lists the states, for metrics.
var States = [...]State{NotFound, Valid, Invalid}

// entry is what a VRP allows under its prefix.
type entry struct {
	maxLength int
	asn       uint32
}

// Table holds VRPs by prefix. It is not safe for concurrent writes.
type Table struct {
	t bart.Table[[]entry]
	n int
}

// NewTable builds a table; duplicates are kept once.
func NewTable(vrps []VRP) *Table {
	t := &Table{}
	for _, v := range vrps {
		t.Add(v)
	}
	return t
}

// Add inserts a VRP (again: nothing changes).
func (t *Table) Add(v VRP) {
	e := entry{v.MaxLength, v.ASN}
	t.t.Modify(v.Prefix.Masked(), func(es []entry, _ bool) ([]entry, bool) {
		for _, x := range es {
			if x == e {
				return es, false
			}
		}
		t.n++
		return append(es, e), false
	})
}

// Remove deletes a VRP (absent: nothing changes).
func (t *Table) Remove(v VRP) {
	e := entry{v.MaxLength, v.ASN}
	t.t.Modify(v.Prefix.Masked(), func(es []entry, ok bool) ([]entry, bool) {
		for i, x := range es {
			if x == e {
				t.n--
				es = append(es[:i:i], es[i+1:]...)
				return es, len(es) == 0
			}
		}
		return es, !ok
	})
}

// Len is the number of distinct VRPs.
func (t *Table) Len() int { return t.n }

// Validate is RFC 6811's procedure: the VRPs whose prefix covers the route's decide;
// none: not found; one that names its origin AS (never AS 0) and allows its length:
// valid; else invalid.
func (t *Table) Validate(route netip.Prefix, origin uint32) State {
	state := NotFound
	for _, es := range t.t.Supernets(route.Masked()) {
		state = Invalid
		for _, e := range es {
			if e.asn == origin && origin != 0 && route.Bits() <= e.maxLength {
				return Valid
			}
		}
	}
	return state
}

// ReadCSV reads Routinator's CSV output: a header line, then
// "ASN,IP Prefix,Max Length,Trust Anchor" rows such as "AS13335,1.0.0.0/24,24,apnic".
func ReadCSV(r io.Reader) ([]VRP, error) {
	var out []VRP
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || line == 1 && strings.HasPrefix(text, "ASN") {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("rpki: line %d %q: want ASN,prefix,max length[,trust anchor]", line, text)
		}
		v, err := vrp(f[0], f[1], f[2])
		if err != nil {
			return nil, fmt.Errorf("rpki: line %d: %w", line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// ReadJSON reads the JSON VRP files of rpki-client, Routinator and stayrtr:
// {"roas": [{"asn": "AS13335" or 13335, "prefix": "1.0.0.0/24", "maxLength": 24}]}.
func ReadJSON(r io.Reader) ([]VRP, error) {
	var doc struct {
		ROAs []struct {
			ASN       json.RawMessage `json:"asn"`
			Prefix    string          `json:"prefix"`
			MaxLength int             `json:"maxLength"`
		} `json:"roas"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("rpki: not a VRP JSON file ({\"roas\": [...]}): %w", err)
	}
	out := make([]VRP, 0, len(doc.ROAs))
	for i, x := range doc.ROAs {
		v, err := vrp(strings.Trim(string(x.ASN), `"`), x.Prefix, strconv.Itoa(x.MaxLength))
		if err != nil {
			return nil, fmt.Errorf("rpki: roas[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func vrp(asn, prefix, maxLength string) (VRP, error) {
	a, err := strconv.ParseUint(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(asn)), "AS"), 10, 32)
	if err != nil {
		return VRP{}, fmt.Errorf("ASN %q: write AS13335 or 13335", asn)
	}
	p, err := netip.ParsePrefix(strings.TrimSpace(prefix))
	if err != nil {
		return VRP{}, fmt.Errorf("prefix %q: %w", prefix, err)
	}
	m, err := strconv.Atoi(strings.TrimSpace(maxLength))
	if err != nil || m < p.Bits() || m > p.Addr().BitLen() {
		return VRP{}, errors.New("max length " + maxLength + " for " + prefix + ": must be from the prefix's length to " + strconv.Itoa(p.Addr().BitLen()))
	}
	return VRP{Prefix: p.Masked(), MaxLength: m, ASN: uint32(a)}, nil
}
