package table

import "embed"

//go:embed testdata/*.fft.gz
var bundled embed.FS

// Real2026 is the full IPv4 table of 2026-06-19: 1,168,945 prefixes, none longer than /24.
func Real2026() ([]Route, error) { return open("testdata/ipv4-2026-06-19.fft.gz") }

// CAIDA2016 is the RouteViews table of 2016-09-26: 656,331 prefixes, 11,850 of them
// longer than /24.
func CAIDA2016() ([]Route, error) { return open("testdata/ipv4-caida-2016-09-26.fft.gz") }

func open(name string) ([]Route, error) {
	f, err := bundled.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
