package server

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// takeOutgoing is what a message read from a peer's outgoing channel stands for: its
// own paths and, for a wake-up, the paths queued for the peer (taken, as the send loop
// takes them).
func takeOutgoing(f *fsm, o any) (*fsmOutgoingMsg, bool) {
	msg, ok := o.(*fsmOutgoingMsg)
	if !ok {
		return nil, false
	}
	return &fsmOutgoingMsg{Paths: append(msg.Paths, f.takeOutgoingPaths()...)}, true
}

// TestOutgoingPathsOneWakeup: the paths the server propagates to a peer wait in a
// queue, the send loop woken once for them, at the end of the UPDATE they came in
// (propagateUpdate) or when the queue is long, not by a channel message a path; and
// they all reach the peer.
func TestOutgoingPathsOneWakeup(t *testing.T) {
	local, remote := net.Pipe()
	p, h := makePeerAndHandler(local)
	h.outgoing.Close()
	h.outgoing = p.fsm.outgoingCh // the peer's channel, as newFSMHandler sets it
	t.Cleanup(func() { cleanInfiniteChannel(p.fsm.outgoingCh); local.Close(); remote.Close() })

	path := func(i int) []*table.Path {
		nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
		require.NoError(t, err)
		nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.0.2.1"))
		require.NoError(t, err)
		return []*table.Path{table.NewPath(bgp.RF_IPv4_UC, nil, bgp.PathNLRI{NLRI: nlri}, false,
			[]bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeAsPath(nil), nh,
				bgp.NewPathAttributeMultiExitDisc(uint32(i))}, time.Now(), false)}
	}
	// Exact at once: a send returns when the channel's pump has the message, and
	// the pump answers Len after it buffers it.
	messages := p.fsm.outgoingCh.Len

	// An UPDATE's paths as propagateUpdate queues them: no wake-up until its end.
	const update = 100
	for i := range update {
		queuefsmOutgoingPaths(p, path(i))
	}
	require.Equal(t, 0, messages(), "messages on the outgoing channel for an UPDATE's %d paths before its end", update)
	p.fsm.queueOutgoingPaths(nil, true) // its end
	require.Equal(t, 1, messages(), "messages on the outgoing channel at the UPDATE's end")

	// Paths queued one at a time with a wake-up each (a soft reset, a dump): one
	// message while the loop has not taken the queue.
	const n = 1000
	for i := update; i < n; i++ {
		sendfsmOutgoingMsg(p, path(i))
	}
	require.Equal(t, 1, messages(), "messages on the outgoing channel for %d paths queued", n)
	<-p.fsm.outgoingCh.Out()                     // the wake-up, and the queue,
	require.Len(t, p.fsm.takeOutgoingPaths(), n) // as the loop takes them

	// A long pass without an end (a table's soft reset in one call) wakes the loop
	// at outgoingWakeAt.
	for i := range outgoingWakeAt {
		queuefsmOutgoingPaths(p, path(i%n))
	}
	require.Equal(t, 1, messages(), "messages on the outgoing channel after %d paths queued without an end", outgoingWakeAt)
	<-p.fsm.outgoingCh.Out()
	p.fsm.takeOutgoingPaths()

	for i := range n {
		sendfsmOutgoingMsg(p, path(i))
	}
	// The peer receives every path (each its own UPDATE: its MED).
	got := make(chan []netip.Prefix, 1)
	go func() {
		var prefixes []netip.Prefix
		hdr := make([]byte, bgp.BGP_HEADER_LENGTH)
		for len(prefixes) < n {
			if _, err := io.ReadFull(remote, hdr); err != nil {
				break
			}
			body := make([]byte, int(hdr[16])<<8|int(hdr[17])-bgp.BGP_HEADER_LENGTH)
			if _, err := io.ReadFull(remote, body); err != nil {
				break
			}
			if hdr[18] != bgp.BGP_MSG_UPDATE {
				continue
			}
			m, err := bgp.ParseBGPBody(&bgp.BGPHeader{Type: bgp.BGP_MSG_UPDATE}, body)
			if err != nil {
				break
			}
			for _, nlri := range m.Body.(*bgp.BGPUpdate).NLRI {
				prefixes = append(prefixes, nlri.NLRI.(*bgp.IPAddrPrefix).Prefix)
			}
		}
		got <- prefixes
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go h.sendMessageloop(ctx, local, make(chan fsmStateReason, 2), wg)

	var prefixes []netip.Prefix
	select {
	case prefixes = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not receive the queued paths")
	}
	require.Len(t, prefixes, n)
	// Every prefix once (the packer orders UPDATEs by attribute set, not as queued).
	seen := map[netip.Prefix]bool{}
	for _, pfx := range prefixes {
		require.False(t, seen[pfx], "%s received twice", pfx)
		seen[pfx] = true
	}
	cancel()
	wg.Wait()
}
