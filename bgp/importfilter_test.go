package bgp

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/table"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

func asPath(ases ...uint32) *bgp.PathAttributeAsPath {
	if len(ases) == 0 {
		return bgp.NewPathAttributeAsPath(nil)
	}
	return bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, ases)})
}

// TestImportRulesCheck: each rule's case beside valid routes, from an eBGP neighbour
// of AS 3356 to a router of AS 65000, with the safe defaults and with a lab's
// allowances.
func TestImportRulesCheck(t *testing.T) {
	long := make([]uint32, 101)
	for i := range long {
		long[i] = 3356
	}
	safe := &ImportRules{}
	customer := &ImportRules{Prefixes: []PrefixRange{{Prefix: netip.MustParsePrefix("8.8.4.0/22"), MaxLength: 24}, {Prefix: netip.MustParsePrefix("9.9.9.0/24"), MaxLength: 25}},
		OriginASNs: []uint32{15169, 396982}, DenyASNs: []uint32{174}}
	lab := &ImportRules{PrivateASNs: true, AnyLength: true, Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")}}
	trusted := *customer
	trusted.Blackholes = true
	type ruleCase struct {
		rules  *ImportRules
		prefix string
		path   *bgp.PathAttributeAsPath
		want   string
	}
	for _, c := range []ruleCase{
		{safe, "8.8.8.0/24", asPath(3356, 15169), ""},
		{safe, "2001:4860::/32", asPath(3356, 15169), ""},
		{safe, "10.0.0.0/8", asPath(3356), ReasonSpecialPurpose},
		{safe, "172.16.5.0/24", asPath(3356), ReasonSpecialPurpose},
		{safe, "192.168.0.0/16", asPath(3356), ReasonSpecialPurpose},
		{safe, "192.0.2.0/24", asPath(3356), ReasonSpecialPurpose},
		{safe, "198.51.100.0/24", asPath(3356), ReasonSpecialPurpose},
		{safe, "100.64.0.0/10", asPath(3356), ReasonSpecialPurpose},
		{safe, "127.0.0.0/8", asPath(3356), ReasonSpecialPurpose},
		{safe, "224.0.0.0/4", asPath(3356), ReasonSpecialPurpose},
		{safe, "2001:db8::/32", asPath(3356), ReasonSpecialPurpose},
		{safe, "fc00::/7", asPath(3356), ReasonSpecialPurpose},
		{safe, "2001:2::/48", asPath(3356), ReasonSpecialPurpose},
		{safe, "2001::/32", asPath(3356), ""},       // Teredo: special, globally reachable, routed
		{safe, "2001:4:112::/48", asPath(3356), ""}, // AS112: the same
		{safe, "2001:db8:1::/48", asPath(3356), ReasonSpecialPurpose},
		{safe, "0.0.0.0/0", asPath(3356), ReasonDefaultRoute},
		{safe, "::/0", asPath(3356), ReasonDefaultRoute},
		{safe, "8.8.8.0/25", asPath(3356), ReasonTooLong},
		{safe, "8.0.0.0/7", asPath(3356), ReasonTooShort},
		{safe, "2001:4860:1::/64", asPath(3356), ReasonTooLong},
		{safe, "2000::/15", asPath(3356), ReasonTooShort},
		{safe, "8.8.4.0/24", asPath(3356, 64512), ReasonPrivateASN},
		{safe, "8.8.4.0/24", asPath(3356, 4200000000), ReasonPrivateASN},
		{safe, "8.8.4.0/24", asPath(3356, 23456), ReasonReservedASN},
		{safe, "8.8.4.0/24", asPath(3356, 64500), ReasonReservedASN},
		{safe, "8.8.4.0/24", asPath(3356, 0), ReasonReservedASN},
		{safe, "8.8.4.0/24", asPath(long...), ReasonPathTooLong},
		{safe, "8.8.4.0/24", asPath(174, 15169), ReasonFirstAS},
		{safe, "8.8.4.0/24", asPath(), ReasonEmptyPath},
		{safe, "8.8.4.0/24", nil, ReasonEmptyPath},
		{safe, "8.8.4.0/24", asPath(3356, 65000, 15169), ReasonOwnAS},
		{lab, "198.51.100.0/24", asPath(3356, 64512), ""},
		{lab, "198.51.100.0/25", asPath(3356), ""},
		{lab, "2001:db8:400:1::/64", asPath(3356), ""},
		{lab, "203.0.113.0/24", asPath(3356), ReasonSpecialPurpose},
		{&ImportRules{DefaultRoute: true}, "0.0.0.0/0", asPath(3356), ""},
		{&ImportRules{AnyFirstAS: true}, "8.8.4.0/24", asPath(174, 15169), ""},
		{&ImportRules{MaxPathLength: 2}, "8.8.4.0/24", asPath(3356, 174, 15169), ReasonPathTooLong},
		// A customer's prefix list and origin ASes; ASes denied anywhere in the path.
		{customer, "8.8.4.0/22", asPath(3356, 15169), ""},
		{customer, "8.8.5.0/24", asPath(3356, 15169), ""},
		{customer, "8.8.5.0/24", asPath(3356, 396982), ""},
		{customer, "9.9.9.0/24", asPath(3356, 15169), ""},
		{customer, "9.9.9.0/25", asPath(3356, 15169), ReasonTooLong}, // the list allows it; the length rule does not
		{customer, "9.9.8.0/24", asPath(3356, 15169), ReasonPrefixList},
		{customer, "9.9.9.128/25", asPath(3356, 15169), ReasonTooLong},
		{customer, "8.8.0.0/16", asPath(3356, 15169), ReasonPrefixList},
		{customer, "2001:4860::/32", asPath(3356, 15169), ReasonPrefixList},
		{customer, "8.8.4.0/24", asPath(3356, 13335), ReasonOriginAS},
		{customer, "8.8.4.0/24", asPath(3356, 174, 15169), ReasonDeniedAS},
		{&ImportRules{OriginASNs: []uint32{15169}}, "8.8.4.0/24", asPath(3356), ReasonOriginAS},
	} {
		if got := c.rules.check(netip.MustParsePrefix(c.prefix), 3356, 65000, c.path, false); got != c.want {
			t.Errorf("%s via %v: %q, want %q", c.prefix, c.path, got, c.want)
		}
	}
	for _, c := range []struct {
		ruleCase
		blackhole bool
	}{
		// Blackholes (RFC 7999): only from a neighbour allowed to send them, as long as
		// a host, inside its prefix list whatever the list's longest length, and the
		// other rules still apply.
		{ruleCase{customer, "8.8.4.7/32", asPath(3356, 15169), ReasonBlackhole}, true},
		{ruleCase{customer, "8.8.4.0/24", asPath(3356, 15169), ReasonBlackhole}, true},
		{ruleCase{safe, "8.8.8.8/32", asPath(3356, 15169), ReasonBlackhole}, true},
		{ruleCase{&trusted, "8.8.4.7/32", asPath(3356, 15169), ""}, true},
		{ruleCase{&trusted, "9.9.9.9/32", asPath(3356, 15169), ""}, true},
		{ruleCase{&trusted, "8.8.4.0/22", asPath(3356, 15169), ""}, true},
		{ruleCase{&trusted, "8.8.4.7/32", asPath(3356, 15169), ReasonPrefixList}, false}, // without the community: a route like any other
		{ruleCase{&trusted, "9.9.10.1/32", asPath(3356, 15169), ReasonPrefixList}, true},
		{ruleCase{&trusted, "8.8.4.7/32", asPath(3356, 13335), ReasonOriginAS}, true},
		{ruleCase{&trusted, "8.8.4.7/32", asPath(3356, 174, 15169), ReasonDeniedAS}, true},
		{ruleCase{&ImportRules{Blackholes: true}, "2001:4860::8888/128", asPath(3356, 15169), ""}, true},
		{ruleCase{&ImportRules{Blackholes: true}, "10.1.2.3/32", asPath(3356, 15169), ReasonSpecialPurpose}, true},
		{ruleCase{&ImportRules{Blackholes: true}, "8.0.0.0/7", asPath(3356, 15169), ReasonTooShort}, true},
	} {
		if got := c.rules.check(netip.MustParsePrefix(c.prefix), 3356, 65000, c.path, c.blackhole); got != c.want {
			t.Errorf("%s via %v: %q, want %q", c.prefix, c.path, got, c.want)
		}
	}
}

// TestImportRules: a neighbour's announcements through the real speaker: refused
// routes never reach the stream and are counted by reason; rules changed live
// (SetImport) take a route refused before, the session kept.
func TestImportRules(t *testing.T) {
	port := freePort(t)
	peer := netip.MustParseAddr("127.0.0.11")
	node := startNode(t, port, Neighbor{Address: peer, ASN: 65001, Passive: true, Import: &ImportRules{PrivateASNs: true}})
	st := newStream(t, node)
	feeder := newPeer(t, 65001, peer.String(), port)
	announce := feeder.announcePath
	// The feeder prepends its AS 65001 (private: allowed here).
	announce("10.5.0.0/16")       // special purpose
	announce("8.8.8.128/25")      // too long
	announce("0.0.0.0/0")         // the default route
	announce("9.9.9.0/24", 23456) // AS_TRANS
	announce("1.0.0.0/24", 65000) // this router's own AS (GoBGP's loop check drops it first)
	announce("8.8.8.0/24", 15169) // valid
	want := Change{Prefix: netip.MustParsePrefix("8.8.8.0/24"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: peer}
	st.expect(want)
	refused := func() map[string]uint64 { return node.Refused()[peer] }
	deadline := time.Now().Add(10 * time.Second)
	for r := refused(); r[ReasonSpecialPurpose] != 1 || r[ReasonTooLong] != 1 || r[ReasonDefaultRoute] != 1 || r[ReasonReservedASN] != 1; r = refused() {
		if time.Now().After(deadline) {
			t.Fatalf("refused %v, want one each of special_purpose, too_long, default_route, reserved_asn", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What the node holds for a destination: the accepted path, best; a refused one
	// with its reason (from the neighbour's Adj-RIB-In).
	paths, err := node.Paths("8.8.8.1")
	if err != nil || len(paths) != 1 || !paths[0].Best || paths[0].Refused != "" || !slices.Equal(paths[0].ASPath, []uint32{65001, 15169}) || paths[0].Neighbor != peer {
		t.Errorf("Paths(8.8.8.1) = %+v, %v: want the accepted path, best, from %s", paths, err, peer)
	}
	paths, err = node.Paths("10.5.0.0/16")
	if err != nil || len(paths) != 1 || paths[0].Best || paths[0].Refused != ReasonSpecialPurpose {
		t.Errorf("Paths(10.5.0.0/16) = %+v, %v: want the refused path with its reason", paths, err)
	}
	if n := node.RefusedNow()[peer]; n != 4 {
		t.Errorf("refused now: %d, want 4", n)
	}
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.5.0.0/16"))
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("10.1.0.2"))
	if err := feeder.srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}}}}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for node.RefusedNow()[peer] != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("refused now: %d after a refused route's withdrawal, want 3", node.RefusedNow()[peer])
		}
		time.Sleep(20 * time.Millisecond)
	}

	up := node.Peers()[0].Established
	if err := node.SetImport(t.Context(), peer, &ImportRules{PrivateASNs: true, DefaultRoute: true},
		&ImportActions{LocalPref: 200, Communities: []string{"65000:3356"}, LargeCommunities: []string{"65000:1:3356"}}); err != nil {
		t.Fatal(err)
	}
	st.expect(Change{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Nexthop: netip.MustParseAddr("10.1.0.2"), Peer: peer})
	if n := node.RefusedNow()[peer]; n != 2 {
		t.Errorf("refused now after the default route was allowed: %d, want 2", n)
	}
	// The import actions: every accepted route carries them.
	deadline = time.Now().Add(10 * time.Second)
	for {
		paths, err := node.Paths("8.8.8.1")
		if err == nil && len(paths) == 1 && paths[0].LocalPref == 200 && slices.Equal(paths[0].Communities, []string{"65000:3356"}) &&
			slices.Equal(paths[0].LargeCommunities, []string{"65000:1:3356"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Paths(8.8.8.1) = %+v, %v: want local preference 200 and the import's communities", paths, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := node.Peers(); len(p) != 1 || p[0].State != "established" || !p[0].Established.Equal(up) {
		t.Errorf("after SetImport the session is %+v, want it kept (established at %v)", p, up)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k, v := range refused() {
			if v > 0 && !yield(k) {
				return
			}
		}
	}); !slices.Contains(got, ReasonDefaultRoute) {
		t.Errorf("the counts of refusals are kept across rule changes: %v", got)
	}
}

