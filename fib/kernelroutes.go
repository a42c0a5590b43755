package fib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

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
	seq     uint32
	rb      []byte // the answers' buffer
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
	// The message is written straight into the batch: struct nlmsghdr, struct rtmsg,
	// then each rtattr (length, type, data padded to 4 bytes). netlink's request
	// objects built the same bytes with eight allocations a route (1.1 GB of a
	// full-table load's 5.6 GB); TestRouteMessageBytes holds the two to the byte.
	start := len(k.buf)
	k.seq++
	k.buf = binary.NativeEndian.AppendUint32(k.buf, 0) // nlmsg_len, set below
	k.buf = binary.NativeEndian.AppendUint16(k.buf, uint16(typ))
	k.buf = binary.NativeEndian.AppendUint16(k.buf, uint16(unix.NLM_F_REQUEST|flags))
	k.buf = binary.NativeEndian.AppendUint32(k.buf, k.seq)
	k.buf = binary.NativeEndian.AppendUint32(k.buf, 0) // nlmsg_pid: the kernel
	// rtm_family, rtm_dst_len, rtm_src_len, rtm_tos, rtm_table, rtm_protocol,
	// rtm_scope (universe), rtm_type, rtm_flags.
	k.buf = append(k.buf, uint8(family), uint8(p.Bits()), 0, 0, unix.RT_TABLE_UNSPEC, rtprotBGP, unix.RT_SCOPE_UNIVERSE, routeType)
	k.buf = binary.NativeEndian.AppendUint32(k.buf, 0)
	dst := p.Masked().Addr()
	if dst.Is4() {
		a := dst.As4()
		k.attr(unix.RTA_DST, a[:]...)
	} else {
		a := dst.As16()
		k.attr(unix.RTA_DST, a[:]...)
	}
	k.attr32(unix.RTA_TABLE, k.table)
	switch {
	case gw.IsValid() && gw.Is6() && !p.Addr().Is6():
		// An IPv4 route via an IPv6 next hop (RFC 8950): RTA_VIA, struct rtvia (the
		// family, then the address), Linux 5.2 and later.
		a := gw.As16()
		var via [18]byte
		binary.NativeEndian.PutUint16(via[:], unix.AF_INET6)
		copy(via[2:], a[:])
		k.attr(unix.RTA_VIA, via[:]...)
	case gw.IsValid() && gw.Is4():
		a := gw.As4()
		k.attr(unix.RTA_GATEWAY, a[:]...)
	case gw.IsValid():
		a := gw.As16()
		k.attr(unix.RTA_GATEWAY, a[:]...)
	}
	if ifindex > 0 {
		k.attr32(unix.RTA_OIF, uint32(ifindex))
	}
	binary.NativeEndian.PutUint32(k.buf[start:], uint32(len(k.buf)-start))
	k.queued++
	if len(k.buf) >= batchBytes {
		return k.Flush()
	}
	return nil
}

// attr appends an rtattr: its length (header and data, unpadded), its type, the data
// padded to 4 bytes.
func (k *KernelRoutes) attr(typ uint16, data ...byte) {
	k.buf = binary.NativeEndian.AppendUint16(k.buf, uint16(unix.SizeofRtAttr+len(data)))
	k.buf = binary.NativeEndian.AppendUint16(k.buf, typ)
	k.buf = append(k.buf, data...)
	for len(k.buf)%unix.NLMSG_ALIGNTO != 0 {
		k.buf = append(k.buf, 0)
	}
}

func (k *KernelRoutes) attr32(typ uint16, v uint32) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	k.attr(typ, b[:]...)
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
	if k.rb == nil {
		k.rb = make([]byte, 1<<16)
	}
	rb := k.rb
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
