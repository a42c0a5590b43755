package bfd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Port is BFD's single-hop control port (RFC 5881).
const Port = 3784

// slowTx is the transmit interval while a session is not up (RFC 5880 6.8.3: at least
// one second).
const slowTx = time.Second

// Peer is a session's configuration.
type Peer struct {
	// Addr is the neighbour; Local the node's address towards it (the source of the
	// session's packets; invalid: the kernel's choice).
	Addr, Local netip.Addr
	// MinTx is the interval the node sends at while up (at most, the neighbour may
	// ask for less often), MinRx the shortest interval it accepts packets at, and
	// Multiplier how many intervals without a packet mean down: detection takes
	// Multiplier times the slower of MinRx and the neighbour's interval.
	MinTx, MinRx time.Duration
	Multiplier   uint8
}

// Event is a session going up or down.
type Event struct {
	Peer  netip.Addr
	State State
	// Diag says why it went down.
	Diag Diag
	At   time.Time
}

// Status is a session's state now.
type Status struct {
	Peer  netip.Addr `json:"peer"`
	State string     `json:"state"`
	Diag  string     `json:"diag,omitempty"`
	// Detection is the detection time in force; Flaps counts its downs after an up.
	Detection time.Duration `json:"detection"`
	Flaps     uint64        `json:"flaps"`
	Since     time.Time     `json:"since"`
}

// Server runs the node's sessions: it receives every control packet on Port and
// sends each session's from a socket of its own (TTL 255, a source port in
// 49152-65535, RFC 5881).
type Server struct {
	log      *slog.Logger
	onChange func(Event)
	conn4    *ipv4.PacketConn
	conn6    *ipv6.PacketConn
	raw4     net.PacketConn
	raw6     net.PacketConn

	// notifyMu makes onChange's calls one at a time.
	notifyMu sync.Mutex

	mu       sync.Mutex
	sessions map[netip.Addr]*session
	byDisc   map[uint32]*session
	wg       sync.WaitGroup
}

type session struct {
	cfg    Peer
	conn   *net.UDPConn
	myDisc uint32
	stop   chan struct{}
	kick   chan struct{}

	// Guarded by the server's mu.
	state             State
	diag              Diag
	remoteDisc        uint32
	remoteState       State
	remoteMinRx       time.Duration
	remoteDesiredTx   time.Duration
	remoteMult        uint8
	desiredTx         time.Duration
	poll, sendFinal   bool
	sendNow           bool
	lastRx            time.Time
	since             time.Time
	flaps             uint64
	detectionDeadline time.Time
}

// Listen opens the receiving sockets (IPv4 and IPv6, port 3784). onChange is called,
// one call at a time, for each session that goes up or down.
func Listen(log *slog.Logger, onChange func(Event)) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{log: log, onChange: onChange, sessions: map[netip.Addr]*session{}, byDisc: map[uint32]*session{}}
	var err error
	if s.raw4, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", Port)); err != nil {
		return nil, fmt.Errorf("bfd: listen on udp port %d (is another BFD daemon running?): %w", Port, err)
	}
	s.conn4 = ipv4.NewPacketConn(s.raw4)
	if err := s.conn4.SetControlMessage(ipv4.FlagTTL|ipv4.FlagSrc, true); err != nil {
		s.raw4.Close()
		return nil, fmt.Errorf("bfd: ask for the TTL of received packets: %w", err)
	}
	if s.raw6, err = net.ListenPacket("udp6", fmt.Sprintf("[::]:%d", Port)); err == nil {
		s.conn6 = ipv6.NewPacketConn(s.raw6)
		if err := s.conn6.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagSrc, true); err != nil {
			s.raw4.Close()
			s.raw6.Close()
			return nil, fmt.Errorf("bfd: ask for the hop limit of received packets: %w", err)
		}
	} else {
		log.Warn("bfd: no IPv6 socket: IPv6 sessions will not come up", "err", err)
	}
	s.wg.Add(1)
	go s.receive4()
	if s.conn6 != nil {
		s.wg.Add(1)
		go s.receive6()
	}
	return s, nil
}

// Close ends every session (telling the neighbours, AdminDown) and the sockets.
func (s *Server) Close() error {
	s.mu.Lock()
	peers := make([]netip.Addr, 0, len(s.sessions))
	for a := range s.sessions {
		peers = append(peers, a)
	}
	s.mu.Unlock()
	for _, a := range peers {
		s.Remove(a)
	}
	err := s.raw4.Close()
	if s.raw6 != nil {
		err = errors.Join(err, s.raw6.Close())
	}
	s.wg.Wait()
	return err
}

