package server

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// holdTestSession runs an established session's send loop on a pipe whose writes
// are counted, and counts the UPDATEs its peer reads whole.
func holdTestSession(t *testing.T) (h *fsmHandler, conn *writeCountingConn, updates *atomic.Int64) {
	t.Helper()
	local, remote := net.Pipe()
	conn = &writeCountingConn{Conn: local}
	p, h := makePeerAndHandler(conn)
	updates = &atomic.Int64{}
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
			if hdr[18] == bgp.BGP_MSG_UPDATE {
				updates.Add(1)
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.sendMessageloop(ctx, conn, make(chan fsmStateReason, 2), wg)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		cleanPeerAndHandler(p, h)
		remote.Close()
	})
	return h, conn, updates
}

// holdTestPath is a path of its own /24 with its own MED: an UPDATE of its own.
func holdTestPath(t *testing.T, i int) *table.Path {
	t.Helper()
	nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
	require.NoError(t, err)
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
	require.NoError(t, err)
	return table.NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false,
		[]bgp.PathAttributeInterface{
			bgp.NewPathAttributeOrigin(0),
			bgp.NewPathAttributeAsPath(nil),
			nh,
			bgp.NewPathAttributeMultiExitDisc(uint32(i)),
		}, time.Now(), false)
}

// TestWritesHeldForWhatFollows: UPDATEs that reach the send loop one at a time, a
// trickle (as a speaker passes on a table while it learns it), go out in a few
// writes, not one each; every one arrives whole.
func TestWritesHeldForWhatFollows(t *testing.T) {
	h, conn, updates := holdTestSession(t)
	const n = 200
	paths := make([]*table.Path, n)
	for i := range paths {
		paths[i] = holdTestPath(t, i)
	}
	start := time.Now()
	for i := range n {
		h.outgoing.In() <- &fsmOutgoingMsg{Paths: paths[i : i+1]}
		// 300 µs apart (a sleep's granularity is coarser): the loop has long
		// written each out before the next comes.
		for t0 := time.Now(); time.Since(t0) < 300*time.Microsecond; {
		}
	}
	took := time.Since(start)
	require.Eventually(t, func() bool { return updates.Load() == n }, 10*time.Second, 5*time.Millisecond,
		"UPDATEs the peer received: %d of %d", updates.Load(), n)
	writes := conn.writes.Load()
	t.Logf("%d UPDATEs over %v in %d writes (hold %v)", n, took, writes, writeHold)
	// One write a hold, and a few more (the first at once, the last after the
	// trickle): without the hold, about one write an UPDATE.
	require.LessOrEqual(t, writes, int64(took/writeHold)+5, "writes for %d UPDATEs queued one at a time over %v", n, took)
}

// TestLoneWriteNotHeld: the first UPDATE after a quiet spell is written at once;
// one that follows it within the hold waits for it (here an hour: not written).
func TestLoneWriteNotHeld(t *testing.T) {
	saved := writeHold
	writeHold = time.Hour
	t.Cleanup(func() { writeHold = saved })
	h, _, updates := holdTestSession(t)

	h.outgoing.In() <- &fsmOutgoingMsg{Paths: []*table.Path{holdTestPath(t, 1)}}
	require.Eventually(t, func() bool { return updates.Load() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the first UPDATE after a quiet spell was held")
	h.outgoing.In() <- &fsmOutgoingMsg{Paths: []*table.Path{holdTestPath(t, 2)}}
	require.Never(t, func() bool { return updates.Load() > 1 }, 300*time.Millisecond, 10*time.Millisecond,
		"an UPDATE right after another was written at once")
}
