package rpki

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/internal/table"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// TestValidate: RFC 6811's cases, both families.
func TestValidate(t *testing.T) {
	tb := NewTable([]VRP{
		{pfx("192.0.2.0/24"), 24, 64500},
		{pfx("198.51.100.0/22"), 24, 64501},
		{pfx("198.51.100.0/22"), 22, 64502}, // a second ROA for the same prefix
		{pfx("203.0.113.0/24"), 24, 0},      // AS 0: nobody may originate it
		{pfx("2001:db8::/32"), 48, 64503},
		{pfx("192.0.2.0/24"), 24, 64500}, // a duplicate
	})
	if tb.Len() != 5 {
		t.Errorf("%d VRPs, want 5 (the duplicate once)", tb.Len())
	}
	for _, c := range []struct {
		route  string
		origin uint32
		want   State
	}{
		{"192.0.2.0/24", 64500, Valid},
		{"192.0.2.0/24", 64501, Invalid},    // wrong origin
		{"192.0.2.0/25", 64500, Invalid},    // longer than the max length
		{"198.51.100.0/24", 64501, Valid},   // within the max length
		{"198.51.100.0/23", 64502, Invalid}, // 64502 only for the /22 itself
		{"198.51.100.0/22", 64502, Valid},
		{"198.51.0.0/16", 64501, NotFound}, // shorter than every VRP: none covers it
		{"203.0.113.0/24", 0, Invalid},
		{"203.0.113.0/24", 64500, Invalid},
		{"8.8.8.0/24", 15169, NotFound},
		{"2001:db8:1::/48", 64503, Valid},
		{"2001:db8:1::/56", 64503, Invalid},
		{"2001:db9::/32", 64503, NotFound},
	} {
		if got := tb.Validate(pfx(c.route), c.origin); got != c.want {
			t.Errorf("%s from AS%d: %s, want %s", c.route, c.origin, got, c.want)
		}
	}
}

// TestReadVRPs: Routinator's CSV and the JSON form, with their mistakes named.
func TestReadVRPs(t *testing.T) {
	csv := "ASN,IP Prefix,Max Length,Trust Anchor\nAS13335,1.0.0.0/24,24,apnic\nAS15169,2001:4860::/32,48,arin\n"
	vs, err := ReadCSV(strings.NewReader(csv))
	if err != nil || len(vs) != 2 || vs[0] != (VRP{pfx("1.0.0.0/24"), 24, 13335}) || vs[1].MaxLength != 48 {
		t.Errorf("ReadCSV = %+v, %v", vs, err)
	}
	js := `{"roas": [{"asn": "AS13335", "prefix": "1.0.0.0/24", "maxLength": 24, "ta": "apnic"}, {"asn": 15169, "prefix": "8.8.8.0/24", "maxLength": 24}]}`
	vs, err = ReadJSON(strings.NewReader(js))
	if err != nil || len(vs) != 2 || vs[1] != (VRP{pfx("8.8.8.0/24"), 24, 15169}) {
		t.Errorf("ReadJSON = %+v, %v", vs, err)
	}
	for _, bad := range []string{"AS1,1.0.0.0/24\n", "ASX,1.0.0.0/24,24,x\n", "AS1,1.0.0.0/33,33,x\n", "AS1,1.0.0.0/24,23,x\n", "AS1,1.0.0.0/24,33,x\n"} {
		if _, err := ReadCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadCSV(%q) accepted", bad)
		}
	}
	if _, err := ReadJSON(strings.NewReader(`{"roas": [{"asn": "AS1", "prefix": "1.0.0.0/24", "maxLength": 20}]}`)); err == nil {
		t.Error("a max length shorter than the prefix accepted")
	}
}

// realVRPs are the bundled real VRPs (table.VRPs2024).
func realVRPs() ([]VRP, error) {
	f, err := table.VRPs2024()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCSV(f)
}

// TestReal2026 validates the bundled 2026 IPv4 table (prefix and origin) against the
// bundled real VRPs (Routinator, April 2024, 9,999 VRPs of 1.0.0.0 to 5.236.x): the
// counts per state go to docs/BENCHMARKS.md. Most routes are not found: the VRPs
// cover a sliver of the address space.
func TestReal2026(t *testing.T) {
	vrps, err := realVRPs()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := table.Real2026()
	if err != nil {
		t.Fatal(err)
	}
	tb := NewTable(vrps)
	var counts [3]int
	covered := 0
	for _, r := range routes {
		s := tb.Validate(r.Prefix, r.OriginAS)
		counts[s]++
		if r.Prefix.Addr().Compare(netip.MustParseAddr("6.0.0.0")) < 0 {
			covered++
		}
	}
	t.Logf("%d VRPs; the 2026 table's %d IPv4 routes: valid %d, invalid %d, not found %d (%d routes lie in 0.0.0.0-5.255.255.255, where the VRPs are)",
		tb.Len(), len(routes), counts[Valid], counts[Invalid], counts[NotFound], covered)
	if len(vrps) != 9999 || counts[Valid]+counts[Invalid]+counts[NotFound] != len(routes) {
		t.Fatalf("%d VRPs read, counts %v over %d routes", len(vrps), counts, len(routes))
	}
	if s := tb.Validate(pfx("1.1.1.0/24"), 13335); s != Valid {
		t.Errorf("1.1.1.0/24 from AS13335 (Cloudflare): %s, want valid", s)
	}
	if counts[Valid] == 0 || counts[Invalid] == 0 || counts[NotFound] < len(routes)/2 {
		t.Errorf("counts %v: want some valid, some invalid, most not found", counts)
	}
}

// BenchmarkValidate is one route's validation against the real VRPs.
func BenchmarkValidate(b *testing.B) {
	vrps, err := realVRPs()
	if err != nil {
		b.Fatal(err)
	}
	routes, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	tb := NewTable(vrps)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := routes[i%len(routes)]
		tb.Validate(r.Prefix, r.OriginAS)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/route")
}
