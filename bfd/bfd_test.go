package bfd

import (
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

func TestPacketRoundTrip(t *testing.T) {
	p := packet{Diag: DiagDetectionExpired, State: Init, Poll: true, DetectMult: 3, MyDisc: 7, YourDisc: 9,
		DesiredMinTx: 300 * time.Millisecond, RequiredMinRx: 250 * time.Millisecond}
	got, err := parse(p.marshal())
	if err != nil || got != p {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, p)
	}
	for name, mut := range map[string]func([]byte){
		"version 2":       func(b []byte) { b[0] = 2<<5 | b[0]&0x1f },
		"length 20":       func(b []byte) { b[3] = 20 },
		"multiplier 0":    func(b []byte) { b[2] = 0 },
		"multipoint":      func(b []byte) { b[1] |= 1 },
		"my disc 0":       func(b []byte) { b[4], b[5], b[6], b[7] = 0, 0, 0, 0 },
		"your disc 0, up": func(b []byte) { b[1] = byte(Up) << 6; b[8], b[9], b[10], b[11] = 0, 0, 0, 0 },
		"authentication":  func(b []byte) { b[1] |= 0x04 },
	} {
		b := p.marshal()
		mut(b)
		if _, err := parse(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := parse(p.marshal()[:20]); err == nil {
		t.Error("a 20-byte packet accepted")
	}
}

// events records a server's events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

// last is the last event of a peer, and how many there were.
func (e *events) last(peer string) (Event, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var last Event
	n := 0
	for _, ev := range e.evs {
		if ev.Peer == netip.MustParseAddr(peer) {
			last = ev
			n++
		}
	}
	return last, n
}

// TestSessions: two servers in two namespaces on a veth link bring their session up
// (IPv4 and IPv6), the poll sequence moving both to their fast intervals; packets
// that stop arriving take it down after the detection time (300 ms x 3), and back
// up when they flow again; a session removed on one side tells the other
// (neighbor_signaled_down).
func TestSessions(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for network namespaces (CI runs as root)")
	l, err := lab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	a, err := l.Netns("bfda")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Netns("bfdb")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, "a0", "10.30.0.1/24", b, "b0", "10.30.0.2/24"); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		ns   *lab.Netns
		dev  string
		addr string
	}{{a, "a0", "fd00:30::1/64"}, {b, "b0", "fd00:30::2/64"}} {
		if _, err := x.ns.Exec("ip", "-6", "addr", "add", x.addr, "dev", l.If(x.dev), "nodad"); err != nil {
			t.Fatal(err)
		}
	}
	var ea, eb events
	start := func(ns *lab.Netns, ev *events) *Server {
		var s *Server
		if err := ns.Do(func() error {
			var err error
			s, err = Listen(nil, ev.add)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	sa, sb := start(a, &ea), start(b, &eb)
	const tx = 300 * time.Millisecond
	add := func(s *Server, ns *lab.Netns, peer, local string) {
		if err := ns.Do(func() error {
			return s.Add(Peer{Addr: netip.MustParseAddr(peer), Local: netip.MustParseAddr(local), MinTx: tx, MinRx: tx, Multiplier: 3})
		}); err != nil {
			t.Fatal(err)
		}
	}
	add(sa, a, "10.30.0.2", "10.30.0.1")
	add(sb, b, "10.30.0.1", "10.30.0.2")
	add(sa, a, "fd00:30::2", "fd00:30::1")
	add(sb, b, "fd00:30::1", "fd00:30::2")
	state := func(s *Server, peer string) Status {
		for _, st := range s.Sessions() {
			if st.Peer == netip.MustParseAddr(peer) {
				return st
			}
		}
		return Status{}
	}
	wait := func(what string, within time.Duration, cond func() bool) time.Duration {
		t.Helper()
		t0 := time.Now()
		for !cond() {
			if time.Since(t0) > within {
				t.Fatalf("%s: not within %v (a: %+v, b: %+v)", what, within, sa.Sessions(), sb.Sessions())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(t0)
	}
	wait("every session up", 10*time.Second, func() bool {
		return state(sa, "10.30.0.2").State == "up" && state(sb, "10.30.0.1").State == "up" &&
			state(sa, "fd00:30::2").State == "up" && state(sb, "fd00:30::1").State == "up"
	})
	// After the poll sequence, detection uses the fast intervals.
	wait("fast detection", 5*time.Second, func() bool { return state(sa, "10.30.0.2").Detection == 3*tx })

	// b stops receiving BFD (nftables drops it; the link stays up: no carrier change
	// to see). b detects it; a hears b say so.
	testutil.Need(t, testutil.Have("nft"), "needs nft (make test installs nftables)")
	if _, err := b.Exec("nft", "add table inet fftest; add chain inet fftest in { type filter hook input priority 0; }; add rule inet fftest in udp dport 3784 drop"); err != nil {
		t.Fatal(err)
	}
	took := wait("b's session down", 5*time.Second, func() bool { return state(sb, "10.30.0.1").State == "down" })
	t.Logf("down after %v without packets (detection %v)", took, 3*tx)
	// The event reaches its callback just after the state changes: wait for it.
	downEvent := func(e *events, peer string) func() bool {
		return func() bool { ev, _ := e.last(peer); return ev.State == Down }
	}
	wait("b's down event", 2*time.Second, downEvent(&eb, "10.30.0.1"))
	if ev, _ := eb.last("10.30.0.1"); ev.State != Down || ev.Diag != DiagDetectionExpired {
		t.Errorf("b's last event %+v: want down, detection_time_expired", ev)
	}
	if took > 3*tx+time.Second {
		t.Errorf("down after %v: want about the detection time, %v", took, 3*tx)
	}
	wait("a told", 2*time.Second, func() bool { return state(sa, "10.30.0.2").State == "down" })
	wait("a's down event", 2*time.Second, downEvent(&ea, "10.30.0.2"))
	if ev, _ := ea.last("10.30.0.2"); ev.Diag != DiagNeighborSignalDown {
		t.Errorf("a's last event %+v: want down, neighbor_signaled_down", ev)
	}
	// The rule drops the IPv6 session's packets too: it goes down on its own
	// detection time, which may end after the IPv4 session's (their phases
	// differ); the rule stays until it has, or the flap counted below never came.
	wait("b's IPv6 session down", 5*time.Second, func() bool { return state(sb, "fd00:30::1").State == "down" })
	if _, err := b.Exec("nft", "delete table inet fftest"); err != nil {
		t.Fatal(err)
	}
	wait("back up", 10*time.Second, func() bool { return state(sa, "10.30.0.2").State == "up" })
	if st := state(sa, "10.30.0.2"); st.Flaps != 1 {
		t.Errorf("flaps %d, want 1", st.Flaps)
	}

	_, before := eb.last("10.30.0.1")
	sa.Remove(netip.MustParseAddr("10.30.0.2"))
	wait("b told of a's removal", 2*time.Second, func() bool { return state(sb, "10.30.0.1").State == "down" })
	wait("b's event of a's removal", 2*time.Second, func() bool { _, n := eb.last("10.30.0.1"); return n > before })
	ev, n := eb.last("10.30.0.1")
	if n == before || ev.Diag != DiagNeighborSignalDown || ev.Peer != netip.MustParseAddr("10.30.0.1") {
		t.Errorf("b's last event %+v: want 10.30.0.1 down, neighbor_signaled_down", ev)
	}
	wait("the IPv6 session up again", 10*time.Second, func() bool { return state(sa, "fd00:30::2").State == "up" })
	time.Sleep(2 * time.Second)
	if st := state(sa, "fd00:30::2"); st.State != "up" || st.Flaps != 1 {
		t.Errorf("the IPv6 session: %+v; want up, after its one flap (the IPv4 session's removal must not touch it)", st)
	}
}
