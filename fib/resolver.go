package fib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NexthopResolver resolves next hops from the kernel's routes, links and neighbours
// (ARP, NDP), and keeps their neighbour entries resolved.
//
// Traffic forwarded in XDP never confirms the kernel's neighbour entries, so they
// would go STALE and a gateway's MAC change could be missed. NexthopResolver makes
// every nexthop's neighbour a kernel-managed entry (NTF_EXT_MANAGED, Linux >= 5.16): the kernel
// resolves it at once and keeps re-probing it, and each change reaches Watch.
type NexthopResolver struct {
	h   *netlink.Handle
	log *slog.Logger
}

// NewNexthopResolver resolves in the calling process's network namespace.
func NewNexthopResolver(log *slog.Logger) (*NexthopResolver, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("fib: open netlink: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &NexthopResolver{h: h, log: log}, nil
}

// Close releases the netlink handle.
func (k *NexthopResolver) Close() { k.h.Close() }

func usable(state int) bool {
	return state&(netlink.NUD_REACHABLE|netlink.NUD_STALE|netlink.NUD_DELAY|netlink.NUD_PROBE|netlink.NUD_PERMANENT|netlink.NUD_NOARP) != 0
}

// LinkTowards returns the interface the kernel reaches an address through (its zone,
// if it has one): a link-local next hop a BGP peer sends is on the link towards that
// peer.
func (k *NexthopResolver) LinkTowards(a netip.Addr) (string, error) {
	if z := a.Zone(); z != "" {
		return z, nil
	}
	routes, err := k.h.RouteGet(a.AsSlice())
	if err != nil || len(routes) == 0 {
		return "", fmt.Errorf("no kernel route to %s: %w", a, err)
	}
	link, err := k.h.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", fmt.Errorf("link %d towards %s: %w", routes[0].LinkIndex, a, err)
	}
	return link.Attrs().Name, nil
}

// Resolve implements Resolver. An IPv6 link-local next hop must carry its interface
// as its zone (fe80::1%eth0): the address means nothing without it. The neighbour is
// kept without the zone; it is on the resolution's interface.
func (k *NexthopResolver) Resolve(gw netip.Addr) (Resolution, error) {
	var opts netlink.RouteGetOptions
	if zone := gw.Zone(); zone != "" {
		opts.Oif = zone
		gw = gw.WithZone("")
	} else if gw.Is6() && gw.IsLinkLocalUnicast() {
		return Resolution{}, fmt.Errorf("link-local next hop %s has no interface (write it as %s%%eth0)", gw, gw)
	}
	routes, err := k.h.RouteGetWithOptions(gw.AsSlice(), &opts)
	if err != nil || len(routes) == 0 {
		return Resolution{}, fmt.Errorf("no kernel route to next hop %s: %w", gw, err)
	}
	rt := routes[0]
	if rt.Type == unix.RTN_LOCAL {
		return Resolution{}, fmt.Errorf("next hop %s: %w", gw, ErrLocal)
	}
	neigh := gw
	if rt.Gw != nil {
		neigh, _ = netip.AddrFromSlice(rt.Gw)
		neigh = neigh.Unmap()
	}
	link, err := k.h.LinkByIndex(rt.LinkIndex)
	if err != nil {
		return Resolution{}, fmt.Errorf("egress link %d of next hop %s: %w", rt.LinkIndex, gw, err)
	}
	attrs := link.Attrs()
	mtu := attrs.MTU
	if rt.MTU > 0 && rt.MTU < mtu {
		mtu = rt.MTU
	}
	res := Resolution{Neighbor: neigh, Nexthop: dataplane.Nexthop{
		Ifindex: uint32(attrs.Index), SrcMAC: attrs.HardwareAddr, MTU: uint16(min(mtu, 65535)),
	}}
	if len(attrs.HardwareAddr) != 6 {
		// No Ethernet header to write (tunnels, ...): the kernel forwards these.
		return res, nil
	}
	if res.Nexthop.Ifindex, res.Nexthop.VLAN, err = egressPort(link); err != nil {
		return res, fmt.Errorf("next hop %s: %w", gw, err)
	}
	entry, err := k.neighbor(attrs.Index, neigh)
	if err != nil {
		return res, err
	}
	if entry != nil && usable(entry.State) && len(entry.HardwareAddr) == 6 {
		res.Nexthop.DstMAC = entry.HardwareAddr
		res.Nexthop.Resolved = true
	}
	if entry == nil || (entry.FlagsExt&netlink.NTF_EXT_MANAGED == 0 && entry.State&(netlink.NUD_PERMANENT|netlink.NUD_NOARP) == 0) {
		k.manage(attrs.Index, neigh)
	}
	return res, nil
}

