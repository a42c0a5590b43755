package table

import (
	"bytes"
	"net/netip"
	"testing"
)

func TestBundledTables(t *testing.T) {
	for _, c := range []struct {
		name   string
		load   func() ([]Route, error)
		count  int
		longer int
		spot   map[string]uint32
	}{
		{"2026", Real2026, 1168945, 0, map[string]uint32{"1.1.1.0/24": 13335, "8.8.8.0/24": 15169, "193.0.0.0/21": 3333, "17.0.0.0/8": 714}},
		{"2016", CAIDA2016, 656331, 11850, nil},
		// IPv6: "longer" counts prefixes longer than /48.
		{"2026v6", Real2026v6, 279855, 0, map[string]uint32{"2001::/32": 6939, "2000:b70:25::/48": 262191}},
		{"ris2024v6", RIS2024v6, 256383, 8601, map[string]uint32{"::/0": 3204}},
	} {
		routes, err := c.load()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		longer := 0
		byPrefix := map[netip.Prefix]uint32{}
		for _, r := range routes {
			if r.Prefix.Addr().Is4() && r.Prefix.Bits() > 24 || r.Prefix.Addr().Is6() && r.Prefix.Bits() > 48 {
				longer++
			}
			byPrefix[r.Prefix] = r.OriginAS
		}
		if len(routes) != c.count || len(byPrefix) != c.count || longer != c.longer {
			t.Errorf("%s: %d routes (%d unique), %d longer than /24; want %d, %d", c.name, len(routes), len(byPrefix), longer, c.count, c.longer)
		}
		for p, as := range c.spot {
			if got := byPrefix[netip.MustParsePrefix(p)]; got != as {
				t.Errorf("%s: %s origin AS%d, want AS%d", c.name, p, got, as)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	in := []Route{
		{netip.MustParsePrefix("10.0.0.0/8"), 1},
		{netip.MustParsePrefix("0.0.0.0/0"), 0},
		{netip.MustParsePrefix("255.255.255.255/32"), 4200000000},
		{netip.MustParsePrefix("10.0.0.0/8"), 2}, // duplicate prefix: the first origin wins
		{netip.MustParsePrefix("10.0.0.0/24"), 3},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{in[1], in[0], in[4], in[2]}
	if len(out) != len(want) {
		t.Fatalf("read %v, want %v", out, want)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("route %d: %v, want %v", i, out[i], want[i])
		}
	}
	if _, err := Read(bytes.NewReader([]byte("not gzip"))); err == nil {
		t.Error("garbage was read as a table")
	}
}

func TestRoundTripIPv6(t *testing.T) {
	in := []Route{
		{netip.MustParsePrefix("2001:db8::/32"), 64500},
		{netip.MustParsePrefix("::/0"), 0},
		{netip.MustParsePrefix("2001:db8:0:0:8000::1/128"), 7}, // low 64 bits set
		{netip.MustParsePrefix("2001:db8::/48"), 9},
		{netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120"), 4200000000},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{in[1], in[0], in[3], in[2], in[4]}
	if len(out) != len(want) {
		t.Fatalf("read %v, want %v", out, want)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("route %d: %v, want %v", i, out[i], want[i])
		}
	}
	mixed := []Route{{netip.MustParsePrefix("10.0.0.0/8"), 1}, {netip.MustParsePrefix("2001:db8::/32"), 2}}
	if err := Write(&buf, mixed); err == nil {
		t.Error("a table mixing IPv4 and IPv6 was written")
	}
}
