package cluster

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestLeaveWordExpires: a member that said it leaves and departs is left; one whose
// word is older than leaveWord (it came back before its departure was seen, as a
// restart does) and that departs now is dead: a stale word must not hide a death.
func TestLeaveWordExpires(t *testing.T) {
	for _, c := range []struct {
		ago  time.Duration
		want MemberState
	}{{0, Left}, {2 * leaveWord, Dead}, {-1, Dead}} {
		m := &Members{log: slog.Default(), view: map[string]*Member{}, leaving: map[string]time.Time{}, changes: make(chan struct{}, 1)}
		if c.ago >= 0 {
			m.NotifyMsg([]byte(leavingMsg + "n1"))
			m.leaving["n1"] = m.leaving["n1"].Add(-c.ago)
		}
		m.NotifyLeave(&memberlist.Node{Name: "n1", Addr: net.IPv4(10, 0, 0, 1), Port: 7946})
		if got := m.view["n1"].State; got != c.want {
			t.Errorf("word said %v ago (-1: never): member %s, want %s", c.ago, got, c.want)
		}
		if len(m.leaving) != 0 {
			t.Errorf("the word outlives the departure: %v", m.leaving)
		}
	}
}
