//go:build !linux

package netutils

import "net"

// ResetIfUnacknowledged reads TCP_INFO on Linux only; elsewhere a close sends
// a FIN as before.
func ResetIfUnacknowledged(conn net.Conn) {}
