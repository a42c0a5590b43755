// Package nic asks the kernel what an interface's driver can do with XDP and what it
// lost: its xdp-features, its driver's name, GRO, a veth's peer, and the driver's own
// XDP transmit and redirect error counters. A frame the XDP program redirects is
// "forwarded" in the program's counters whatever the egress driver does with it; these
// are how forwarded and delivered to the wire are told apart.
//
// Everything here reads the network namespace of the calling thread.
package nic

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// XDPFeatures is the netdev family's xdp-features bitmask (enum netdev_xdp_act).
type XDPFeatures uint64

const (
	XDPBasic     XDPFeatures = 1 << 0 // runs XDP programs: XDP_PASS, XDP_DROP, XDP_TX
	XDPRedirect  XDPFeatures = 1 << 1 // its programs may return XDP_REDIRECT
	XDPNdoXmit   XDPFeatures = 1 << 2 // takes frames other interfaces' programs redirect to it
	XDPZeroCopy  XDPFeatures = 1 << 3
	XDPOffload   XDPFeatures = 1 << 4
	XDPRxSG      XDPFeatures = 1 << 5
	XDPNdoXmitSG XDPFeatures = 1 << 6
)

var xdpFeatureNames = []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}

func (f XDPFeatures) String() string {
	var s []string
	for i, n := range xdpFeatureNames {
		if f&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// ErrUnknown says the kernel cannot answer (the netdev netlink family came in 6.3).
var ErrUnknown = errors.New("the kernel does not report xdp-features (Linux 6.3 and later do)")

// The netdev generic netlink family (include/uapi/linux/netdev.h).
const (
	netdevCmdDevGet         = 1
	netdevAttrDevIfindex    = 1
	netdevAttrDevXDPFeature = 3
)

// netdevFamily resolves the netdev family's id once: it is built into the kernel, so
// it neither appears nor changes while the process runs, and every scrape reads
// xdp-features.
var netdevFamily = sync.OnceValues(func() (uint16, error) {
	fam, err := netlink.GenlFamilyGet("netdev")
	if err != nil {
		return 0, err
	}
	return fam.ID, nil
})

// ReadXDPFeatures returns what the interface's driver can do with XDP now. For a
// veth, ndo-xmit follows its peer: set while the peer has an XDP program or GRO on,
// the only states in which the kernel delivers frames redirected to it.
func ReadXDPFeatures(ifindex int) (XDPFeatures, error) {
	id, err := netdevFamily()
	if err != nil {
		return 0, ErrUnknown
	}
	req := nl.NewNetlinkRequest(int(id), 0)
	// The generic netlink header by hand: nl.Genlmsg serializes 4 bytes of a 2-byte
	// struct, so its reserved field is whatever memory follows, and the netdev
	// family (strict validation) refuses a header whose reserved field is not 0.
	req.AddRawData([]byte{netdevCmdDevGet, 1, 0, 0})
	req.AddRawData(nl.NewRtAttr(netdevAttrDevIfindex, nl.Uint32Attr(uint32(ifindex))).Serialize())
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return 0, fmt.Errorf("nic: read xdp-features of ifindex %d: %w", ifindex, err)
	}
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return 0, fmt.Errorf("nic: parse xdp-features of ifindex %d: %w", ifindex, err)
		}
		for _, a := range attrs {
			if a.Attr.Type == netdevAttrDevXDPFeature && len(a.Value) >= 8 {
				return XDPFeatures(nl.NativeEndian().Uint64(a.Value[:8])), nil
			}
		}
	}
	return 0, ErrUnknown
}

// Driver names the interface's driver ("veth", "mlx5_core"), or "unknown".
func Driver(ifname string) string {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return "unknown"
	}
	defer e.Close()
	d, err := e.DriverName(ifname)
	if err != nil || d == "" {
		return "unknown"
	}
	return d
}

// GRO says whether generic receive offload is on.
func GRO(ifname string) (bool, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return false, fmt.Errorf("nic: ethtool: %w", err)
	}
	defer e.Close()
	fs, err := e.Features(ifname)
	if err != nil {
		return false, fmt.Errorf("nic: features of %s: %w", ifname, err)
	}
	return fs["rx-gro"], nil
}

// Peer is what can be seen of a veth's other end.
type Peer struct {
	// Visible is false when the peer lives in another network namespace: then
	// nothing else is known of it here.
	Visible bool
	Name    string
	XDP     bool // an XDP program is attached
	GRO     bool
}

// VethPeer returns the other end of a veth; ok is false when ifname is not a veth.
func VethPeer(ifname string) (p Peer, ok bool, err error) {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return Peer{}, false, fmt.Errorf("nic: interface %s: %w", ifname, err)
	}
	if l.Type() != "veth" {
		return Peer{}, false, nil
	}
	a := l.Attrs()
	if a.NetNsID >= 0 || a.ParentIndex == 0 { // IFLA_LINK_NETNSID: the peer is elsewhere
		return Peer{}, true, nil
	}
	pl, err := netlink.LinkByIndex(a.ParentIndex)
	if err != nil {
		return Peer{}, true, fmt.Errorf("nic: peer of %s: %w", ifname, err)
	}
	p = Peer{Visible: true, Name: pl.Attrs().Name}
	p.XDP = pl.Attrs().Xdp != nil && pl.Attrs().Xdp.Attached
	if p.GRO, err = GRO(p.Name); err != nil {
		return p, true, err
	}
	return p, true, nil
}

// A driver's per-queue counter ("tx_queue_0_xdp_xmit_errors" of veth and
// virtio_net, "tx3_xdp_err" style elsewhere) sums over its queues.
var queuePrefix = regexp.MustCompile(`^(rx|tx)(_queue)?_?[0-9]+_`)

// XDPErrors returns the driver's own counters of XDP frames it failed to transmit or
// redirect, summed over queues and keyed by their name without the queue
// ("tx_xdp_xmit_errors"): counters whose name says XDP and an error, a failure or a
// full ring, or a transmit drop. Drivers without such counters return none. These
// are the frames the program counted as forwarded and the wire never saw.
func XDPErrors(ifname string) (map[string]uint64, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("nic: ethtool: %w", err)
	}
	defer e.Close()
	stats, err := e.Stats(ifname)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil
		}
		return nil, fmt.Errorf("nic: driver statistics of %s: %w", ifname, err)
	}
	out := map[string]uint64{}
	for name, v := range stats {
		if key, ok := xdpErrorCounter(name); ok {
			out[key] += v
		}
	}
	return out, nil
}

func xdpErrorCounter(name string) (string, bool) {
	n := strings.ToLower(name)
	if m := queuePrefix.FindStringSubmatch(n); m != nil {
		n = m[1] + "_" + n[len(m[0]):]
	}
	if !strings.Contains(n, "xdp") {
		return "", false
	}
	words := strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '-' })
	has := func(ws ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool {
			return slices.ContainsFunc(ws, func(p string) bool { return strings.HasPrefix(w, p) })
		})
	}
	// XDP_DROP verdicts ("rx_xdp_drops") are the program's own choice, not a loss.
	if has("err", "fail", "full") || (has("drop", "drops") && strings.HasPrefix(n, "tx")) {
		return n, true
	}
	return "", false
}