// BenchmarkImportCheck is the cost of the import rules per route of the real 2026
// tables, both families (paths of 2 to 5 ASes), against a full table's load time; it
// fails if the safe defaults refuse a real route.
func BenchmarkImportCheck(b *testing.B) {
	routes, err := table.Real2026()
	if err != nil {
		b.Fatal(err)
	}
	routes6, err := table.Real2026v6()
	if err != nil {
		b.Fatal(err)
	}
	routes = append(routes, routes6...)
	paths := []*bgp.PathAttributeAsPath{asPath(3356, 15169), asPath(3356, 1299, 13335), asPath(3356, 174, 6939, 20940), asPath(3356, 2914, 3257, 6453, 4755)}
	r := &ImportRules{}
	b.ResetTimer()
	refused := 0
	for i := 0; i < b.N; i++ {
		rt := routes[i%len(routes)]
		if r.check(rt.Prefix, 3356, 65000, paths[i%len(paths)], false) != "" {
			refused++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/route")
	if refused > 0 {
		b.Fatalf("%d of %d real routes refused", refused, b.N)
	}
}

// BenchmarkASPathRules compares the AS checks of the import rules (private,
// reserved and own ASes, the first AS, the length) as fibfleet makes them, range
// tests on the path's numbers, with what a GoBGP import policy would run for the
// same: AS-path conditions, which match a regular expression against the path
// written out as text ("3356 15169"), one per AS range. Sub-benchmarks: ranges,
// regexes; each reports ns per path.
func BenchmarkASPathRules(b *testing.B) {
	paths := []*bgp.PathAttributeAsPath{asPath(3356, 15169), asPath(3356, 1299, 13335), asPath(3356, 174, 6939, 20940), asPath(3356, 2914, 3257, 6453, 4755)}
	b.Run("ranges", func(b *testing.B) {
		r := &ImportRules{}
		for i := 0; i < b.N; i++ {
			if r.checkPath(3356, 65000, paths[i%len(paths)]) != "" {
				b.Fatal("a valid path refused")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/path")
	})
	b.Run("regexes", func(b *testing.B) {
		// GoBGP's AS-path sets are regular expressions over the path as text, word
		// boundaries written as "_" and turned into (^|[,{}() ]|$).
		const edge = `(^|[,{}() ]|$)`
		var res []*regexp.Regexp
		for _, r := range []string{
			`(6451[2-9]|645[2-9][0-9]|64[6-9][0-9]{2}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-4])`, // private, 16-bit
			`(42[0-9]{8})`, // private, 32-bit (a superset, as one would write it)
			`(0|23456|65535|6449[6-9]|64[5][0-1][0-9]|4294967295)`, // reserved
			`65000`, // this router's AS
		} {
			res = append(res, regexp.MustCompile(edge+r+edge))
		}
		first := regexp.MustCompile(`^3356` + edge)
		texts := make([]string, len(paths))
		for i, p := range paths {
			var sb strings.Builder
			for _, seg := range p.Value {
				for _, as := range seg.GetAS() {
					if sb.Len() > 0 {
						sb.WriteByte(' ')
					}
					sb.WriteString(strconv.FormatUint(uint64(as), 10))
				}
			}
			texts[i] = sb.String()
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			s := texts[i%len(texts)]
			for _, re := range res {
				if re.MatchString(s) {
					b.Fatalf("%q matched %s", s, re)
				}
			}
			if !first.MatchString(s) {
				b.Fatal("the first AS not matched")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/path")
	})
}
