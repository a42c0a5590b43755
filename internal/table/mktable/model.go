package main

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/packet/mrt"

	"github.com/fibfleet/fibfleet/internal/table"
)

// peerSets is one MRT peer's prefixes and distinct attribute sets.
type peerSets struct {
	prefixes int
	full     map[string]bool // AS path with origin | communities
	transit  map[string]bool // the same without the origin, public ASes only
}

// model reads an MRT RIB and writes the attribute model of its richest peer. A
// truncated file (the bundled samples are) ends at its last whole record.
func model(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	peers := map[uint16]*peerSets{}
	for {
		hdr := make([]byte, mrt.MRT_COMMON_HEADER_LEN)
		if _, err := io.ReadFull(r, hdr); err != nil {
			break
		}
		h, err := mrt.ParseHeader(hdr)
		if err != nil {
			return fmt.Errorf("mrt header: %w", err)
		}
		body := make([]byte, h.Len)
		if _, err := io.ReadFull(r, body); err != nil {
			break // truncated
		}
		m, err := mrt.ParseBody(body, h)
		if err != nil {
			continue // a record type this reader does not need
		}
		rib, ok := m.Body.(*mrt.Rib)
		if !ok {
			continue
		}
		for _, e := range rib.Entries {
			p := peers[e.PeerIndex]
			if p == nil {
				p = &peerSets{full: map[string]bool{}, transit: map[string]bool{}}
				peers[e.PeerIndex] = p
			}
			p.prefixes++
			path, public := []uint32(nil), true
			var comms []string
			for _, a := range e.PathAttributes {
				switch a := a.(type) {
				case *bgp.PathAttributeAsPath:
					for _, seg := range a.Value {
						if seg.GetType() != bgp.BGP_ASPATH_ATTR_TYPE_SEQ {
							public = false
						}
						path = append(path, seg.GetAS()...)
					}
				case *bgp.PathAttributeCommunities:
					for _, c := range a.Value {
						comms = append(comms, fmt.Sprintf("%d:%d", c>>16, c&0xffff))
					}
				}
			}
			c := strings.Join(comms, " ")
			p.full[fmt.Sprint(path)+"|"+c] = true
			if len(path) < 2 || !public {
				continue
			}
			transit := path[:len(path)-1]
			if slices.ContainsFunc(transit, func(as uint32) bool { return !table.PublicASN(as) }) {
				continue
			}
			p.transit[strings.Trim(fmt.Sprint(transit), "[]")+"|"+c] = true
		}
	}
	var best *peerSets
	var bestID uint16
	for id, p := range peers {
		if best == nil || len(p.full) > len(best.full) || len(p.full) == len(best.full) && id < bestID {
			best, bestID = p, id
		}
	}
	if best == nil {
		return errors.New("no RIB entries in the input (an MRT TABLE_DUMP_V2 RIB)")
	}
	lines := make([]string, 0, len(best.transit))
	for k := range best.transit {
		lines = append(lines, k)
	}
	slices.Sort(lines)
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	fmt.Fprintf(zw, "# peer index %d: %d prefixes, %d distinct attribute sets, %d distinct transit sets (origin left out)\n",
		bestID, best.prefixes, len(best.full), len(lines))
	fmt.Fprintf(zw, "sets_per_prefix %.4f\n", float64(len(best.full))/float64(best.prefixes))
	for _, l := range lines {
		fmt.Fprintln(zw, l)
	}
	return zw.Close()
}
