// Command mktable converts a prefix-to-origin-AS text table into fibfleet's compact
// table format (internal/table). It reads standard input and writes standard output:
//
//	zcat as-prefix-20260619.ipv4.pfx2as.tsv.gz | go run ./internal/table/mktable > t.fft.gz
//	xz -dc routeviews-rv2-20160926-1200.pfx2as.xz | go run ./internal/table/mktable -caida > t.fft.gz
//
// Lines are "prefix<TAB>asn" (or, with -caida, CAIDA's "net<TAB>len<TAB>asn", where
// MOAS origins are joined by "_" and AS sets by ","; the first AS is kept). Comment
// lines (#, ;, %) and IPv6 prefixes are skipped.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/fibfleet/fibfleet/internal/table"
)

func main() {
	caida := flag.Bool("caida", false, "input is CAIDA pfx2as: net, len, asn")
	flag.Parse()
	if err := run(*caida); err != nil {
		fmt.Fprintln(os.Stderr, "mktable:", err)
		os.Exit(1)
	}
}

func run(caida bool) error {
	var routes []table.Route
	sc := bufio.NewScanner(os.Stdin)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.ContainsAny(line[:1], "#;%") {
			continue
		}
		f := strings.Fields(line)
		var pfx, as string
		switch {
		case caida && len(f) == 3:
			pfx, as = f[0]+"/"+f[1], f[2]
		case !caida && len(f) == 2:
			pfx, as = f[0], f[1]
		default:
			return fmt.Errorf("line %d: %q: unexpected columns", n, line)
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if !p.Addr().Is4() {
			continue
		}
		as = strings.FieldsFunc(as, func(r rune) bool { return r == '_' || r == ',' })[0]
		asn, err := strconv.ParseUint(as, 10, 32)
		if err != nil {
			return fmt.Errorf("line %d: origin AS %q: %w", n, as, err)
		}
		routes = append(routes, table.Route{Prefix: p.Masked(), OriginAS: uint32(asn)})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return table.Write(os.Stdout, routes)
}
