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

// TestFilterpathFromSourceFormatsOnlyWhenLogged: a path filtered on its way back to
// the peer it came from is reported in a debug message; with debug off the path
// must not be formatted (that ran for every path of a full table).
func TestFilterpathFromSourceFormatsOnlyWhenLogged(t *testing.T) {
	rib := table.NewTableManager(logger, []bgp.Family{bgp.RF_IPv4_UC})
	p1 := newPeerandInfo(t, 65000, 65001, "192.168.0.1", rib)
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.10.10.0/24"))
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(2, []uint32{65001, 3356, 13335})}),
		bgp.NewPathAttributeCommunities([]uint32{65001<<16 | 1, 65001<<16 | 2}),
	}
	path := table.NewPath(bgp.RF_IPv4_UC, p1.peerInfo.Load(), bgp.PathNLRI{NLRI: nlri}, false, attrs, time.Now(), false)

	p1.fsm.logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	allocs := testing.AllocsPerRun(100, func() {
		if filterpath(p1, path, nil) != nil {
			t.Fatal("a path was sent back to the peer it came from")
		}
	})
	if allocs > 0 {
		t.Errorf("filtering a path from its own peer with debug off allocates %.0f times, want none (nothing formatted)", allocs)
	}

	// With debug on, the message still says which path and which peer.
	var out bytes.Buffer
	p1.fsm.logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if filterpath(p1, path, nil) != nil {
		t.Fatal("a path was sent back to the peer it came from")
	}
	if s := out.String(); !strings.Contains(s, "From me, ignore") || !strings.Contains(s, "10.10.10.0/24") || !strings.Contains(s, "192.168.0.1") {
		t.Errorf("debug message %q, want the path's prefix and the peer's address", s)
	}
}
