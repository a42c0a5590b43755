package main

import (
	"errors"
	"log/slog"
	"net"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"github.com/fibfleet/fibfleet/nic"
)

// ports are the interfaces the XDP program runs on, every one also an egress. The
// program counts a redirected frame as forwarded when it hands it to the kernel; what
// the egress driver then does with it only the driver says. ports reads that, at
// each scrape and status request (an ethtool ioctl per interface), so "forwarded"
// and "delivered to the wire" can be told apart.
type ports struct {
	names []string
	mode  string
	// drivers are the ports' drivers by name, read once: an interface keeps its
	// driver for as long as it exists.
	drivers map[string]string
	log     *slog.Logger
	// xmit counts, per egress, the redirected frames its driver did not take; nil
	// when the kernel could not attach it (logged at start).
	xmit *dataplane.XmitMonitor
	// attachments reports the program's XDP links (nil in tests without one).
	attachments func() map[string]dataplane.Attachment
}

func newPorts(names []string, mode string, log *slog.Logger) *ports {
	p := &ports{names: names, mode: mode, drivers: map[string]string{}, log: log}
	for _, n := range names {
		p.drivers[n] = nic.Driver(n)
	}
	return p
}

// interfaces describes each port now.
func (p *ports) interfaces() []nodeapi.Interface {
	var xs map[uint32]dataplane.XmitStats
	if p.xmit != nil {
		var err error
		if xs, err = p.xmit.Stats(); err != nil {
			p.log.Debug("read the transmit-drop counter", "err", err)
		}
	}
	var att map[string]dataplane.Attachment
	if p.attachments != nil {
		att = p.attachments()
	}
	out := make([]nodeapi.Interface, 0, len(p.names))
	for _, n := range p.names {
		i := nodeapi.Interface{Name: n, Mode: p.mode, Driver: p.drivers[n], TxCounted: xs != nil, Attached: att[n].Attached, XDPLink: att[n].LinkID}
		if ifc, err := net.InterfaceByName(n); err == nil {
			if xf, err := nic.ReadXDPFeatures(ifc.Index); err == nil {
				i.XDPFeatures = xf.String()
			}
			x := xs[uint32(ifc.Index)]
			i.TxSent, i.TxDropped = x.Sent, x.Dropped
		}
		if errs, err := nic.XDPErrors(n); err == nil && len(errs) > 0 {
			i.XDPErrors = errs
		}
		out = append(out, i)
	}
	return out
}

// warnUndeliverable logs, once at start, each port that cannot take the frames the
// program redirects to it: the kernel drops them after the program counted them
// forwarded. Where the kernel reports xdp-features (6.3 and later) it says so for
// any driver; before, only a veth whose peer is in this namespace can be checked.
func (p *ports) warnUndeliverable() {
	for _, n := range p.names {
		ifc, err := net.InterfaceByName(n)
		if err != nil {
			continue
		}
		xf, err := nic.ReadXDPFeatures(ifc.Index)
		if err == nil {
			if xf&nic.XDPNdoXmit == 0 {
				p.log.Warn("frames forwarded out of this interface will be dropped by the kernel: its driver takes no redirected frames now (xdp-features lack ndo-xmit; for a veth: its peer needs an XDP program, or GRO on)",
					"interface", n, "driver", p.drivers[n], "xdp_features", xf.String())
			}
			continue
		}
		if !errors.Is(err, nic.ErrUnknown) {
			p.log.Debug("cannot read xdp-features", "interface", n, "err", err)
		}
		peer, isVeth, err := nic.VethPeer(n)
		switch {
		case err != nil:
			p.log.Debug("cannot inspect the veth's peer", "interface", n, "err", err)
		case !isVeth:
		case !peer.Visible:
			p.log.Info("veth peer is in another namespace: this kernel cannot say whether it takes redirected frames (it must run an XDP program or have GRO on); watch fibfleet_xdp_egress_frames_total{result=\"dropped\"}", "interface", n)
		case !peer.XDP && !peer.GRO:
			p.log.Warn("frames forwarded out of this interface will be dropped by the kernel: its veth peer has neither an XDP program nor GRO on",
				"interface", n, "peer", peer.Name)
		}
	}
}
