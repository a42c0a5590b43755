package bgp

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// Remotely triggered blackholes (RFC 7999). A route carrying BLACKHOLE asks for its
// traffic to be dropped. From an upstream, only one whose ImportRules allow it
// (Blackholes) is heard; the mesh carries what the fleet's nodes accepted. The
// fleet's own blackholes (AddBlackhole, from `ctl blackhole`) are originated by every
// node, never sent to the mesh (every node holds them already), and sent with
// BLACKHOLE and NO_EXPORT to the upstreams whose Export says Blackholes, so that the
// attack traffic is dropped before it reaches the transit link.

// Well-known communities: BLACKHOLE (RFC 7999) and NO_EXPORT (RFC 1997).
const (
	BlackholeCommunity = "65535:666"
	NoExport           = "65535:65281"
	blackholeValue     = 0xffff029a
)

// hasBlackhole reports a path carrying BLACKHOLE.
func hasBlackhole(attrs []bgp.PathAttributeInterface) bool {
	for _, a := range attrs {
		if c, ok := a.(*bgp.PathAttributeCommunities); ok {
			return slices.Contains(c.Value, blackholeValue)
		}
	}
	return false
}

// AddBlackhole originates a blackhole for a prefix: this node's FIB drops its
// traffic (the path comes back as a Change with Blackhole set, as a neighbour's
// would), and the upstreams whose Export says Blackholes are sent it. Adding it
// again does nothing. A blackhole of a prefix Announce holds stands in for the
// announcement until RemoveBlackhole (GoBGP keeps one local path per prefix).
func (s *Speaker) AddBlackhole(p netip.Prefix) error {
	p = p.Masked()
	s.mu.Lock()
	had := s.blackholes[p]
	s.mu.Unlock()
	if had {
		return nil
	}
	path, err := blackholePath(p)
	if err != nil {
		return err
	}
	if _, err := s.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return fmt.Errorf("bgp: blackhole %s: %w", p, err)
	}
	s.mu.Lock()
	s.blackholes[p] = true
	s.mu.Unlock()
	return nil
}

// RemoveBlackhole withdraws a blackhole AddBlackhole originated, and announces the
// prefix again if Announce holds it.
func (s *Speaker) RemoveBlackhole(p netip.Prefix) error {
	p = p.Masked()
	s.mu.Lock()
	had, announced := s.blackholes[p], s.announced[p]
	delete(s.blackholes, p)
	s.mu.Unlock()
	if !had {
		return nil
	}
	path, err := blackholePath(p)
	if err != nil {
		return err
	}
	if announced {
		// Replacing the local path withdraws the blackhole.
		if path, err = announcePath(p); err == nil {
			_, err = s.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}})
		}
	} else {
		err = s.srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{path}})
	}
	if err != nil {
		return fmt.Errorf("bgp: remove the blackhole of %s: %w", p, err)
	}
	return nil
}

// Blackholes lists the prefixes AddBlackhole holds.
func (s *Speaker) Blackholes() []netip.Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]netip.Prefix, 0, len(s.blackholes))
	for p := range s.blackholes {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefixes)
	return out
}

// blackholePath is a fleet blackhole: an unspecified next hop (GoBGP sends the
// session's local address) and BLACKHOLE; the export policy adds NO_EXPORT.
func blackholePath(p netip.Prefix) (*apiutil.Path, error) {
	path, err := announcePath(p)
	if err != nil {
		return nil, err
	}
	path.Attrs = append(path.Attrs, bgp.NewPathAttributeCommunities([]uint32{blackholeValue}))
	return path, nil
}
