package dataplane

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// nativeU32 reinterprets 4 bytes in network order as a host-order u32, so that the
// kernel sees the same bytes the packet carries.
func nativeU32(b [4]byte) uint32 { return binary.NativeEndian.Uint32(b[:]) }

func isBPFFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return uint32(st.Type) == unix.BPF_FS_MAGIC
}
