// Package table reads and writes fibfleet's compact routing-table files and bundles
// four real tables, two IPv4 and two IPv6 (see testdata/README.md), so tests, benchmarks and the lab run on
// real data without ../shared.
//
// Format (gzip-compressed): the magic "FFT1" (IPv4) or "FFT6" (IPv6), a uvarint route
// count, then per route, sorted by address then length: the uvarint difference of its
// address from the previous route's (IPv4: as a 32-bit number; IPv6: its top 64 bits,
// followed by the low 64 bits as a uvarint, nearly always 0), one byte of prefix
// length, and a uvarint origin AS (0: unknown).
package table

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
)

// Route is one prefix of a table with its origin AS.
type Route struct {
	Prefix   netip.Prefix
	OriginAS uint32
}

const (
	magic  = "FFT1"
	magic6 = "FFT6"
)

// Read decodes a table file.
func Read(r io.Reader) ([]Route, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("table: not a gzip file: %w", err)
	}
	br := bufio.NewReader(zr)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != magic && string(head) != magic6 {
		return nil, errors.New("table: not a fibfleet table file (no FFT1 or FFT6 magic)")
	}
	v6 := string(head) == magic6
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<26 {
		return nil, fmt.Errorf("table: bad route count: %v", err)
	}
	out := make([]Route, 0, n)
	var addr, lo uint64
	for i := uint64(0); i < n; i++ {
		d, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("table: route %d: %w", i, err)
		}
		if v6 {
			if lo, err = binary.ReadUvarint(br); err != nil {
				return nil, fmt.Errorf("table: route %d: %w", i, err)
			}
		}
		l, err := br.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("table: route %d: %w", i, err)
		}
		as, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("table: route %d: %w", i, err)
		}
		addr += d
		var p netip.Prefix
		switch {
		case as > 0xffffffff || !v6 && (addr > 0xffffffff || l > 32) || v6 && l > 128:
			return nil, fmt.Errorf("table: route %d out of range", i)
		case v6:
			var b [16]byte
			binary.BigEndian.PutUint64(b[:8], addr)
			binary.BigEndian.PutUint64(b[8:], lo)
			p = netip.PrefixFrom(netip.AddrFrom16(b), int(l))
		default:
			a := uint32(addr)
			p = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), int(l))
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("table: route %d: %s has host bits set", i, p)
		}
		out = append(out, Route{Prefix: p, OriginAS: uint32(as)})
	}
	return out, nil
}

// Write encodes routes (sorted and deduplicated by prefix; the first origin wins).
func Write(w io.Writer, routes []Route) error {
	rs := slices.Clone(routes)
	slices.SortStableFunc(rs, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
	rs = slices.CompactFunc(rs, func(a, b Route) bool { return a.Prefix == b.Prefix })
	v6 := len(rs) > 0 && rs[0].Prefix.Addr().Is6()
	var buf bytes.Buffer
	buf.WriteString(map[bool]string{false: magic, true: magic6}[v6])
	buf.Write(binary.AppendUvarint(nil, uint64(len(rs))))
	var prev uint64
	for _, r := range rs {
		if r.Prefix.Addr().Is6() != v6 || r.Prefix.Addr().Is4In6() {
			return fmt.Errorf("table: %s: a table holds IPv4 or IPv6 prefixes, not both", r.Prefix)
		}
		var a, lo uint64
		if v6 {
			b := r.Prefix.Masked().Addr().As16()
			a, lo = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
		} else {
			b := r.Prefix.Masked().Addr().As4()
			a = uint64(binary.BigEndian.Uint32(b[:]))
		}
		buf.Write(binary.AppendUvarint(nil, a-prev))
		if v6 {
			buf.Write(binary.AppendUvarint(nil, lo))
		}
		buf.WriteByte(byte(r.Prefix.Bits()))
		buf.Write(binary.AppendUvarint(nil, uint64(r.OriginAS)))
		prev = a
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return err
	}
	return zw.Close()
}
