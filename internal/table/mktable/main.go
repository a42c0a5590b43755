// Command mktable converts a prefix-to-origin-AS text table into fibfleet's compact
// table format (internal/table). It reads standard input and writes standard output:
//
//	zcat as-prefix-20260619.ipv4.pfx2as.tsv.gz | go run ./internal/table/mktable > t.fft.gz
//	xz -dc routeviews-rv2-20160926-1200.pfx2as.xz | go run ./internal/table/mktable -caida > t.fft.gz
//	zcat as-prefix-20260619.ipv6.pfx2as.tsv.gz | go run ./internal/table/mktable -6 > t6.fft.gz
//	zcat riswhoisdump-20241220.IPv6.gz | go run ./internal/table/mktable -6 -ris > t6.fft.gz
//	bzcat routeviews-rib.20140523.0600_firstMB.bz2 | go run ./internal/table/mktable -mrt > attrs.txt.gz
//
// With -mrt it reads an MRT RIB (TABLE_DUMP_V2) instead and writes an attribute
// model (table.ReadModel): the distinct AS paths (without their origin) and
// communities of the peer with the most distinct attribute sets, and that peer's
// ratio of sets to prefixes. Paths with an AS_SET or a non-public AS are left out.
//
// Lines are "prefix<TAB>asn" (with -caida, CAIDA's "net<TAB>len<TAB>asn", where MOAS
// origins are joined by "_" and AS sets by ","; with -ris, RIPE RIS whois dumps'
// "asn<TAB>prefix<TAB>peers", AS sets in braces; the first AS is kept). Comment lines (#, ;, %) and
// prefixes of the other family (IPv6 without -6, IPv4 with it) are skipped.
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
	ris := flag.Bool("ris", false, "input is a RIPE RIS whois dump: asn, prefix, peers")
	v6 := flag.Bool("6", false, "keep IPv6 prefixes (default: IPv4)")
	mrtIn := flag.Bool("mrt", false, "input is an MRT RIB: write an attribute model")
	flag.Parse()
	if *mrtIn {
		if err := model(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mktable:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*caida, *ris, *v6); err != nil {
		fmt.Fprintln(os.Stderr, "mktable:", err)
		os.Exit(1)
	}
}

func run(caida, ris, v6 bool) error {
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
		case ris && len(f) == 3:
			pfx, as = f[1], f[0]
		case !caida && !ris && len(f) == 2:
			pfx, as = f[0], f[1]
		default:
			return fmt.Errorf("line %d: %q: unexpected columns", n, line)
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if p.Addr().Is4() == v6 || p.Addr().Is4In6() { // IPv4-mapped IPv6 is not routed
			continue
		}
		as = strings.FieldsFunc(as, func(r rune) bool { return strings.ContainsRune("_,{}", r) })[0]
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
