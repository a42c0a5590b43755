package bench

import (
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/fibfleet/fibfleet/rpki"
)

// RealVRPs are the bundled real VRPs (Routinator, April 2024: 9,999, IPv4 only,
// 1.0.0.0 to 5.236.x; rpki/testdata).
func RealVRPs() ([]rpki.VRP, error) {
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "rpki", "testdata", "vrps-routinator-2024-04.csv.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return rpki.ReadCSV(zr)
}

// SynthesizeVRPs makes n VRPs from tables' prefixes, in the proportion of the
// families given, as the lab announces them (origin lab.UpstreamASN: BIRD's path):
// 80% valid for their route (max length its own), 10% of another origin (invalid),
// 10% a shorter prefix whose max length stops short of the route (invalid: too
// long). The same seed gives the same VRPs.
func SynthesizeVRPs(n int, seed uint64, tables ...[]table.Route) ([]rpki.VRP, error) {
	var all []table.Route
	for _, t := range tables {
		all = append(all, t...)
	}
	if n > len(all) {
		return nil, fmt.Errorf("bench: %d VRPs from %d routes: at most one per route", n, len(all))
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]rpki.VRP, 0, n)
	for _, i := range rng.Perm(len(all))[:n] {
		r := all[i]
		v := rpki.VRP{Prefix: r.Prefix, MaxLength: r.Prefix.Bits(), ASN: lab.UpstreamASN}
		switch k := rng.IntN(10); {
		case k == 0:
			v.ASN = 64999
		case k == 1 && r.Prefix.Bits() > 8:
			v.Prefix, _ = r.Prefix.Addr().Prefix(r.Prefix.Bits() - 1)
			v.MaxLength = v.Prefix.Bits()
		}
		out = append(out, v)
	}
	return out, nil
}
