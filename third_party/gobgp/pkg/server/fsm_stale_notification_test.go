package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNotificationAskedBeforeSessionDropped: a reset or shutdown asked of a peer
// whose session is down (ResetPeer while it is Idle or Active) queued its
// NOTIFICATION where only an established session reads it, so the next session
// sent it and ended as soon as it began: a reset asked when BFD went down after
// the BGP session had, ended the session that came up seconds later. Such a
// leftover is dropped as the session becomes established, before the transition's
// callback (which builds the initial dump): a NOTIFICATION asked in that callback
// or during the session still ends it.
func TestNotificationAskedBeforeSessionDropped(t *testing.T) {
	shutdown := func() *bgp.BGPMessage {
		return bgp.NewBGPNotificationMessage(bgp.BGP_ERROR_CEASE, bgp.BGP_ERROR_SUB_ADMINISTRATIVE_SHUTDOWN, nil)
	}
	reset := func() *bgp.BGPMessage {
		return bgp.NewBGPNotificationMessage(bgp.BGP_ERROR_CEASE, bgp.BGP_ERROR_SUB_ADMINISTRATIVE_RESET, nil)
	}
	// sent lists the subcodes of the NOTIFICATIONs written on m.
	sent := func(m *MockConnection) []uint8 {
		var subcodes []uint8
		for _, b := range m.GetSentMessages() {
			if msg, err := bgp.ParseBGPMessage(b); err == nil && msg.Header.Type == bgp.BGP_MSG_NOTIFICATION {
				subcodes = append(subcodes, msg.Body.(*bgp.BGPNotification).ErrorSubcode)
			}
		}
		return subcodes
	}
	// fromOpenConfirm runs the FSM's loop from OpenConfirm, with a shutdown asked
	// before, until the peer's KEEPALIVE makes the session established; inCallback
	// is called in the transition's callback.
	fromOpenConfirm := func(t *testing.T, inCallback func(p *peer)) (*MockConnection, *fsmHandler) {
		m := NewMockConnection()
		m.SetRemoteAddr("127.0.0.1")
		p, h := makePeerAndHandler(m)
		h.callback = func(msg *fsmMsg) {
			if msg.MsgData == bgp.BGP_FSM_ESTABLISHED {
				inCallback(p)
			}
		}
		p.fsm.state.Store(bgp.BGP_FSM_OPENCONFIRM)
		p.fsm.recvOpen = open() // the peer's, received in OpenSent
		p.sendNotification(shutdown())
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Add(1)
		go h.loop(ctx, &wg)
		t.Cleanup(func() {
			cancel()
			m.Close()
			wg.Wait()
			h.outgoing.Close()
		})
		m.PushBgpMessage(bgp.NewBGPKeepAliveMessage())
		return m, h
	}

	t.Run("asked before", func(t *testing.T) {
		m, h := fromOpenConfirm(t, func(*peer) {})
		require.Eventually(t, func() bool { return h.fsm.state.Load() == bgp.BGP_FSM_ESTABLISHED }, 5*time.Second, 10*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		assert.Equal(t, bgp.BGP_FSM_ESTABLISHED, h.fsm.state.Load(), "the session ended")
		assert.Empty(t, sent(m), "a NOTIFICATION asked before the session was sent on it")
	})
	t.Run("asked in the transition's callback", func(t *testing.T) {
		m, _ := fromOpenConfirm(t, func(p *peer) { p.sendNotification(reset()) })
		require.Eventually(t, func() bool { return len(sent(m)) > 0 }, 5*time.Second, 10*time.Millisecond,
			"a reset asked as the session became established was not sent")
		assert.Equal(t, []uint8{bgp.BGP_ERROR_SUB_ADMINISTRATIVE_RESET}, sent(m), "want the reset alone, not the shutdown asked before")
	})
	t.Run("asked during the session", func(t *testing.T) {
		m, h := fromOpenConfirm(t, func(*peer) {})
		require.Eventually(t, func() bool { return h.fsm.state.Load() == bgp.BGP_FSM_ESTABLISHED }, 5*time.Second, 10*time.Millisecond)
		nonblockSendChannel(h.fsm.notification, reset())
		require.Eventually(t, func() bool { return len(sent(m)) > 0 }, 5*time.Second, 10*time.Millisecond,
			"a reset asked of an established session was not sent")
		assert.Equal(t, []uint8{bgp.BGP_ERROR_SUB_ADMINISTRATIVE_RESET}, sent(m), "want the reset alone, not the shutdown asked before")
	})
}
