package main

import (
	"log/slog"
	"net/netip"

	"github.com/fibfleet/fibfleet/bgp"
)

// linkZones gives link-local next hops their interface. A peer that sends only a
// link-local IPv6 next hop (RFC 2545; unnumbered and link-local sessions) means "on
// the link towards me", which the address alone does not say: the node asks the kernel
// which interface reaches the peer, once per peer, and writes it as the zone
// (fe80::1%eth1), which the resolver needs.
type linkZones struct {
	towards func(netip.Addr) (string, error)
	log     *slog.Logger
	byPeer  map[netip.Addr]string
}

func newLinkZones(towards func(netip.Addr) (string, error), log *slog.Logger) *linkZones {
	return &linkZones{towards: towards, log: log, byPeer: map[netip.Addr]string{}}
}

// of returns the change's next hop, with the zone of its peer's link when it is a
// link-local address without one. Without a known link it is returned as it is: the
// resolver refuses it and its routes pass to the kernel, logged.
func (z *linkZones) of(c bgp.Change) netip.Addr {
	nh := c.Nexthop
	if !nh.Is6() || !nh.IsLinkLocalUnicast() || nh.Zone() != "" || !c.Peer.IsValid() {
		return nh
	}
	zone, ok := z.byPeer[c.Peer]
	if !ok {
		var err error
		if zone, err = z.towards(c.Peer); err != nil {
			z.log.Warn("link-local next hop: no link towards its BGP peer", "nexthop", nh, "peer", c.Peer, "err", err)
			return nh
		}
		z.byPeer[c.Peer] = zone
	}
	return nh.WithZone(zone)
}
