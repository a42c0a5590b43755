// Package bfd runs Bidirectional Forwarding Detection sessions (RFC 5880, single hop
// over IPv4 and IPv6: RFC 5881) to the node's upstreams, so that a failed neighbour
// is known within a few hundred milliseconds instead of a BGP hold time. It tells its
// owner of every session going down or up, and does nothing else: the owner moves
// the traffic (fib), then lets BGP reconverge.
//
// Asynchronous mode only (no demand mode, no echo), no authentication: a single-hop
// session is protected as RFC 5881 says, by sending with TTL 255 and accepting only
// packets that arrive with TTL 255 (they cannot come from further than the link).
package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// State is a session's state (RFC 5880 4.1).
type State uint8

const (
	AdminDown State = iota
	Down
	Init
	Up
)

func (s State) String() string { return [...]string{"admin_down", "down", "init", "up"}[s&3] }

// Diag is why a session went down (RFC 5880 4.1).
type Diag uint8

const (
	DiagNone               Diag = 0
	DiagDetectionExpired   Diag = 1
	DiagNeighborSignalDown Diag = 3
	DiagAdminDown          Diag = 7
)

func (d Diag) String() string {
	switch d {
	case DiagNone:
		return "none"
	case DiagDetectionExpired:
		return "detection_time_expired"
	case DiagNeighborSignalDown:
		return "neighbor_signaled_down"
	case DiagAdminDown:
		return "admin_down"
	}
	return fmt.Sprintf("diag_%d", uint8(d))
}

// packet is a BFD control packet (RFC 5880 4.1), without authentication.
type packet struct {
	Diag                Diag
	State               State
	Poll, Final         bool
	DetectMult          uint8
	MyDisc, YourDisc    uint32
	DesiredMinTx        time.Duration
	RequiredMinRx       time.Duration
	RequiredMinEchoRx   time.Duration
	demand, multipoint  bool
	authPresent, cpiInd bool
}

const packetLen = 24

func (p packet) marshal() []byte {
	b := make([]byte, packetLen)
	b[0] = 1<<5 | byte(p.Diag&0x1f)
	b[1] = byte(p.State) << 6
	if p.Poll {
		b[1] |= 0x20
	}
	if p.Final {
		b[1] |= 0x10
	}
	b[2] = p.DetectMult
	b[3] = packetLen
	binary.BigEndian.PutUint32(b[4:], p.MyDisc)
	binary.BigEndian.PutUint32(b[8:], p.YourDisc)
	binary.BigEndian.PutUint32(b[12:], uint32(p.DesiredMinTx/time.Microsecond))
	binary.BigEndian.PutUint32(b[16:], uint32(p.RequiredMinRx/time.Microsecond))
	binary.BigEndian.PutUint32(b[20:], uint32(p.RequiredMinEchoRx/time.Microsecond))
	return b
}

var errBadPacket = errors.New("bfd: malformed control packet")

// parse checks a received control packet as RFC 5880 6.8.6 says (the checks before
// the session is looked up).
func parse(b []byte) (packet, error) {
	if len(b) < packetLen {
		return packet{}, fmt.Errorf("%w: %d bytes", errBadPacket, len(b))
	}
	p := packet{
		Diag: Diag(b[0] & 0x1f), State: State(b[1] >> 6), Poll: b[1]&0x20 != 0, Final: b[1]&0x10 != 0,
		cpiInd: b[1]&0x08 != 0, authPresent: b[1]&0x04 != 0, demand: b[1]&0x02 != 0, multipoint: b[1]&0x01 != 0,
		DetectMult: b[2], MyDisc: binary.BigEndian.Uint32(b[4:]), YourDisc: binary.BigEndian.Uint32(b[8:]),
		DesiredMinTx:      time.Duration(binary.BigEndian.Uint32(b[12:])) * time.Microsecond,
		RequiredMinRx:     time.Duration(binary.BigEndian.Uint32(b[16:])) * time.Microsecond,
		RequiredMinEchoRx: time.Duration(binary.BigEndian.Uint32(b[20:])) * time.Microsecond,
	}
	switch {
	case b[0]>>5 != 1:
		return p, fmt.Errorf("%w: version %d", errBadPacket, b[0]>>5)
	case int(b[3]) < packetLen || int(b[3]) > len(b):
		return p, fmt.Errorf("%w: length field %d of %d bytes", errBadPacket, b[3], len(b))
	case p.DetectMult == 0:
		return p, fmt.Errorf("%w: detect multiplier 0", errBadPacket)
	case p.multipoint:
		return p, fmt.Errorf("%w: multipoint bit set", errBadPacket)
	case p.MyDisc == 0:
		return p, fmt.Errorf("%w: my discriminator 0", errBadPacket)
	case p.YourDisc == 0 && p.State != Down && p.State != AdminDown:
		return p, fmt.Errorf("%w: your discriminator 0 in state %s", errBadPacket, p.State)
	case p.authPresent:
		return p, fmt.Errorf("%w: authentication is not supported", errBadPacket)
	}
	return p, nil
}