// Add starts a session with a neighbour.
func (s *Server) Add(p Peer) error {
	if !p.Addr.IsValid() {
		return errors.New("bfd: a session needs the neighbour's address")
	}
	if p.MinTx < time.Millisecond || p.MinRx < time.Millisecond || p.Multiplier == 0 {
		return fmt.Errorf("bfd: session with %s: intervals of at least 1ms and a multiplier from 1 (got %v, %v, %d)", p.Addr, p.MinTx, p.MinRx, p.Multiplier)
	}
	network := "udp4"
	if p.Addr.Is6() {
		network = "udp6"
	}
	var conn *net.UDPConn
	var err error
	for range 64 {
		local := &net.UDPAddr{Port: 49152 + rand.IntN(16384)}
		if p.Local.IsValid() {
			local.IP = p.Local.AsSlice()
		}
		if conn, err = net.ListenUDP(network, local); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("bfd: socket for the session with %s: %w", p.Addr, err)
	}
	if p.Addr.Is6() {
		err = ipv6.NewConn(conn).SetHopLimit(255)
	} else {
		err = ipv4.NewConn(conn).SetTTL(255)
	}
	if err != nil {
		conn.Close()
		return fmt.Errorf("bfd: TTL 255 on the session with %s: %w", p.Addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[p.Addr]; ok {
		conn.Close()
		return fmt.Errorf("bfd: a session with %s exists", p.Addr)
	}
	ss := &session{cfg: p, conn: conn, stop: make(chan struct{}), kick: make(chan struct{}, 1), state: Down, desiredTx: max(slowTx, p.MinTx),
		remoteMinRx: time.Microsecond, since: time.Now()}
	for ss.myDisc == 0 || s.byDisc[ss.myDisc] != nil {
		ss.myDisc = rand.Uint32()
	}
	s.sessions[p.Addr], s.byDisc[ss.myDisc] = ss, ss
	s.wg.Add(1)
	go s.run(ss)
	return nil
}

// Remove ends a session, telling the neighbour (AdminDown) first.
func (s *Server) Remove(a netip.Addr) {
	s.mu.Lock()
	ss, ok := s.sessions[a]
	if ok {
		delete(s.sessions, a)
		delete(s.byDisc, ss.myDisc)
		ss.state, ss.diag = AdminDown, DiagAdminDown
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	close(ss.stop)
}

// Sessions returns every session's state.
func (s *Server) Sessions() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.sessions))
	for a, ss := range s.sessions {
		st := Status{Peer: a, State: ss.state.String(), Detection: ss.detection(), Flaps: ss.flaps, Since: ss.since}
		if ss.state != Up && ss.diag != DiagNone {
			st.Diag = ss.diag.String()
		}
		out = append(out, st)
	}
	return out
}

// detection is how long without a packet means down (RFC 5880 6.8.4). Under mu.
func (ss *session) detection() time.Duration {
	return time.Duration(max(ss.remoteMult, 1)) * max(ss.cfg.MinRx, ss.remoteDesiredTx)
}

// txInterval is the interval between the session's packets, before jitter. Under mu.
func (ss *session) txInterval() time.Duration {
	return max(ss.desiredTx, ss.remoteMinRx)
}

// packet is what the session sends now. Under mu.
func (ss *session) packet() packet {
	p := packet{Diag: ss.diag, State: ss.state, DetectMult: ss.cfg.Multiplier, MyDisc: ss.myDisc, YourDisc: ss.remoteDisc,
		DesiredMinTx: ss.desiredTx, RequiredMinRx: ss.cfg.MinRx, Poll: ss.poll && !ss.sendFinal, Final: ss.sendFinal}
	if p.State == Up {
		p.Diag = DiagNone
	}
	ss.sendFinal = false
	return p
}

// run sends the session's packets and watches its detection time until it ends.
func (s *Server) run(ss *session) {
	defer s.wg.Done()
	defer ss.conn.Close()
	to := &net.UDPAddr{IP: ss.cfg.Addr.AsSlice(), Port: Port, Zone: ss.cfg.Addr.Zone()}
	timer := time.NewTimer(0)
	defer timer.Stop()
	next := time.Now()
	for {
		select {
		case <-ss.stop:
			// Say so, so that the neighbour does not count it a failure.
			s.mu.Lock()
			b := ss.packet().marshal()
			s.mu.Unlock()
			_, _ = ss.conn.WriteToUDP(b, to)
			return
		case <-ss.kick:
		case <-timer.C:
		}
		now := time.Now()
		s.mu.Lock()
		var ev *Event
		if (ss.state == Init || ss.state == Up) && !ss.detectionDeadline.IsZero() && now.After(ss.detectionDeadline) {
			ev = s.setState(ss, Down, DiagDetectionExpired, now)
			ss.remoteDisc = 0
		}
		send := ss.sendFinal || ss.sendNow || !now.Before(next)
		ss.sendNow = false
		var b []byte
		interval := ss.txInterval()
		if send {
			b = ss.packet().marshal()
			// Jitter (RFC 5880 6.8.7): 75 to 100% of the interval, at most 90% with a
			// multiplier of 1.
			hi := 1.0
			if ss.cfg.Multiplier == 1 {
				hi = 0.9
			}
			next = now.Add(time.Duration(float64(interval) * (0.75 + rand.Float64()*(hi-0.75))))
		}
		wake := next
		if (ss.state == Init || ss.state == Up) && !ss.detectionDeadline.IsZero() && ss.detectionDeadline.Before(wake) {
			wake = ss.detectionDeadline
		}
		s.mu.Unlock()
		if ev != nil {
			s.notify(*ev)
		}
		if b != nil {
			if _, err := ss.conn.WriteToUDP(b, to); err != nil {
				s.log.Debug("bfd: send", "peer", ss.cfg.Addr, "err", err)
			}
		}
		timer.Reset(max(time.Until(wake), 0))
	}
}

