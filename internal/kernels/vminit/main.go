// Command vminit is the /init of the kernel matrix's initramfs (internal/kernels): it
// mounts what the dataplane's tests need, runs every test binary under /tests with
// the arguments in /args, prints each one's exit status between markers the host
// parses, and powers the virtual machine off. It is built static (CGO_ENABLED=0) and
// never runs on a real host: it refuses to start unless it is process 1.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fibfleet/fibfleet/internal/kernels"
	"golang.org/x/sys/unix"
)

// Marker starts every line the host parses.
const Marker = kernels.Marker

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "vminit: not process 1: this is the kernel matrix's /init, for a virtual machine only")
		os.Exit(2)
	}
	defer poweroff()
	if err := setup(); err != nil {
		fmt.Printf("%s setup-failed %v\n", Marker, err)
		return
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	fmt.Printf("%s kernel %s\n", Marker, unix.ByteSliceToString(uts.Release[:]))
	args := readArgs("/args")
	bins, _ := filepath.Glob("/tests/*.test")
	for _, bin := range bins {
		name := strings.TrimSuffix(filepath.Base(bin), ".test")
		fmt.Printf("%s begin %s\n", Marker, name)
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/tmp"
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
		cmd.Env = []string{"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp", "CI=1", "FIBFLEET_IN_VM=1"}
		code := 0
		if err := cmd.Run(); err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				fmt.Printf("vminit: run %s: %v\n", bin, err)
			}
		}
		fmt.Printf("%s exit %s %d\n", Marker, name, code)
	}
	fmt.Printf("%s done\n", Marker)
}

// setup mounts proc, sysfs, devtmpfs and bpffs, and brings the loopback up (the
// dataplane's tests use lo as an egress port and for bpf_fib_lookup).
func setup() error {
	for _, m := range []struct{ src, dir, fstype string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"bpf", "/sys/fs/bpf", "bpf"},
		{"tmpfs", "/tmp", "tmpfs"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dir, m.fstype, 0, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dir, err)
		}
	}
	// The kernel gives init the console only if the initramfs has /dev/console: take
	// it from devtmpfs, so that output reaches the serial port either way.
	if fd, err := unix.Open("/dev/console", unix.O_RDWR, 0); err == nil {
		_ = unix.Dup3(fd, 1, 0)
		_ = unix.Dup3(fd, 2, 0)
		if fd > 2 {
			unix.Close(fd)
		}
	}
	return loUp()
}

func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// readArgs reads one test argument per line.
func readArgs(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var args []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if a := strings.TrimSpace(s.Text()); a != "" {
			args = append(args, a)
		}
	}
	return args
}

func poweroff() {
	unix.Sync()
	_ = unix.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}
