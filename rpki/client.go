package rpki

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/rtr"
)

// Client follows one validator over RTR (RFC 6810, version 0: what GoBGP's codec,
// used here for the wire format, speaks): a Reset Query when it connects, a Serial
// Query on each Serial Notify and every refresh interval. Each End of Data makes the
// validator's new set whole: the client then reports what it added and removed since
// the last one, so that the caller re-checks exactly the routes those VRPs cover.
type Client struct {
	// Addr is the validator's host:port.
	Addr string
	// Refresh is how often it asks for changes without a notify (default 60 s);
	// Retry, how long it waits to connect again after a failure (default 5 s; at
	// most a second until the first set is in).
	Refresh, Retry time.Duration
	Logger         *slog.Logger
}

// Update is what a validator changed, delivered at each End of Data.
type Update struct {
	Source         string
	Added, Removed []VRP
	// First is set on the first End of Data since the client started: the
	// validator's full set has arrived.
	First bool
}

// Run connects and follows the validator until ctx ends, calling update after each
// End of Data, and lost when the connection goes (the caller keeps the VRPs until
// its own expiry; on reconnection, the first End of Data's Update carries what
// changed meanwhile).
func (c *Client) Run(ctx context.Context, update func(Update), lost func(error)) {
	refresh, retry := c.Refresh, c.Retry
	if refresh <= 0 {
		refresh = time.Minute
	}
	if retry <= 0 {
		retry = 5 * time.Second
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &session{addr: c.Addr, set: map[VRP]struct{}{}, first: true}
	for ctx.Err() == nil {
		err := s.run(ctx, refresh, update)
		if ctx.Err() != nil {
			return
		}
		log.Warn("RPKI validator connection lost: its last VRPs are kept", "validator", c.Addr, "err", err)
		if lost != nil {
			lost(err)
		}
		// Until the validator's first set is in, the node's upstream sessions may be
		// waiting for it (rpki.wait): try again each second.
		wait := retry
		if s.first {
			wait = min(retry, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// session is the client's state across connections: the validator's set as of the
// last End of Data, and its session id and serial.
type session struct {
	addr     string
	set      map[VRP]struct{}
	id       uint16
	serial   uint32
	synced   bool // a serial is known: a reconnection may ask for changes only
	first    bool
	mu       sync.Mutex
	incoming map[VRP]bool // announcements (true) and withdrawals since the Cache Response
	reset    bool         // the response answers a Reset Query: a whole new set
}

func (s *session) run(ctx context.Context, refresh time.Duration, update func(Update)) error {
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("rpki: connect to validator %s: %w", s.addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// A full set is hundreds of thousands of 20- to 32-byte PDUs: read them from a
	// buffer, not two system calls each.
	in := bufio.NewReaderSize(conn, 64<<10)
	send := func(m rtr.RTRMessage) error {
		b, err := m.Serialize()
		if err == nil {
			_, err = conn.Write(b)
		}
		if err != nil {
			return fmt.Errorf("rpki: write to validator %s: %w", s.addr, err)
		}
		return nil
	}
	query := func() error {
		if s.synced {
			return send(rtr.NewRTRSerialQuery(s.id, s.serial))
		}
		s.reset = true
		return send(rtr.NewRTRResetQuery())
	}
	if err := query(); err != nil {
		return err
	}
	// Ask for changes every refresh interval, as a validator's notify may be lost;
	// until this connection ends.
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	done := make(chan struct{})
	defer close(done)
	errc := make(chan error, 1)
	go func() {
		for {
			select {
			case <-tick.C:
				s.mu.Lock()
				err := query()
				s.mu.Unlock()
				if err != nil {
					errc <- err // the read below fails too, on the same connection
					return
				}
			case <-done:
				return
			}
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		default:
		}
		msg, err := readPDU(in)
		if err != nil {
			return fmt.Errorf("rpki: read from validator %s: %w", s.addr, err)
		}
		s.mu.Lock()
		u, err := s.handle(msg, query)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if u != nil {
			update(*u)
		}
	}
}

// handle applies one PDU; at End of Data it returns the update.
func (s *session) handle(msg rtr.RTRMessage, query func() error) (*Update, error) {
	switch m := msg.(type) {
	case *rtr.RTRSerialNotify:
		if !s.synced || m.SerialNumber != s.serial {
			return nil, query()
		}
	case *rtr.RTRCacheResponse:
		s.incoming = map[VRP]bool{}
		if s.synced && m.SessionID != s.id {
			s.reset = true // a new session: what follows is the whole set
		}
	case *rtr.RTRCacheReset:
		// The validator cannot answer with changes: ask for everything.
		s.synced = false
		return nil, query()
	case *rtr.RTRIPPrefix:
		if s.incoming == nil {
			return nil, fmt.Errorf("rpki: validator %s sent a prefix outside a cache response", s.addr)
		}
		v := VRP{Prefix: netipPrefix(m), MaxLength: int(m.MaxLen), ASN: m.AS}
		s.incoming[v] = m.Flags&1 == 1
	case *rtr.RTREndOfData:
		if s.incoming == nil {
			return nil, fmt.Errorf("rpki: validator %s sent End of Data outside a cache response", s.addr)
		}
		u := &Update{Source: s.addr, First: s.first}
		if s.reset {
			for v := range s.set {
				if announced, ok := s.incoming[v]; !ok || !announced {
					u.Removed = append(u.Removed, v)
				}
			}
			next := map[VRP]struct{}{}
			for v, announced := range s.incoming {
				if !announced {
					continue
				}
				next[v] = struct{}{}
				if _, had := s.set[v]; !had {
					u.Added = append(u.Added, v)
				}
			}
			s.set = next
		} else {
			for v, announced := range s.incoming {
				_, had := s.set[v]
				switch {
				case announced && !had:
					s.set[v] = struct{}{}
					u.Added = append(u.Added, v)
				case !announced && had:
					delete(s.set, v)
					u.Removed = append(u.Removed, v)
				}
			}
		}
		s.id, s.serial, s.synced, s.first, s.reset, s.incoming = m.SessionID, m.SerialNumber, true, false, false, nil
		return u, nil
	case *rtr.RTRErrorReport:
		// Whatever went wrong (a session the validator no longer knows, no data yet),
		// the next connection starts over with a Reset Query.
		s.synced, s.incoming = false, nil
		return nil, fmt.Errorf("rpki: validator %s reports error %d: %s", s.addr, m.ErrorCode, strings.TrimRight(string(m.Text), "\x00"))
	}
	return nil, nil
}

// readPDU reads one RTR PDU: an 8-byte header whose last 4 bytes are its length.
func readPDU(r io.Reader) (rtr.RTRMessage, error) {
	header := make([]byte, rtr.RTR_MIN_LEN)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(header[4:8])
	if n < rtr.RTR_MIN_LEN || n > 1<<16 {
		return nil, fmt.Errorf("a PDU of %d bytes", n)
	}
	body := make([]byte, n-rtr.RTR_MIN_LEN)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return rtr.ParseRTR(append(header, body...))
}

func netipPrefix(m *rtr.RTRIPPrefix) netip.Prefix {
	return netip.PrefixFrom(m.Prefix, int(m.PrefixLen)).Masked()
}
