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
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestKeepalivesBetweenChunks: the sender turned a whole queued batch of paths (a
// new peer's initial dump: a full table) into UPDATEs and wrote them all before it
// looked at its keepalive timer again; on a busy machine, or to a peer that reads
// slowly, that outlasts the hold time, and the peer reset the session (a fleet
// node's two mesh peers, each time the node dumped its table to them). Here 20,000
// paths, one UPDATE each, go to a peer that takes several seconds to read them,
// with a keepalive interval of 1 s: KEEPALIVEs arrive among the UPDATEs.
func TestKeepalivesBetweenChunks(t *testing.T) {
	local, remote := net.Pipe() // synchronous: the sender is paced by the reader
	_, h := makePeerAndHandler(tcpPipe{local})
	fsm := h.fsm
	fsm.lock.Lock()
	conf := fsm.pConf.ReadCopy()
	conf.Timers.State.NegotiatedHoldTime = 3
	conf.Timers.State.KeepaliveInterval = 1
	fsm.pConf.Update(&conf)
	fsm.lock.Unlock()

	const n = 20000
	paths := make([]*table.Path, n)
	for i := range paths {
		// A community each: no two paths share an UPDATE.
		paths[i] = makePath(t, fmt.Sprintf("10.%d.%d.0/24", i>>8, i&0xff), "192.0.2.1", uint32(i+1))
	}

	type arrival struct {
		typ     uint8
		updates int // UPDATEs read before it
	}
	var mu sync.Mutex
	var got []arrival
	lastUpdate := make(chan struct{})
	go func() {
		hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
		updates := 0
		for {
			if _, err := io.ReadFull(remote, hdr); err != nil {
				return
			}
			body := make([]byte, int(hdr[16])<<8|int(hdr[17])-bgp.BGP_HEADER_LENGTH)
			if _, err := io.ReadFull(remote, body); err != nil {
				return
			}
			mu.Lock()
			got = append(got, arrival{hdr[18], updates})
			mu.Unlock()
			if hdr[18] == bgp.BGP_MSG_UPDATE {
				updates++
				if updates == n {
					close(lastUpdate)
				}
				if updates%8 == 0 {
					time.Sleep(time.Millisecond) // a slow reader
				}
			}
		}
	}()

	ctx, cancel := context.WithCancel(t.Context())
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.sendMessageloop(ctx, tcpPipe{local}, make(chan fsmStateReason, 3), wg)
	t.Cleanup(func() { cancel(); remote.Close(); wg.Wait(); h.outgoing.Close() })

	start := time.Now()
	h.outgoing.In() <- &fsmOutgoingMsg{Paths: paths}
	select {
	case <-lastUpdate:
	case <-time.After(60 * time.Second):
		t.Fatal("the peer did not get all the UPDATEs")
	}
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	var during []int
	for _, a := range got {
		if a.typ == bgp.BGP_MSG_KEEPALIVE && a.updates > 0 && a.updates < n {
			during = append(during, a.updates)
		}
	}
	if took < 3*time.Second {
		t.Skipf("the peer read %d UPDATEs in %v: too fast to show a keepalive interval of 1 s", n, took)
	}
	// One per second at most; at least every 3 s (the hold time) on a slow machine.
	if want := int(took / (3 * time.Second)); len(during) < max(1, want) {
		t.Fatalf("%d KEEPALIVEs among %d UPDATEs written over %v (keepalive 1 s, hold 3 s): want at least %d (after UPDATE %v)", len(during), n, took.Round(time.Millisecond), max(1, want), during)
	}
	t.Logf("%d UPDATEs over %v, KEEPALIVEs after UPDATE %v", n, took.Round(time.Millisecond), during)
}
