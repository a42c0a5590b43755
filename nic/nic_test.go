package nic

import "testing"

// TestXDPErrorCounter keeps the drivers' XDP transmit and redirect error counters,
// summed over queues under one name, and leaves out the rest: XDP_DROP verdicts are
// the program's choice, not a loss.
func TestXDPErrorCounter(t *testing.T) {
	for name, want := range map[string]string{
		"tx_queue_0_xdp_xmit_errors": "tx_xdp_xmit_errors", // veth, virtio_net
		"tx_queue_3_xdp_xmit_errors": "tx_xdp_xmit_errors",
		"rx_queue_0_xdp_tx_errors":   "rx_xdp_tx_errors",
		"tx_xdp_err":                 "tx_xdp_err", // mlx5
		"rx_xdp_tx_full":             "rx_xdp_tx_full",
		"tx3_xdp_err":                "tx_xdp_err",
		"tx_queue_1_xdp_tx_drops":    "tx_xdp_tx_drops",
		"rx_queue_0_xdp_drops":       "",
		"rx_queue_0_xdp_packets":     "",
		"tx_queue_0_xdp_xmit":        "",
		"rx_errors":                  "",
		"peer_ifindex":               "",
	} {
		got, ok := xdpErrorCounter(name)
		if ok != (want != "") || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestXDPFeaturesString(t *testing.T) {
	for f, want := range map[XDPFeatures]string{
		0:                                "none",
		XDPBasic | XDPRedirect | XDPRxSG: "basic,redirect,rx-sg",
		XDPBasic | XDPNdoXmit | 1<<10:    "basic,ndo-xmit",
		XDPNdoXmit | XDPNdoXmitSG:        "ndo-xmit,ndo-xmit-sg",
	} {
		if got := f.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint64(f), got, want)
		}
	}
}
