package lab

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// disableTxChecksum turns off TX checksum offload on an interface of the namespace
// (as `ethtool -K IF tx off` would). A veth hands frames on with checksums still
// partial; once XDP redirects such a frame, nobody completes it and the receiver drops
// it as a UDP checksum error. A real NIC fills the checksum in before the wire, so only
// the lab's traffic sources need this.
func disableTxChecksum(ns *Netns, ifname string) error {
	return ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		val := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_STXCSUM, data: 0}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], ifname)
		ifr.data = unsafe.Pointer(&val)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return fmt.Errorf("disable TX checksum offload on %s: %w", ifname, errno)
		}
		return nil
	})
}
