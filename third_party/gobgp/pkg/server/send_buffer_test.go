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

// writeCountingConn counts the writes to a connection.
type writeCountingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *writeCountingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestEstablishedWritesAreBuffered: an established session writes a queue of UPDATEs
// through a buffer, many to a write (each was its own write), and the peer receives
// every one of them whole, with nothing left in the buffer once the queue is written.
func TestEstablishedWritesAreBuffered(t *testing.T) {
	local, remote := net.Pipe()
	conn := &writeCountingConn{Conn: local}
	p, h := makePeerAndHandler(conn)
	t.Cleanup(func() { cleanPeerAndHandler(p, h); remote.Close() })

	// 1,000 paths, each with its own MED: 1,000 UPDATEs.
	const n = 1000
	paths := make([]*table.Path, 0, n)
	for i := range n {
		nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
		require.NoError(t, err)
		nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
		require.NoError(t, err)
		paths = append(paths, table.NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false,
			[]bgp.PathAttributeInterface{
				bgp.NewPathAttributeOrigin(0),
				bgp.NewPathAttributeAsPath(nil),
				nh,
				bgp.NewPathAttributeMultiExitDisc(uint32(i)),
			}, time.Now(), false))
	}

	var updates atomic.Int64
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
	defer cancel()
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.sendMessageloop(ctx, conn, make(chan fsmStateReason, 2), wg)
	h.outgoing.In() <- &fsmOutgoingMsg{Paths: paths}

	require.Eventually(t, func() bool { return updates.Load() == n }, 10*time.Second, 10*time.Millisecond,
		"UPDATEs the peer received: %d of %d", updates.Load(), n)
	writes := conn.writes.Load()
	t.Logf("%d UPDATEs in %d writes", n, writes)
	require.Less(t, writes, int64(n/10), "writes for %d UPDATEs", n)

	cancel()
	wg.Wait()
}
