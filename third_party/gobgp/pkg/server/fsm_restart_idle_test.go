package server

import (
	"context"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/stretchr/testify/assert"
)

// TestIdleNoHoldForRestartingPeer: after a session ends, the FSM idles for its idle
// hold time before it accepts or makes a connection again, except when the peer
// went down restarting gracefully: it is expected back within its restart time, and
// an idle hold would refuse its new connection and spend that time. Once its
// restart timer expired (it missed its restart time; its routes are swept or kept
// long-lived stale), the idle hold applies again as after any session's end.
func TestIdleNoHoldForRestartingPeer(t *testing.T) {
	for _, c := range []struct {
		restarting, expired bool
		want                bgp.FSMState
	}{
		{true, false, bgp.BGP_FSM_ACTIVE},
		{false, false, bgp.FSMState(-1)}, // held until the context ended
		{true, true, bgp.FSMState(-1)},
	} {
		m := NewMockConnection()
		p, h := makePeerAndHandler(m)
		t.Cleanup(func() { cleanPeerAndHandler(p, h) })
		p.fsm.lock.Lock()
		conf := p.fsm.pConf.ReadCopy()
		conf.GracefulRestart.State.Enabled = true
		conf.GracefulRestart.State.PeerRestarting = c.restarting
		p.fsm.pConf.Update(&conf)
		p.fsm.idleHoldTime = holdtimeIdle // as after any session's end
		p.fsm.lock.Unlock()
		h.restartExpired = c.expired

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		start := time.Now()
		state, _ := h.idle(ctx)
		took := time.Since(start)
		cancel()
		assert.Equal(t, c.want, state, "peer restarting: %v, restart timer expired: %v; idle returned after %v", c.restarting, c.expired, took)
		if c.want == bgp.BGP_FSM_ACTIVE {
			assert.Less(t, took, 500*time.Millisecond, "a restarting peer's idle hold")
		}
	}
}
