//go:build linux

package table

import "syscall"

// SystemMemoryAvailableMiB returns the free memory, as sysconf(_SC_AVPHYS_PAGES)
// did, read with sysinfo(2): without cgo, so that the package and its tests
// build with CGO_ENABLED=0, as static builds of GoBGP are made.
func SystemMemoryAvailableMiB() uint64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0
	}
	return uint64(info.Freeram) * uint64(info.Unit) / (1024 * 1024)
}