// egressPort returns the port XDP sends on for a link, and the 802.1Q tag to send
// with: XDP cannot redirect into a VLAN device, so a VLAN sub-interface's frames leave
// on its parent with the tag in the frame.
func egressPort(link netlink.Link) (uint32, uint16, error) {
	attrs := link.Attrs()
	vlan, ok := link.(*netlink.Vlan)
	if !ok {
		return uint32(attrs.Index), 0, nil
	}
	if vlan.VlanProtocol == netlink.VLAN_PROTOCOL_8021AD {
		return 0, 0, fmt.Errorf("interface %s is 802.1ad: only 802.1Q is forwarded in XDP", attrs.Name)
	}
	if attrs.ParentIndex == 0 || vlan.VlanId < 1 || vlan.VlanId > 4094 {
		return 0, 0, fmt.Errorf("VLAN interface %s: parent %d, id %d", attrs.Name, attrs.ParentIndex, vlan.VlanId)
	}
	return uint32(attrs.ParentIndex), uint16(vlan.VlanId), nil
}

func (k *NexthopResolver) neighbor(ifindex int, ip netip.Addr) (*netlink.Neigh, error) {
	family := netlink.FAMILY_V4
	if ip.Is6() {
		family = netlink.FAMILY_V6
	}
	list, err := k.h.NeighList(ifindex, family)
	if err != nil {
		return nil, fmt.Errorf("list neighbours on ifindex %d: %w", ifindex, err)
	}
	for i := range list {
		if a, ok := netip.AddrFromSlice(list[i].IP); ok && a.Unmap() == ip {
			return &list[i], nil
		}
	}
	return nil, nil
}

// manage turns the neighbour into a kernel-managed entry (keeping a known MAC).
func (k *NexthopResolver) manage(ifindex int, ip netip.Addr) {
	family := netlink.FAMILY_V4
	if ip.Is6() {
		family = netlink.FAMILY_V6
	}
	err := k.h.NeighSet(&netlink.Neigh{LinkIndex: ifindex, Family: family, IP: ip.AsSlice(),
		State: netlink.NUD_NONE, FlagsExt: netlink.NTF_EXT_MANAGED})
	if err != nil {
		k.log.Warn("could not make the next hop's neighbour kernel-managed (needs Linux >= 5.16); it may go stale",
			"neighbor", ip, "err", err)
	}
}

// Release implements Resolver: it deletes the kernel-managed entry made for a neighbour
// no nexthop uses any more, so the kernel stops probing it. Entries the kernel or an
// operator made (not managed) are left alone.
func (k *NexthopResolver) Release(neigh netip.Addr) {
	family := netlink.FAMILY_V4
	if neigh.Is6() {
		family = netlink.FAMILY_V6
	}
	list, err := k.h.NeighList(0, family)
	if err != nil {
		k.log.Warn("list neighbours", "err", err)
		return
	}
	for i := range list {
		n := &list[i]
		if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == neigh && n.FlagsExt&netlink.NTF_EXT_MANAGED != 0 {
			if err := k.h.NeighDel(n); err != nil {
				k.log.Warn("delete managed neighbour", "neighbor", neigh, "err", err)
			}
		}
	}
}

