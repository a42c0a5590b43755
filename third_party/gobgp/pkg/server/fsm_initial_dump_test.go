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
	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// tcpPipe is one end of a net.Pipe with TCP addresses (established() asks for them).
type tcpPipe struct{ net.Conn }

func (tcpPipe) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 179} }
func (tcpPipe) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 40179} }

// TestKeepalivesWhileInitialDump: the FSM's callback for the transition to
// ESTABLISHED builds the peer's initial Adj-RIB-Out (the Loc-RIB dump), and the
// established state's sender starts only after it returns. A dump that takes longer
// than the peer's hold time (a full table on a busy machine) must not cost the
// session: KEEPALIVEs go out meanwhile. Here the callback takes 3.5 keepalive
// intervals; before the fix the peer received nothing during it.
func TestKeepalivesWhileInitialDump(t *testing.T) {
	local, remote := net.Pipe()
	fsm := newFSM(&oc.Global{}, &oc.Neighbor{}, bgp.BGP_FSM_OPENCONFIRM, slog.Default())
	fsm.conn = tcpPipe{local}
	fsm.recvOpen = open() // the peer's OPEN, read in OPENSENT
	fsm.lock.Lock()
	conf := fsm.pConf.ReadCopy()
	// Negotiated again on the transition, from these and the peer's OPEN (hold 303 s).
	conf.Timers.Config.HoldTime = 3
	conf.Timers.Config.KeepaliveInterval = 1
	conf.Timers.State.NegotiatedHoldTime = 3
	conf.Timers.State.KeepaliveInterval = 1
	fsm.pConf.Update(&conf)
	fsm.lock.Unlock()

	const dump = 3500 * time.Millisecond
	var dumpStart, dumpEnd time.Time
	dumped := make(chan struct{})
	h := &fsmHandler{fsm: fsm, outgoing: channels.NewInfiniteChannel(), callback: func(e *fsmMsg) {
		if e.MsgType == fsmMsgStateChange && e.MsgData.(bgp.FSMState) == bgp.BGP_FSM_ESTABLISHED {
			dumpStart = time.Now()
			time.Sleep(dump) // the Loc-RIB dump
			dumpEnd = time.Now()
			close(dumped)
		}
	}}
	fsm.h = h
	t.Cleanup(func() { remote.Close() })

	// The peer's side: every message's type and when it arrived.
	type arrival struct {
		at  time.Time
		typ uint8
	}
	var mu sync.Mutex
	var got []arrival
	go func() {
		hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
		for {
			if _, err := io.ReadFull(remote, hdr); err != nil {
				return
			}
			at := time.Now()
			body := make([]byte, int(hdr[16])<<8|int(hdr[17])-bgp.BGP_HEADER_LENGTH)
			if _, err := io.ReadFull(remote, body); err != nil {
				return
			}
			mu.Lock()
			got = append(got, arrival{at, hdr[18]})
			mu.Unlock()
		}
	}()

	ctx, cancel := context.WithCancel(t.Context())
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.loop(ctx, wg)
	b, _ := bgp.NewBGPKeepAliveMessage().Serialize()
	_, err := remote.Write(b) // the peer's KEEPALIVE: OPENCONFIRM -> ESTABLISHED
	require.NoError(t, err)
	select {
	case <-dumped:
	case <-time.After(10 * time.Second):
		t.Fatal("the transition to ESTABLISHED never ran its callback")
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	keepalives := 0
	for _, a := range got {
		if a.typ == bgp.BGP_MSG_KEEPALIVE && a.at.After(dumpStart) && a.at.Before(dumpEnd) {
			keepalives++
		}
	}
	// 3.5 intervals of 1 s: at least 2 even on a slow machine (3 s without any is a
	// hold timer expiry at the peer).
	require.GreaterOrEqual(t, keepalives, 2, "KEEPALIVEs the peer received during a %v initial dump (hold time 3 s)", dump)
}
