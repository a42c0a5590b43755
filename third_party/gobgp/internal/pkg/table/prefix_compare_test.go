package table

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestAddrPrefixOnlyCompareWithoutAllocation: two IP prefixes of one family compare
// as their serializations do, and without an allocation (a full table's lookups
// made two each: 0.26 GB of garbage for one upstream's load).
func TestAddrPrefixOnlyCompareWithoutAllocation(t *testing.T) {
	var nlris []bgp.NLRI
	for _, s := range []string{"10.0.0.0/8", "10.0.0.0/16", "10.1.0.0/16", "9.255.0.0/16", "0.0.0.0/0", "255.255.255.255/32",
		"2001:db8::/32", "2001:db8::/48", "2001:db9::/32", "::/0", "::ffff:10.0.0.0/104"} {
		n, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix(s))
		if err != nil {
			t.Fatal(err)
		}
		nlris = append(nlris, n)
	}
	for _, a := range nlris {
		for _, b := range nlris {
			want := bytes.Compare(addrPrefixOnlySerialize(a), addrPrefixOnlySerialize(b))
			if got := AddrPrefixOnlyCompare(a, b); got != want {
				t.Errorf("AddrPrefixOnlyCompare(%s, %s) = %d, want %d (as serialized)", a, b, got, want)
			}
		}
	}
	a, b := nlris[1], nlris[2]
	if allocs := testing.AllocsPerRun(100, func() { AddrPrefixOnlyCompare(a, b) }); allocs != 0 {
		t.Errorf("comparing two IPv4 prefixes allocates %.0f times, want none", allocs)
	}
	v6a, v6b := nlris[6], nlris[7]
	if allocs := testing.AllocsPerRun(100, func() { AddrPrefixOnlyCompare(v6a, v6b) }); allocs != 0 {
		t.Errorf("comparing two IPv6 prefixes allocates %.0f times, want none", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { tableKey(a) }); allocs != 0 {
		t.Errorf("a prefix's table key allocates %.0f times, want none", allocs)
	}
}