// Watch follows neighbour and link changes and applies them to f until ctx ends:
// a neighbour change re-resolves the nexthops behind that neighbour, a link change
// (MTU, MAC, up/down) re-resolves all, and unresolved nexthops are retried every
// retry interval (a next hop whose route appears later sends no neighbour event).
func (k *NexthopResolver) Watch(ctx context.Context, f *FIB, retry time.Duration) error {
	neighCh := make(chan netlink.NeighUpdate, 1024)
	linkCh := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	go func() { <-ctx.Done(); close(done) }()
	errCb := func(err error) { k.log.Warn("netlink subscription", "err", err) }
	if err := netlink.NeighSubscribeWithOptions(neighCh, done, netlink.NeighSubscribeOptions{ErrorCallback: errCb}); err != nil {
		return fmt.Errorf("fib: subscribe to neighbour changes: %w", err)
	}
	if err := netlink.LinkSubscribeWithOptions(linkCh, done, netlink.LinkSubscribeOptions{ErrorCallback: errCb}); err != nil {
		return fmt.Errorf("fib: subscribe to link changes: %w", err)
	}
	tick := time.NewTicker(retry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-neighCh:
			if !ok {
				return errors.New("fib: neighbour subscription closed")
			}
			if a, ok := netip.AddrFromSlice(u.IP); ok {
				f.NeighborChanged(a.Unmap())
			}
		case u, ok := <-linkCh:
			if !ok {
				return errors.New("fib: link subscription closed")
			}
			// A link that lost its carrier or went away: its next hops' groups move
			// to their other members first (one write each), then the nexthops
			// resolve again (the kernel flushed the link's neighbours and routes).
			a := u.Attrs()
			down := u.Header.Type == unix.RTM_DELLINK || a.Flags&net.FlagUp == 0 ||
				a.OperState == netlink.OperDown || a.OperState == netlink.OperLowerLayerDown || a.OperState == netlink.OperNotPresent
			f.SetLinkDown(uint32(a.Index), down, "link")
			f.RefreshAll()
		case <-tick.C:
			f.RetryUnresolved()
		}
	}
}

// LocalSink receives the node's own addresses.
type LocalSink interface {
	AddLocal(netip.Addr) error
	DeleteLocal(netip.Addr) error
}

// WatchLocal keeps sink filled with every address of this network namespace until
// ctx ends, so frames to the node itself (BGP sessions, management) reach the kernel.
// It returns once the existing addresses are in sink, and follows changes after that.
func WatchLocal(ctx context.Context, sink LocalSink, log *slog.Logger) error {
	ch := make(chan netlink.AddrUpdate, 256)
	done := make(chan struct{})
	// Subscribe first, then list: an address added in between is in the list, one
	// removed in between arrives as an event after it.
	if err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{}); err != nil {
		return fmt.Errorf("fib: subscribe to address changes: %w", err)
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		close(done)
		return fmt.Errorf("fib: list local addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			if err := sink.AddLocal(ip.Unmap()); err != nil {
				close(done)
				return err
			}
		}
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-ch:
				if !ok {
					return
				}
				ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
				if !ok {
					continue
				}
				var err error
				if u.NewAddr {
					err = sink.AddLocal(ip.Unmap())
				} else {
					err = sink.DeleteLocal(ip.Unmap())
				}
				if err != nil {
					log.Warn("update local address", "addr", ip, "err", err)
				}
			}
		}
	}()
	return nil
}

// SubnetOf is the subnet of the node's link that a neighbour's address is on (the
// prefix of the node's own address there): what the node announces to its fleet so
// the others resolve next hops on that link through it.
func (k *NexthopResolver) SubnetOf(a netip.Addr) (netip.Prefix, error) {
	family := netlink.FAMILY_V4
	if a.Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := k.h.AddrList(nil, family)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("fib: list the node's addresses: %w", err)
	}
	best := netip.Prefix{}
	for _, ad := range addrs {
		ip, ok := netip.AddrFromSlice(ad.IP)
		if !ok || ad.IPNet == nil {
			continue
		}
		ones, _ := ad.IPNet.Mask.Size()
		p := netip.PrefixFrom(ip.Unmap(), ones).Masked()
		if p.Contains(a.WithZone("")) && p.Bits() > best.Bits() && p.Bits() < p.Addr().BitLen() {
			best = p
		}
	}
	if !best.IsValid() {
		return best, fmt.Errorf("fib: %s is on none of the node's links", a)
	}
	return best, nil
}
