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
	return ethtoolSet(ns, ifname, unix.ETHTOOL_STXCSUM, 0)
}

// SetGRO turns GRO on or off on an interface of the namespace (ethtool -K IF gro on):
// a veth without an XDP program accepts XDP-transmitted frames only with GRO on.
func SetGRO(ns *Netns, ifname string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	return ethtoolSet(ns, ifname, unix.ETHTOOL_SGRO, v)
}

// ethtoolSet issues a legacy ethtool "set" ioctl with one value.
func ethtoolSet(ns *Netns, ifname string, cmd, value uint32) error {
	return ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		val := struct{ cmd, data uint32 }{cmd: cmd, data: value}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], ifname)
		ifr.data = unsafe.Pointer(&val)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return fmt.Errorf("ethtool command %#x on %s: %w", cmd, ifname, errno)
		}
		return nil
	})
}
