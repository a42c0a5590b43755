//go:build linux

package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestCloseResetsWhenThePeerIsDeaf: a connection whose peer's acknowledgements
// never arrive (GTSM's minimum TTL 255 against a peer sending at TTL 1, as BIRD
// does for an eBGP peer without ttl security) is closed with a reset the peer sees
// at once; a FIN waited behind the unacknowledged OPEN, and the peer, in OpenSent or
// OpenConfirm, held that connection until its hold timer (90 s in BIRD) and refused
// the speaker's next one as a collision. A connection whose peer acknowledges is
// still closed in order, with a FIN after what was sent.
func TestCloseResetsWhenThePeerIsDeaf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  int // the peer's packets' TTL: below 255 they are dropped
		deaf bool
	}{
		{name: "acknowledgements dropped", ttl: 1, deaf: true},
		{name: "acknowledgements arrive", ttl: 255},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			s := runNewServer(t, 1, "1.1.1.1", int32(port))
			t.Cleanup(func() { _ = s.StopBgp(ctx, &api.StopBgpRequest{}) })
			if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
				Conf:        &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 2},
				Transport:   &api.Transport{PassiveMode: true},
				TtlSecurity: &api.TtlSecurity{Enabled: true, TtlMin: 255},
			}}); err != nil {
				t.Fatal(err)
			}
			// The listener has no minimum TTL (the speaker sets it on the
			// accepted connection, before its OPEN): the handshake completes
			// at any TTL, what follows is dropped below 255.
			d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				if err := c.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TTL, tc.ttl)
				}); err != nil {
					return err
				}
				return serr
			}}
			conn, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			msg := func() (*bgp.BGPMessage, error) {
				head := make([]byte, bgp.BGP_HEADER_LENGTH)
				if _, err := io.ReadFull(conn, head); err != nil {
					return nil, err
				}
				var h bgp.BGPHeader
				if err := h.DecodeFromBytes(head); err != nil {
					return nil, err
				}
				body := make([]byte, int(h.Len)-bgp.BGP_HEADER_LENGTH)
				if _, err := io.ReadFull(conn, body); err != nil {
					return nil, err
				}
				return bgp.ParseBGPBody(&h, body)
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if m, err := msg(); err != nil || m.Header.Type != bgp.BGP_MSG_OPEN {
				t.Fatalf("the speaker's OPEN: %v, %v", m, err)
			}
			// Past the speaker's first retransmission timeout (200 ms and up on
			// loopback): a deaf peer's acknowledgement of the OPEN is lost.
			time.Sleep(time.Second)
			if err := s.DeletePeer(ctx, &api.DeletePeerRequest{Address: "127.0.0.1"}); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			m, err := msg()
			if tc.deaf {
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("after the peer was deleted, the deaf peer read %v, %v: want a reset at once", m, err)
				}
				return
			}
			// In order: whatever was sent (a NOTIFICATION, if any), then the FIN.
			for err == nil && m.Header.Type == bgp.BGP_MSG_NOTIFICATION {
				m, err = msg()
			}
			if err != io.EOF {
				t.Fatalf("after the peer was deleted, the peer read %v, %v: want the end of the stream (a FIN), not a reset", m, err)
			}
		})
	}
}
