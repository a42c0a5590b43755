package dataplane

import (
	"fmt"
	"strings"
)

// Reason is a stat index of the XDP program: one per action and pass reason.
// The values mirror enum stat_reason in xdp_fwd.c.
type Reason uint32

const (
	Forwarded Reason = iota
	// PassNotIPv4 is neither IPv4 nor IPv6 (the name predates IPv6 forwarding).
	PassNotIPv4
	PassVLAN
	PassMalformed
	PassIPOptions
	PassTTL
	PassMulticast
	PassLocal
	PassNoRoute
	PassUnresolved
	PassMTU
	PassNoTxPort
	PassFIBFull
	DropInternal
	ForwardedV6
	PassHopByHop
	PassLinkLocal
	// DropBlackhole is traffic to a blackholed route (the discard nexthop).
	DropBlackhole
	// PassNoMember is traffic of a route whose next-hop group has no usable member
	// (every one down): the kernel decides.
	PassNoMember
	// PassStale is every frame once the node's heartbeat is past its deadline: no
	// control plane has kept the FIB for the restart time (a node killed and not
	// restarted), so the kernel forwards.
	PassStale
	numReasons
)

var reasonNames = [numReasons]string{
	Forwarded:      "forwarded",
	PassNotIPv4:    "not_ip",
	PassVLAN:       "vlan",
	PassMalformed:  "malformed",
	PassIPOptions:  "ip_options",
	PassTTL:        "ttl",
	PassMulticast:  "multicast",
	PassLocal:      "local",
	PassNoRoute:    "no_route",
	PassUnresolved: "unresolved",
	PassMTU:        "mtu",
	PassNoTxPort:   "no_txport",
	PassFIBFull:    "fib_full",
	DropInternal:   "internal",
	ForwardedV6:    "forwarded_v6",
	PassHopByHop:   "hop_by_hop",
	PassLinkLocal:  "link_local",
	DropBlackhole:  "blackhole",
	PassNoMember:   "no_member",
	PassStale:      "stale",
}

// Reasons lists every stat index in order.
func Reasons() []Reason {
	r := make([]Reason, numReasons)
	for i := range r {
		r[i] = Reason(i)
	}
	return r
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Action is the XDP verdict that frames of this reason get.
func (r Reason) Action() string {
	switch r {
	case Forwarded, ForwardedV6:
		return "redirect"
	case DropInternal, DropBlackhole:
		return "drop"
	}
	return "pass"
}

// Counter is one stat summed over all CPUs.
type Counter struct {
	Packets uint64
	Bytes   uint64
}

// Stats holds every counter, indexed by Reason.
type Stats [numReasons]Counter

// Since returns the counts added to s after before was read.
func (s Stats) Since(before Stats) Stats {
	for r := range s {
		s[r].Packets -= before[r].Packets
		s[r].Bytes -= before[r].Bytes
	}
	return s
}

// Counted lists the reasons that counted packets, with their counts ("forwarded
// 50, no_route 3"): where frames went, for a test or benchmark that missed some.
func (s Stats) Counted() string {
	var c []string
	for r := Reason(0); r < numReasons; r++ {
		if s[r].Packets > 0 {
			c = append(c, fmt.Sprintf("%s %d", r, s[r].Packets))
		}
	}
	return strings.Join(c, ", ")
}

// Passed sums the frames handed to the kernel, whatever the reason.
func (s Stats) Passed() uint64 {
	var n uint64
	for r := Reason(0); r < numReasons; r++ {
		if r.Action() == "pass" {
			n += s[r].Packets
		}
	}
	return n
}
