package bgp

import (
	"fmt"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// Path is one path of a prefix as this node's BGP holds it.
type Path struct {
	Prefix netip.Prefix
	// Neighbor sent it; invalid for this node's own (an announcement, a mesh
	// origination).
	Neighbor netip.Addr
	// Best is the path the node selected (the FIB's); Refused, when set, is why the
	// neighbour's import rules refused it (it is only in the neighbour's
	// Adj-RIB-In).
	Best             bool
	Refused          string
	Nexthop          netip.Addr
	ASPath           []uint32
	Communities      []string
	LargeCommunities []string
	LocalPref        uint32
	MED              uint32
	HasMED           bool
	// RPKI is the route's origin validation state (valid, invalid, not_found), when
	// the node validates origins.
	RPKI string
}

// Paths lists every path towards a destination: for an address its longest match,
// for a prefix that prefix; the paths in the table (the best first), then those an
// upstream sent that its import rules refused. Each is one lookup of one prefix in
// GoBGP, not a walk of the table.
func (s *Speaker) Paths(q string) ([]Path, error) {
	family, err := queryFamily(q)
	if err != nil {
		return nil, err
	}
	var out []Path
	err = s.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: family, Prefixes: []*apiutil.LookupPrefix{{Prefix: q}}},
		func(_ bgp.NLRI, paths []*apiutil.Path) {
			for _, p := range paths {
				out = append(out, s.withRPKI(toPath(p)))
			}
		})
	if err != nil {
		return nil, fmt.Errorf("bgp: look %s up: %w", q, err)
	}
	s.mu.Lock()
	var upstreams []PeerStatus
	for _, p := range s.peers {
		if !p.Mesh {
			upstreams = append(upstreams, *p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(upstreams, func(a, b PeerStatus) int { return a.Address.Compare(b.Address) })
	for _, up := range upstreams {
		err := s.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_ADJ_IN, Name: up.Address.String(), Family: family,
			Prefixes: []*apiutil.LookupPrefix{{Prefix: q}}}, func(_ bgp.NLRI, paths []*apiutil.Path) {
			for _, p := range paths {
				n, ok := p.Nlri.(*bgp.IPAddrPrefix)
				if !ok {
					continue
				}
				if why := s.importFilter.reason(up.Address, up.ASN, n.Prefix, p.Attrs); why != "" {
					path := s.withRPKI(toPath(p))
					path.Best, path.Refused = false, why
					out = append(out, path)
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("bgp: look %s up in what %s sent: %w", q, up.Address, err)
		}
	}
	return out, nil
}

// queryFamily is the family of an address or prefix.
func queryFamily(q string) (bgp.Family, error) {
	a, err := netip.ParseAddr(q)
	if err != nil {
		p, perr := netip.ParsePrefix(q)
		if perr != nil {
			return 0, fmt.Errorf("bgp: %q is neither an address nor a prefix", q)
		}
		a = p.Addr()
	}
	if a.Is4() {
		return bgp.RF_IPv4_UC, nil
	}
	return bgp.RF_IPv6_UC, nil
}

func toPath(p *apiutil.Path) Path {
	out := Path{Neighbor: p.PeerAddress, Best: p.Best, LocalPref: 100}
	if n, ok := p.Nlri.(*bgp.IPAddrPrefix); ok {
		out.Prefix = n.Prefix
	}
	if out.Neighbor.IsUnspecified() {
		out.Neighbor = netip.Addr{}
	}
	for _, a := range p.Attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeAsPath:
			for _, seg := range a.Value {
				out.ASPath = append(out.ASPath, seg.GetAS()...)
			}
		case *bgp.PathAttributeNextHop:
			out.Nexthop = a.Value
		case *bgp.PathAttributeMpReachNLRI:
			if !out.Nexthop.IsValid() {
				out.Nexthop = a.Nexthop
			}
		case *bgp.PathAttributeCommunities:
			for _, c := range a.Value {
				out.Communities = append(out.Communities, fmt.Sprintf("%d:%d", c>>16, c&0xffff))
			}
		case *bgp.PathAttributeLargeCommunities:
			for _, c := range a.Values {
				out.LargeCommunities = append(out.LargeCommunities, fmt.Sprintf("%d:%d:%d", c.ASN, c.LocalData1, c.LocalData2))
			}
		case *bgp.PathAttributeLocalPref:
			out.LocalPref = a.Value
		case *bgp.PathAttributeMultiExitDisc:
			out.MED, out.HasMED = a.Value, true
		}
	}
	return out
}

// withRPKI sets a path's origin validation state, when the node validates origins.
func (s *Speaker) withRPKI(p Path) Path {
	rov := s.importFilter.rov.Load()
	if rov == nil || !p.Neighbor.IsValid() {
		return p
	}
	origin := uint32(0)
	if n := len(p.ASPath); n > 0 {
		origin = p.ASPath[n-1]
	}
	p.RPKI = rov.v.Validate(p.Prefix, origin).String()
	return p
}
