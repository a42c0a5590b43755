package server

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// countingConn counts the reads of a connection.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(b)
}

// TestEstablishedReadsAreBuffered: an established session reads its peer's messages
// through a buffer, many to a read (each was two reads: a header, then a body), and
// loses none of them.
func TestEstablishedReadsAreBuffered(t *testing.T) {
	local, remote := net.Pipe()
	conn := &countingConn{Conn: local}
	p, h := makePeerAndHandler(conn)
	t.Cleanup(func() { cleanPeerAndHandler(p, h); remote.Close() })

	const n = 1000
	keepalive, err := bgp.NewBGPKeepAliveMessage().Serialize()
	require.NoError(t, err)
	var burst []byte
	for range n {
		burst = append(burst, keepalive...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.recvMessageloop(ctx, conn, make(chan struct{}, 2), make(chan fsmStateReason, 2), wg)
	go remote.Write(burst)

	received := func() uint64 { return atomic.LoadUint64(&h.fsm.counterStats.Received.Keepalive) }
	require.Eventually(t, func() bool { return received() == n }, 10*time.Second, 10*time.Millisecond,
		"keepalives received: %d of %d", received(), n)
	reads := conn.reads.Load()
	t.Logf("%d messages in %d reads", n, reads)
	require.Less(t, reads, int64(n/10), "reads for %d messages", n)

	cancel()
	local.SetReadDeadline(time.Now())
	wg.Wait()
}
