package server

import (
	"context"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/stretchr/testify/assert"
)

// TestNotificationAskedBeforeSessionDropped: a reset or shutdown asked of a peer
// whose session is down (ResetPeer while it is Idle or Active) queued its
// NOTIFICATION where only an established session reads it, so the next session
// sent it and ended as soon as it began: a reset asked when BFD went down after
// the BGP session had, ended the session that came up seconds later. Such a
// leftover is dropped; a NOTIFICATION asked during the session still ends it.
func TestNotificationAskedBeforeSessionDropped(t *testing.T) {
	reset := func() *bgp.BGPMessage {
		return bgp.NewBGPNotificationMessage(bgp.BGP_ERROR_CEASE, bgp.BGP_ERROR_SUB_ADMINISTRATIVE_RESET, nil)
	}
	sentNotification := func(m *MockConnection) bool {
		m.lock.Lock()
		defer m.lock.Unlock()
		for _, b := range m.allMessages {
			if msg, err := bgp.ParseBGPMessage(b); err == nil && msg.Header.Type == bgp.BGP_MSG_NOTIFICATION {
				return true
			}
		}
		return false
	}

	// Asked before: the session outlives it (until the test's context ends).
	m := NewMockConnection()
	p, h := makePeerAndHandler(m)
	t.Cleanup(func() { cleanPeerAndHandler(p, h) })
	p.sendNotification(reset())
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	state, reason := h.established(ctx)
	cancel()
	assert.Equal(t, bgp.FSMState(-1), state, "the session ended on %v, not at the end of the test", reason.Type)
	assert.False(t, sentNotification(m), "a NOTIFICATION asked before the session was sent on it")

	// Asked during: the session sends it and ends.
	m2 := NewMockConnection()
	p2, h2 := makePeerAndHandler(m2)
	t.Cleanup(func() { cleanPeerAndHandler(p2, h2) })
	go func() {
		time.Sleep(100 * time.Millisecond)
		p2.sendNotification(reset())
	}()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel2()
	state, reason = h2.established(ctx2)
	assert.Equal(t, bgp.BGP_FSM_IDLE, state)
	assert.Equal(t, fsmNotificationSent, reason.Type)
}
