// Copyright (C) 2026 fibfleet authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or
// implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eapache/channels"

	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestHoldTimerWaitsWhileHandling: the goroutine that reads the peer's messages also
// handles each UPDATE (the server's callback: import, best path, propagation); while
// it does, it reads nothing, and the peer's KEEPALIVEs wait in the socket. On a busy
// machine one UPDATE's handling can outlast the hold time (a full table's dump to
// another peer holding the server, the collector, a watcher at its queue limit): the
// hold timer then expired and blamed the peer, whose KEEPALIVEs were all there,
// unread (a fleet node's mesh session reset four times so). Here one UPDATE's
// handling takes 1.5 hold times while the peer keeps sending KEEPALIVEs: the session
// stays, and the peer is never sent a NOTIFICATION.
func TestHoldTimerWaitsWhileHandling(t *testing.T) {
	local, remote := net.Pipe() // synchronous, as a full socket buffer: unread is unsent
	fsm := newFSM(&oc.Global{}, &oc.Neighbor{}, bgp.BGP_FSM_OPENCONFIRM, slog.Default())
	fsm.conn = tcpPipe{local}
	fsm.recvOpen = open()
	fsm.lock.Lock()
	conf := fsm.pConf.ReadCopy()
	conf.Timers.Config.HoldTime = 3
	conf.Timers.Config.KeepaliveInterval = 1
	conf.Timers.State.NegotiatedHoldTime = 3
	conf.Timers.State.KeepaliveInterval = 1
	fsm.pConf.Update(&conf)
	fsm.lock.Unlock()

	const handling = 4500 * time.Millisecond
	handled := make(chan struct{})
	var once sync.Once
	h := &fsmHandler{fsm: fsm, outgoing: channels.NewInfiniteChannel(), callback: func(e *fsmMsg) {
		if m, ok := e.MsgData.(*bgp.BGPMessage); ok && e.MsgType == fsmMsgBGPMessage && m.Header.Type == bgp.BGP_MSG_UPDATE {
			once.Do(func() {
				time.Sleep(handling) // the server, busy with this UPDATE
				close(handled)
			})
		}
	}}
	fsm.h = h
	t.Cleanup(func() { remote.Close() })

	// The peer reads what it is sent, and notes a NOTIFICATION.
	notified := make(chan uint8, 1)
	go func() {
		hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
		for {
			if _, err := io.ReadFull(remote, hdr); err != nil {
				return
			}
			body := make([]byte, int(hdr[16])<<8|int(hdr[17])-bgp.BGP_HEADER_LENGTH)
			if _, err := io.ReadFull(remote, body); err != nil {
				return
			}
			if hdr[18] == bgp.BGP_MSG_NOTIFICATION && len(body) > 0 {
				select {
				case notified <- body[0]:
				default:
				}
			}
		}
	}()

	ctx, cancel := context.WithCancel(t.Context())
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.loop(ctx, wg)
	t.Cleanup(func() { cancel(); remote.Close(); wg.Wait() })

	// The peer: a KEEPALIVE (to ESTABLISHED), an UPDATE (End-of-RIB), then a
	// KEEPALIVE every second, each written when the speaker reads it.
	keepalive, _ := bgp.NewBGPKeepAliveMessage().Serialize()
	update, _ := bgp.NewBGPUpdateMessage(nil, nil, nil).Serialize()
	peerDone := make(chan struct{})
	go func() {
		defer close(peerDone)
		if _, err := remote.Write(keepalive); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := remote.Write(update); err != nil {
			return
		}
		for range 7 {
			time.Sleep(time.Second)
			if _, err := remote.Write(keepalive); err != nil {
				return
			}
		}
	}()

	select {
	case <-handled:
	case code := <-notified:
		t.Fatalf("the speaker sent a NOTIFICATION (code %d) while it handled the peer's UPDATE for %v (hold time 3 s): it blamed the peer for its own delay", code, handling)
	case <-time.After(15 * time.Second):
		t.Fatal("the UPDATE was never handled")
	}
	// The KEEPALIVEs that waited are read now; the session goes on.
	select {
	case code := <-notified:
		t.Fatalf("the speaker sent a NOTIFICATION (code %d) after handling a long UPDATE, with the peer's KEEPALIVEs waiting", code)
	case <-peerDone:
	case <-time.After(15 * time.Second):
		t.Fatal("the peer's KEEPALIVEs were not read after the UPDATE was handled")
	}
	select {
	case code := <-notified:
		t.Fatalf("NOTIFICATION (code %d) at the end", code)
	default:
	}
}
