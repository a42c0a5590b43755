package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/internal/pkg/table"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestUpdateDebugRecordsOnlyWhenDebugging: the records made for every UPDATE read
// and written are built only when debug is on (they were built, and dropped, for
// each of a full table's UPDATEs), and say what they said when it is.
func TestUpdateDebugRecordsOnlyWhenDebugging(t *testing.T) {
	nh, _ := bgp.NewPathAttributeNextHop(netip.MustParseAddr("192.168.0.1"))
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.10.10.0/24"))
	msg := bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65001, 3356})}),
		nh,
	}, []bgp.PathNLRI{{NLRI: nlri}})
	u := msg.Body.(*bgp.BGPUpdate)

	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if a := testing.AllocsPerRun(100, func() { logReceivedUpdate(quiet, u) }); a > 0 {
		t.Errorf("a received UPDATE's debug record with debug off: %.0f allocations, want none", a)
	}
	if a := testing.AllocsPerRun(100, func() { logSentUpdate(quiet, bgp.BGP_FSM_ESTABLISHED, u) }); a > 0 {
		t.Errorf("a sent UPDATE's debug record with debug off: %.0f allocations, want none", a)
	}

	var out bytes.Buffer
	loud := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logSentUpdate(loud, bgp.BGP_FSM_ESTABLISHED, u)
	if s := out.String(); !strings.Contains(s, "sent update") || !strings.Contains(s, "10.10.10.0/24") || !strings.Contains(s, "ESTABLISHED") {
		t.Errorf("sent update's debug record %q, want its prefix and the session's state", s)
	}

	// The received one, where the peer handles an UPDATE.
	out.Reset()
	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	p.fsm.logger = loud
	if paths, _, _ := p.handleUpdate(&fsmMsg{MsgType: fsmMsgBGPMessage, MsgData: msg, timestamp: time.Now()}); len(paths) != 1 {
		t.Fatalf("the UPDATE gave %d paths, want 1", len(paths))
	}
	if s := out.String(); !strings.Contains(s, "received update") || !strings.Contains(s, "10.10.10.0/24") {
		t.Errorf("received update's debug record %q, want its prefix", s)
	}
}