// setState moves a session to a state and returns the event to tell, if any. Under mu.
func (s *Server) setState(ss *session, st State, diag Diag, now time.Time) *Event {
	old := ss.state
	ss.state, ss.diag, ss.since = st, diag, now
	switch {
	case st == Up && old != Up:
		// Now the configured intervals: faster, so at once (RFC 5880 6.8.3), and a
		// poll sequence tells the neighbour.
		ss.desiredTx, ss.poll = ss.cfg.MinTx, true
		return &Event{Peer: ss.cfg.Addr, State: Up, At: now}
	case st != Up && old == Up:
		ss.desiredTx, ss.poll = max(slowTx, ss.cfg.MinTx), false
		ss.flaps++
		return &Event{Peer: ss.cfg.Addr, State: Down, Diag: diag, At: now}
	}
	return nil
}

func (s *Server) notify(ev Event) {
	level := slog.LevelInfo
	if ev.State == Down {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "bfd session "+ev.State.String(), "peer", ev.Peer, "diag", ev.Diag.String())
	if s.onChange != nil {
		s.notifyMu.Lock()
		defer s.notifyMu.Unlock()
		s.onChange(ev)
	}
}

func (s *Server) receive4() {
	s.receive(func(b []byte) (int, netip.Addr, int, error) {
		n, cm, src, err := s.conn4.ReadFrom(b)
		ua, ok := src.(*net.UDPAddr)
		if err != nil || !ok || cm == nil {
			return 0, netip.Addr{}, 0, err
		}
		from, _ := netip.AddrFromSlice(ua.IP)
		return n, from.Unmap(), cm.TTL, nil
	})
}

func (s *Server) receive6() {
	s.receive(func(b []byte) (int, netip.Addr, int, error) {
		n, cm, src, err := s.conn6.ReadFrom(b)
		ua, ok := src.(*net.UDPAddr)
		if err != nil || !ok || cm == nil {
			return 0, netip.Addr{}, 0, err
		}
		from, _ := netip.AddrFromSlice(ua.IP)
		return n, from.WithZone(ua.Zone), cm.HopLimit, nil
	})
}

// receive handles the packets read returns (with their source and TTL or hop limit)
// until the socket is closed.
func (s *Server) receive(read func([]byte) (n int, from netip.Addr, ttl int, err error)) {
	defer s.wg.Done()
	buf := make([]byte, 128)
	for {
		n, from, ttl, err := read(buf)
		if err != nil {
			return
		}
		if from.IsValid() {
			s.handle(buf[:n], from, ttl)
		}
	}
}

// handle processes a received control packet (RFC 5880 6.8.6).
func (s *Server) handle(b []byte, from netip.Addr, ttl int) {
	if ttl != 255 {
		s.log.Debug("bfd: packet with TTL below 255 dropped (not from the link)", "from", from, "ttl", ttl)
		return
	}
	p, err := parse(b)
	if err != nil {
		s.log.Debug("bfd: packet dropped", "from", from, "err", err)
		return
	}
	now := time.Now()
	s.mu.Lock()
	ss := s.byDisc[p.YourDisc]
	if p.YourDisc == 0 {
		ss = s.sessions[from]
		if ss == nil {
			ss = s.sessions[from.WithZone("")]
		}
	}
	if ss == nil || ss.cfg.Addr.WithZone("") != from.WithZone("") {
		s.mu.Unlock()
		return
	}
	ss.remoteDisc, ss.remoteState, ss.remoteMult = p.MyDisc, p.State, p.DetectMult
	ss.remoteMinRx, ss.remoteDesiredTx = p.RequiredMinRx, p.DesiredMinTx
	if p.Final {
		ss.poll = false
	}
	ss.lastRx = now
	var ev *Event
	if p.State == AdminDown {
		if ss.state != Down {
			ev = s.setState(ss, Down, DiagNeighborSignalDown, now)
		}
	} else {
		switch ss.state {
		case Down:
			if p.State == Down {
				ev = s.setState(ss, Init, DiagNone, now)
			} else if p.State == Init {
				ev = s.setState(ss, Up, DiagNone, now)
			}
		case Init:
			if p.State == Init || p.State == Up {
				ev = s.setState(ss, Up, DiagNone, now)
			}
		case Up:
			if p.State == Down {
				ev = s.setState(ss, Down, DiagNeighborSignalDown, now)
			}
		}
	}
	ss.detectionDeadline = now.Add(ss.detection())
	kick := p.Poll || ev != nil
	if p.Poll {
		ss.sendFinal = true
	}
	if ev != nil || ss.state == Init {
		ss.sendNow = true
	}
	s.mu.Unlock()
	if ev != nil {
		s.notify(*ev)
	}
	if kick {
		// Answer a poll at once, and tell the neighbour of a new state without waiting
		// for the next interval.
		select {
		case ss.kick <- struct{}{}:
		default:
		}
	}
}
