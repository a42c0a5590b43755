//go:build linux

package netutils

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ResetIfUnacknowledged makes conn's close send a reset (RST) instead of a FIN
// when its peer has left what was sent unacknowledged past a retransmission
// timeout. Such a FIN would never arrive: it waits behind the unacknowledged
// data, and the timeout has left the congestion window at the one segment being
// retransmitted. A peer whose acknowledgements are lost
// on the way back (GTSM's minimum TTL dropping them, a one-way path failure) would
// then hold its end of the connection until its own timers expire; a reset is sent
// at once, outside the window.
func ResetIfUnacknowledged(conn net.Conn) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil || info.Unacked == 0 || (info.Retransmits == 0 && info.Backoff == 0) {
			return
		}
		// A failure leaves the close as it was: a FIN.
		_ = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	})
}
