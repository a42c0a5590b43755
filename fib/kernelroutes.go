package fib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// KernelRoutes writes routes into a kernel routing table with batched netlink: many
// RTM_NEWROUTE / RTM_DELROUTE messages per sendmsg, instead of one request and one
// acknowledgement per route (`ip -batch` needs ~20 s for 1M routes on this machine
// kind). rtnetlink handles a sendmsg's messages before the call returns and answers
// only failures (no NLM_F_ACK), so Flush knows every outcome when it returns.
type KernelRoutes struct {
	fd      int
	table   uint32
	buf     []byte
	queued  int
	Written uint64 // routes the kernel accepted
	Failed  uint64 // routes it refused
	errs    []error
}

// RTPROT_BGP marks the routes as BGP's (as `ip route` shows: proto bgp).
const rtprotBGP = 186

// batchBytes bounds one sendmsg (about 500 routes).
const batchBytes = 32 << 10

// NewKernelRoutes opens a netlink socket in the calling thread's network namespace
// that writes into routing table tableID (254 is main).
func NewKernelRoutes(tableID uint32) (*KernelRoutes, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("fib: open rtnetlink socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fib: bind rtnetlink socket: %w", err)
	}
	return &KernelRoutes{fd: fd, table: tableID}, nil
}

// Close closes the socket; queued routes are dropped.
func (k *KernelRoutes) Close() error { return unix.Close(k.fd) }

func (k *KernelRoutes) msg(typ, flags int, routeType uint8, p netip.Prefix, gw netip.Addr, ifindex int) error {
	family := unix.AF_INET
	if p.Addr().Is6() {
		family = unix.AF_INET6
	}
	if gw.IsValid() && gw.Is4() && p.Addr().Is6() {
		return fmt.Errorf("fib: kernel route %s via %s: an IPv6 route needs an IPv6 next hop", p, gw)
	}
	req := nl.NewNetlinkRequest(typ, flags)
	m := nl.NewRtMsg()
	m.Family = uint8(family)
	m.Dst_len = uint8(p.Bits())
	m.Table = unix.RT_TABLE_UNSPEC
	m.Protocol = rtprotBGP
	m.Type = routeType
	req.AddData(m)
	req.AddData(nl.NewRtAttr(unix.RTA_DST, p.Masked().Addr().AsSlice()))
	req.AddData(nl.NewRtAttr(unix.RTA_TABLE, binary.NativeEndian.AppendUint32(nil, k.table)))
	switch {
	case gw.IsValid() && gw.Is6() && !p.Addr().Is6():
		// An IPv4 route via an IPv6 next hop (RFC 8950): RTA_VIA, struct rtvia (the
		// family, then the address), Linux 5.2 and later.
		via := binary.NativeEndian.AppendUint16(nil, unix.AF_INET6)
		req.AddData(nl.NewRtAttr(unix.RTA_VIA, append(via, gw.AsSlice()...)))
	case gw.IsValid():
		req.AddData(nl.NewRtAttr(unix.RTA_GATEWAY, gw.AsSlice()))
	}
	if ifindex > 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(ifindex))))
	}
	k.buf = append(k.buf, req.Serialize()...)
	k.queued++
	if len(k.buf) >= batchBytes {
		return k.Flush()
	}
	return nil
}

// Replace queues "route p via gw dev ifindex" (created or replaced).
func (k *KernelRoutes) Replace(p netip.Prefix, gw netip.Addr, ifindex int) error {
	return k.msg(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, unix.RTN_UNICAST, p, gw, ifindex)
}

// ReplaceBlackhole queues "blackhole p" (created or replaced): the kernel drops what
// XDP passes up for a blackholed route, as XDP does.
func (k *KernelRoutes) ReplaceBlackhole(p netip.Prefix) error {
	return k.msg(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, unix.RTN_BLACKHOLE, p, netip.Addr{}, 0)
}

// Delete queues the removal of p.
func (k *KernelRoutes) Delete(p netip.Prefix) error {
	return k.msg(unix.RTM_DELROUTE, 0, unix.RTN_UNSPEC, p, netip.Addr{}, 0)
}

// Flush sends the queued messages and collects the kernel's answers. It returns the
// failures of this flush (at most a few, and how many there were).
func (k *KernelRoutes) Flush() error {
	if len(k.buf) == 0 {
		return nil
	}
	n := k.queued
	buf := k.buf
	k.buf, k.queued = k.buf[:0], 0
	if err := unix.Sendto(k.fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		k.Failed += uint64(n)
		return fmt.Errorf("fib: send %d route messages: %w", n, err)
	}
	failed := k.drain()
	k.Written += uint64(n - failed)
	k.Failed += uint64(failed)
	if failed == 0 {
		return nil
	}
	err := fmt.Errorf("fib: the kernel refused %d of %d routes: %w", failed, n, errors.Join(k.errs...))
	k.errs = nil
	return err
}

// drain reads the error answers waiting on the socket and counts them.
func (k *KernelRoutes) drain() int {
	failed := 0
	rb := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(k.fd, rb, unix.MSG_DONTWAIT)
		if err != nil || n <= 0 {
			return failed
		}
		for off := 0; off+unix.NLMSG_HDRLEN <= n; {
			l := int(binary.NativeEndian.Uint32(rb[off:]))
			typ := binary.NativeEndian.Uint16(rb[off+4:])
			if l < unix.NLMSG_HDRLEN || off+l > n {
				break
			}
			if typ == unix.NLMSG_ERROR && l >= unix.NLMSG_HDRLEN+4 {
				if code := int32(binary.NativeEndian.Uint32(rb[off+unix.NLMSG_HDRLEN:])); code != 0 {
					failed++
					if len(k.errs) < 3 {
						k.errs = append(k.errs, unix.Errno(-code))
					}
				}
			}
			off += (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		}
	}
}
