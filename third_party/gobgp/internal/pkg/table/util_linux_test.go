//go:build linux

package table

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSystemMemoryAvailableMiB: the free memory is read without cgo (the package's
// tests build with CGO_ENABLED=0) and lies between nothing and the machine's total.
func TestSystemMemoryAvailableMiB(t *testing.T) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo to compare with: %v", err)
	}
	defer f.Close()
	var totalMiB uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			totalMiB = kb / 1024
		}
	}
	if totalMiB == 0 {
		t.Fatal("no MemTotal in /proc/meminfo")
	}
	free := SystemMemoryAvailableMiB()
	if free == 0 || free > totalMiB {
		t.Fatalf("SystemMemoryAvailableMiB() = %d MiB; want between 1 and the machine's %d MiB", free, totalMiB)
	}
	t.Logf("%d MiB free of %d MiB", free, totalMiB)
}
