package server

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollisionResolvedByIdentifier: two speakers connecting to each other at once
// each hold two connections in OpenSent; both must keep the same one, the one the
// speaker with the higher BGP Identifier made (RFC 4271 6.8), and close the other.
// OpenSent took this speaker's connection whenever the peer's OPEN came on it before
// the accepted connection's, and left the accepted one open; and went on with the
// accepted one when its OPEN came first while this speaker's own OPEN was still
// unanswered. Two speakers doing either in opposite ways each waited on a different
// connection until a hold timer. When this speaker's connection is the one to keep
// but fails before its OPEN comes (the peer took its own in Active), the accepted
// one is kept after all. The peer's OPEN here has BGP Identifier 100.4.10.3.
func TestCollisionResolvedByIdentifier(t *testing.T) {
	const (
		lower  = "1.1.1.1"   // the peer's connection is kept
		higher = "200.0.0.1" // this speaker's is kept
	)
	setup := func(t *testing.T, routerID string) (*fsmHandler, *MockConnection, *MockConnection) {
		in, out := NewMockConnection(), NewMockConnection()
		p, h := makePeerAndHandler(in)
		t.Cleanup(func() { cleanPeerAndHandler(p, h); out.Close() })
		p.fsm.opensentHoldTime = 30
		p.fsm.gConf.Config.RouterId = netip.MustParseAddr(routerID)
		conf := p.fsm.pConf.ReadCopy()
		conf.Config.PeerAs = 100000
		conf.Config.LocalAs = 65001
		p.fsm.pConf.Update(&conf)
		// A manager whose connection sent an OPEN, none came yet; it runs no
		// goroutine, so only OpenSent cancels its context.
		ocm := &outgoingConnManager{fsm: p.fsm}
		ocm.ctx, ocm.cancel = context.WithCancel(t.Context())
		ocm.state.Store(bgp.BGP_FSM_OPENSENT)
		p.fsm.outgoingConnMgr = ocm
		return h, in, out
	}
	type result struct {
		state  bgp.FSMState
		reason *fsmStateReason
	}
	run := func(h *fsmHandler) <-chan result {
		done := make(chan result, 1)
		go func() {
			s, r := h.opensent(t.Context())
			done <- result{s, r}
		}()
		return done
	}
	sent := func(m *MockConnection, typ uint8) bool {
		for _, b := range m.GetSentMessages() {
			if msg, err := bgp.ParseBGPMessage(b); err == nil && msg.Header.Type == typ {
				if typ != bgp.BGP_MSG_NOTIFICATION {
					return true
				}
				n := msg.Body.(*bgp.BGPNotification)
				return n.ErrorCode == bgp.BGP_ERROR_CEASE && n.ErrorSubcode == bgp.BGP_ERROR_SUB_CONNECTION_COLLISION_RESOLUTION
			}
		}
		return false
	}
	wait := func(t *testing.T, done <-chan result) result {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("OpenSent did not end within 5 s")
			return result{}
		}
	}
	stillWaiting := func(t *testing.T, done <-chan result) {
		t.Helper()
		select {
		case r := <-done:
			t.Fatalf("OpenSent went to %v (%v) on a connection the collision should not keep", r.state, r.reason.Type)
		case <-time.After(200 * time.Millisecond):
		}
	}

	t.Run("outgoing OPEN first, the peer's connection kept", func(t *testing.T) {
		h, in, out := setup(t, lower)
		h.fsm.outgoingConnCh <- outgoingConn{conn: out, open: open()}
		done := run(h)
		stillWaiting(t, done)
		assert.Empty(t, out.GetSentMessages(), "this speaker's connection was answered before the peer's had its OPEN")
		in.PushBgpMessage(open())
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(in), "went on with the connection this speaker made")
		assert.Eventually(t, func() bool { return sent(in, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
		assert.Eventually(t, func() bool { return sent(out, bgp.BGP_MSG_NOTIFICATION) }, time.Second, 10*time.Millisecond,
			"this speaker's connection was not closed with a collision's Cease")
	})
	t.Run("outgoing OPEN first, the peer's connection fails", func(t *testing.T) {
		// The peer took this speaker's connection in Active, before it accepted
		// this one, and closed its own: this speaker's is kept after all.
		h, in, out := setup(t, lower)
		h.fsm.outgoingConnCh <- outgoingConn{conn: out, open: open()}
		done := run(h)
		stillWaiting(t, done)
		in.remote.Close()
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(out), "went on with the connection that failed")
		assert.Eventually(t, func() bool { return sent(out, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
	})
	t.Run("outgoing OPEN first, this speaker's connection kept", func(t *testing.T) {
		h, in, out := setup(t, higher)
		h.fsm.outgoingConnCh <- outgoingConn{conn: out, open: open()}
		r := wait(t, run(h))
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(out), "went on with the accepted connection")
		assert.Eventually(t, func() bool { return sent(in, bgp.BGP_MSG_NOTIFICATION) }, time.Second, 10*time.Millisecond,
			"the accepted connection was left open")
		assert.Eventually(t, func() bool { return sent(out, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
	})
	t.Run("incoming OPEN first, this speaker's connection kept", func(t *testing.T) {
		h, in, out := setup(t, higher)
		done := run(h)
		in.PushBgpMessage(open())
		stillWaiting(t, done)
		assert.Empty(t, in.GetSentMessages(), "the accepted connection was answered before this speaker's own had its OPEN")
		h.fsm.outgoingConnCh <- outgoingConn{conn: out, open: open()}
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(out), "went on with the accepted connection")
		assert.Eventually(t, func() bool { return sent(in, bgp.BGP_MSG_NOTIFICATION) }, time.Second, 10*time.Millisecond,
			"the accepted connection was left open")
		assert.Eventually(t, func() bool { return sent(out, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
	})
	t.Run("incoming OPEN first, this speaker's connection failed", func(t *testing.T) {
		// The peer took its own connection in Active, before it accepted this
		// speaker's, and closed this speaker's: the accepted one is kept after all.
		h, in, _ := setup(t, higher)
		ocm := h.fsm.outgoingConnMgr
		done := run(h)
		in.PushBgpMessage(open())
		stillWaiting(t, done)
		ocm.state.Store(bgp.BGP_FSM_CONNECT) // as its connection's end makes it
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(in), "went on with the connection that failed")
		assert.Eventually(t, func() bool { return sent(in, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
		assert.Error(t, ocm.ctx.Err(), "this speaker's connection manager was kept going")
	})
	t.Run("incoming OPEN first, the peer's connection kept", func(t *testing.T) {
		h, in, _ := setup(t, lower)
		ocm := h.fsm.outgoingConnMgr
		done := run(h)
		in.PushBgpMessage(open())
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(in), "went on with the connection this speaker made")
		assert.Error(t, ocm.ctx.Err(), "this speaker's own connection, its OPEN unanswered, was kept going")
	})
	t.Run("the accepted connection fails, this speaker's goes on", func(t *testing.T) {
		// The peer closes the connection it does not keep (here the one it made,
		// though its identifier is higher): this speaker waits for its own
		// connection's OPEN rather than idle and refuse it.
		h, in, out := setup(t, lower)
		done := run(h)
		in.remote.Close()
		stillWaiting(t, done)
		h.fsm.outgoingConnCh <- outgoingConn{conn: out, open: open()}
		r := wait(t, done)
		require.Equal(t, bgp.BGP_FSM_OPENCONFIRM, r.state)
		assert.True(t, h.fsm.conn == net.Conn(out), "went on with the connection that failed")
		assert.Eventually(t, func() bool { return sent(out, bgp.BGP_MSG_KEEPALIVE) }, time.Second, 10*time.Millisecond)
	})
	t.Run("both connections fail", func(t *testing.T) {
		h, in, _ := setup(t, lower)
		ocm := h.fsm.outgoingConnMgr
		done := run(h)
		in.remote.Close()
		stillWaiting(t, done)
		ocm.state.Store(bgp.BGP_FSM_CONNECT)
		r := wait(t, done)
		assert.Equal(t, bgp.BGP_FSM_IDLE, r.state)
	})
}
