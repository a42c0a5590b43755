package table

import (
	"compress/gzip"
	"embed"
	"io"
)

//go:embed testdata/*.fft.gz testdata/*.csv.gz testdata/*.txt.gz
var bundled embed.FS

// Real2026 is the full IPv4 table of 2026-06-19: 1,168,945 prefixes, none longer than /24.
func Real2026() ([]Route, error) { return open("testdata/ipv4-2026-06-19.fft.gz") }

// CAIDA2016 is the RouteViews table of 2016-09-26: 656,331 prefixes, 11,850 of them
// longer than /24.
func CAIDA2016() ([]Route, error) { return open("testdata/ipv4-caida-2016-09-26.fft.gz") }

// Real2026v6 is the full IPv6 table of 2026-06-19: 279,855 prefixes, none longer than /48.
func Real2026v6() ([]Route, error) { return open("testdata/ipv6-2026-06-19.fft.gz") }

// RIS2024v6 is RIPE RIS's IPv6 view of 2024-12-20, combined over all its peers: 256k
// prefixes, ::/0 and some longer than /48 (seen by few peers) included.
func RIS2024v6() ([]Route, error) { return open("testdata/ipv6-ris-2024-12-20.fft.gz") }

func open(name string) ([]Route, error) {
	f, err := bundled.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// VRPs2024 is 9,999 real validated ROA payloads (Routinator's CSV of April 2024, IPv4
// only, 1.0.0.0 to 5.236.x): rpki.ReadCSV reads it. Close it when done.
func VRPs2024() (io.ReadCloser, error) {
	f, err := bundled.Open("testdata/vrps-routinator-2024-04.csv.gz")
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// Attrs2014 is the attribute model of RouteViews route-views2's RIB of 2014-05-23
// (its first megabyte): the peer with the most distinct attribute sets, AS2152, with
// 1,623 real transit paths and their communities (a median of ten per route) and
// 0.33 distinct sets per prefix. Model.Assign gives a table its attributes.
func Attrs2014() (Model, error) {
	f, err := bundled.Open("testdata/attrs-routeviews-2014-05-23.txt.gz")
	if err != nil {
		return Model{}, err
	}
	defer f.Close()
	return ReadModel(f)
}
