package main

import (
	"log/slog"
	"net/netip"
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

// of returns a next hop a peer's path gave, with the zone of the peer's link when it
// is a link-local address without one. Without a known link it is returned as it is:
// the resolver refuses it and its routes pass to the kernel, logged.
func (z *linkZones) of(nh, peer netip.Addr) netip.Addr {
	if !nh.Is6() || !nh.IsLinkLocalUnicast() || nh.Zone() != "" || !peer.IsValid() {
		return nh
	}
	zone, ok := z.byPeer[peer]
	if !ok {
		var err error
		if zone, err = z.towards(peer); err != nil {
			z.log.Warn("link-local next hop: no link towards its BGP peer", "nexthop", nh, "peer", peer, "err", err)
			return nh
		}
		z.byPeer[peer] = zone
	}
	return nh.WithZone(zone)
}
