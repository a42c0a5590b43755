package table

import (
	"bytes"
	"compress/gzip"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestAttrModel(t *testing.T) {
	m, err := Attrs2014()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Transits) != 1623 || math.Abs(m.SetsPerPrefix-0.3303) > 1e-9 {
		t.Fatalf("model: %d transit sets, %v sets per prefix; want 1623 and 0.3303 (the bundled file)", len(m.Transits), m.SetsPerPrefix)
	}
	all, err := Real2026()
	if err != nil {
		t.Fatal(err)
	}
	sets, of := m.Assign(all)
	if len(of) != len(all) {
		t.Fatalf("%d indexes for %d routes", len(of), len(all))
	}
	ratio := float64(len(sets)) / float64(len(all))
	t.Logf("the 2026 table: %d routes, %d attribute sets (%.3f per prefix)", len(all), len(sets), ratio)
	if ratio < 0.25 || ratio > 0.45 {
		t.Errorf("%.3f sets per prefix, want about the model's 0.33", ratio)
	}
	comms := 0
	for i, r := range all {
		a := sets[of[i]]
		if len(a.Path) < 2 {
			t.Fatalf("%s: path %v, want a transit path and the origin", r.Prefix, a.Path)
		}
		if PublicASN(r.OriginAS) && a.Path[len(a.Path)-1] != r.OriginAS {
			t.Fatalf("%s: path %v does not end in its origin AS%d", r.Prefix, a.Path, r.OriginAS)
		}
		if slices.ContainsFunc(a.Path, reservedASN) {
			t.Fatalf("%s: path %v carries a reserved AS", r.Prefix, a.Path)
		}
		comms += len(a.Communities)
	}
	if comms == 0 {
		t.Error("no route carries a community")
	}
	// The same table gets the same attributes.
	sets2, of2 := m.Assign(all)
	if !slices.Equal(of, of2) || len(sets) != len(sets2) || !slices.Equal(sets[len(sets)-1].Path, sets2[len(sets2)-1].Path) {
		t.Error("two assignments of the same table differ")
	}
}

func TestReadModelErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"sets_per_prefix 0.3\n1 2 3\n", "no '|'"},
		{"sets_per_prefix 2\n1 2|\n", "sets_per_prefix"},
		{"sets_per_prefix 0.3\n1 x|\n", "AS \"x\""},
		{"sets_per_prefix 0.3\n1 2|70000:1\n", "community"},
		{"1 2|1:1\n", "no sets_per_prefix"},
	} {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(tc.body))
		zw.Close()
		if _, err := ReadModel(&b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.body, err, tc.want)
		}
	}
}
