// Package lab builds fibfleet test topologies on one machine: network namespaces joined
// by veth pairs, processes run inside them (BIRD, the node), and traffic sent through
// them. Tests and the demo share it.
//
// Every namespace and interface carries the lab's random prefix, and Close removes all
// of them and stops every process, even after a failure. A lab whose process was
// killed before Close is removed by the next New (namespaces, the processes in them,
// bpffs pins). A lab is never connected to
// the host's network: no veth has an end in the root namespace and no namespace gets a
// default route, so packets to real Internet destinations stay inside; CheckIsolated
// asserts it.
package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netns"
)

// Lab owns namespaces, links and processes, and removes them on Close.
type Lab struct {
	// Prefix starts every namespace and interface name of this lab.
	Prefix string

	mu         sync.Mutex
	namespaces []*Netns
	cleanups   []func() error
}

// Netns is one network namespace of a lab.
type Netns struct {
	Name string
	lab  *Lab
}

// ownerDir holds one file per live lab, named by its prefix, holding the owner's PID:
// a lab whose owner died without Close (a killed test) is found and removed by the
// next New.
const ownerDir = "/run/fibfleet-lab"

// New creates an empty lab with a random prefix such as "ff3a9c", first removing what
// labs of dead processes left behind.
func New() (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("lab: needs root (network namespaces, veth, XDP)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("lab: the ip command is missing: apt-get install iproute2")
	}
	ReapStale()
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	l := &Lab{Prefix: "ff" + hex.EncodeToString(b)}
	owner := filepath.Join(ownerDir, l.Prefix)
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := os.WriteFile(owner, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l.Defer(func() error { return os.Remove(owner) }) // runs last
	return l, nil
}

// ReapStale removes the namespaces (and the processes in them) and the bpffs pins of
// labs whose owner process is gone, saying so on the default logger.
func ReapStale() {
	entries, _ := os.ReadDir(ownerDir)
	for _, e := range entries {
		prefix := e.Name()
		b, err := os.ReadFile(filepath.Join(ownerDir, prefix))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // alive (or not ours to judge)
		}
		out, _ := run("ip", "netns", "list")
		var removed []string
		for _, line := range strings.Split(out, "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if !strings.HasPrefix(name, prefix+"-") {
				continue
			}
			pids, _ := run("ip", "netns", "pids", name)
			for _, f := range strings.Fields(pids) {
				if p, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			if _, err := run("ip", "netns", "del", name); err == nil {
				removed = append(removed, name)
			}
		}
		pins, _ := filepath.Glob(filepath.Join("/sys/fs/bpf/fibfleet", prefix+"-*"))
		for _, p := range pins {
			_ = os.RemoveAll(p)
		}
		_ = os.Remove(filepath.Join(ownerDir, prefix))
		slog.Warn("lab: removed what a killed run left behind", "prefix", prefix, "owner_pid", pid, "namespaces", removed, "pin_dirs", len(pins))
	}
}

// Leftovers lists what labs of this process still hold: their network namespaces
// and bpffs pin directories. Tests call it after a setup that failed part way, whose
// cleanup must have removed everything.
func Leftovers() []string {
	entries, _ := os.ReadDir(ownerDir)
	self := strconv.Itoa(os.Getpid())
	out, _ := run("ip", "netns", "list")
	var left []string
	for _, e := range entries {
		prefix := e.Name()
		if b, err := os.ReadFile(filepath.Join(ownerDir, prefix)); err != nil || strings.TrimSpace(string(b)) != self {
			continue
		}
		left = append(left, filepath.Join(ownerDir, prefix))
		for _, line := range strings.Split(out, "\n") {
			if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasPrefix(name, prefix+"-") {
				left = append(left, "netns "+name)
			}
		}
		pins, _ := filepath.Glob(filepath.Join("/sys/fs/bpf/fibfleet", prefix+"-*"))
		left = append(left, pins...)
	}
	return left
}

// Defer registers a cleanup; Close runs them in reverse order.
func (l *Lab) Defer(fn func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, fn)
}

// Close stops every process and removes every namespace (and with them the veths).
func (l *Lab) Close() error {
	l.mu.Lock()
	cleanups := l.cleanups
	l.cleanups = nil
	l.mu.Unlock()
	var errs []error
	for i := len(cleanups) - 1; i >= 0; i-- {
		errs = append(errs, cleanups[i]())
	}
	return errors.Join(errs...)
}

func run(args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// Netns creates a namespace named <prefix>-<role> with loopback up.
func (l *Lab) Netns(role string) (*Netns, error) {
	n := &Netns{Name: l.Prefix + "-" + role, lab: l}
	if _, err := run("ip", "netns", "add", n.Name); err != nil {
		return nil, err
	}
	l.Defer(func() error {
		_, err := run("ip", "netns", "del", n.Name)
		return err
	})
	l.mu.Lock()
	l.namespaces = append(l.namespaces, n)
	l.mu.Unlock()
	if _, err := n.Exec("ip", "link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	// No duplicate address detection on the links made here (as nodad for the
	// addresses the lab adds): a link-local address stays tentative for 1-2 s after
	// its link comes up, and the kernel sends no neighbour solicitation for an entry
	// without a packet behind it (a node's kernel-managed next hop) until it is not;
	// the entry fails and is probed again only 5 s later, and frames a test sends
	// meanwhile pass to a kernel that does not forward.
	for _, k := range []string{"net.ipv6.conf.all.accept_dad", "net.ipv6.conf.default.accept_dad"} {
		if err := n.Sysctl(k, "0"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// If returns this lab's name for an interface role: <prefix><role>, at most 15 bytes.
func (l *Lab) If(role string) string { return l.Prefix + role }

// Link joins two namespaces with a veth pair, addresses both ends (CIDR, may be
// empty) and brings them up. Interface names are l.If(aRole) and l.If(bRole).
func (l *Lab) Link(a *Netns, aRole, aAddr string, b *Netns, bRole, bAddr string) error {
	an, bn := l.If(aRole), l.If(bRole)
	if _, err := run("ip", "link", "add", an, "netns", a.Name, "type", "veth", "peer", "name", bn, "netns", b.Name); err != nil {
		return err
	}
	for _, e := range []struct {
		ns         *Netns
		name, addr string
	}{{a, an, aAddr}, {b, bn, bAddr}} {
		if e.addr != "" {
			if _, err := e.ns.Exec("ip", "addr", "add", e.addr, "dev", e.name); err != nil {
				return err
			}
		}
		if _, err := e.ns.Exec("ip", "link", "set", e.name, "up"); err != nil {
			return err
		}
	}
	return nil
}

// Exec runs a command inside the namespace and returns its standard output.
func (n *Netns) Exec(args ...string) (string, error) {
	return run(append(n.enter(), args...)...)
}

// enter prefixes a command so it runs in the namespace. It uses nsenter, which switches
// only the network namespace: `ip netns exec` also remounts /sys, which hides the
// host's bpffs at /sys/fs/bpf from the node and its pins from everyone else.
func (n *Netns) enter() []string {
	return []string{"nsenter", "--net=/run/netns/" + n.Name, "--"}
}

// Sysctl sets a sysctl inside the namespace.
func (n *Netns) Sysctl(key, value string) error {
	_, err := n.Exec("sysctl", "-qw", key+"="+value)
	return err
}

// Start starts a long-running process inside the namespace, its output appended to
// logPath; Close stops it (SIGTERM, then SIGKILL after 30 s: a node holding a full
// table takes seconds to shut down, and it must, to remove its pins).
func (n *Netns) Start(logPath string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := append(n.enter(), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s in %s: %w", args[0], n.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	n.lab.Defer(func() error {
		return stop(cmd, done)
	})
	return cmd, nil
}

func stop(cmd *exec.Cmd, done chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 30s of SIGTERM; killed", cmd.Args)
	}
}

// Do runs fn on a thread switched into the namespace: sockets fn opens stay in it.
func (n *Netns) Do(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	h, err := netns.GetFromName(n.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open netns %s: %w", n.Name, err)
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime discards it when the goroutine exits.
		return errors.Join(ferr, fmt.Errorf("return to the original netns: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// CheckIsolated verifies that the lab cannot reach the host's network: no namespace has
// a default route, every veth's peer is in one of the lab's namespaces, and the root
// namespace holds none of the lab's interfaces.
func (l *Lab) CheckIsolated() error {
	l.mu.Lock()
	nss := append([]*Netns(nil), l.namespaces...)
	l.mu.Unlock()
	own := map[string]bool{}
	for _, n := range nss {
		own[n.Name] = true
	}
	var errs []error
	for _, n := range nss {
		for _, fam := range []string{"-4", "-6"} {
			out, err := n.Exec("ip", fam, "route", "show", "default")
			if err != nil {
				errs = append(errs, err)
			} else if strings.TrimSpace(out) != "" {
				errs = append(errs, fmt.Errorf("%s has a default route: %s", n.Name, strings.TrimSpace(out)))
			}
		}
		out, err := n.Exec("ip", "-o", "-d", "link", "show")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || strings.HasPrefix(f[1], "lo:") {
				continue
			}
			// A bridge joins only its ports, which are checked as veths themselves.
			if !strings.Contains(f[1], "@") && slices.Contains(f, "bridge") {
				continue
			}
			peerNS := ""
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "link-netns" {
					peerNS = strings.TrimSuffix(f[i+1], `\`)
				}
			}
			if !own[peerNS] {
				errs = append(errs, fmt.Errorf("%s: interface %s has a peer outside the lab's namespaces: %s", n.Name, strings.TrimSuffix(f[1], ":"), line))
			}
		}
	}
	out, err := run("ip", "-o", "link", "show")
	if err != nil {
		errs = append(errs, err)
	} else if strings.Contains(out, " "+l.Prefix) {
		errs = append(errs, fmt.Errorf("the root namespace holds an interface of lab %s", l.Prefix))
	}
	return errors.Join(errs...)
}

// AttachPass attaches a one-instruction XDP_PASS program to an interface: a veth drops
// frames redirected into it by XDP unless the receiving end runs XDP (or GRO).
func (l *Lab) AttachPass(ns *Netns, ifname string) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		return fmt.Errorf("load XDP_PASS program: %w", err)
	}
	var lk link.Link
	err = ns.Do(func() error {
		iface, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: iface.Index})
		return err
	})
	if err != nil {
		prog.Close()
		return fmt.Errorf("attach XDP_PASS to %s: %w", ifname, err)
	}
	l.Defer(func() error { return errors.Join(lk.Close(), prog.Close()) })
	return nil
}

// Metrics scrapes /metrics from a node's HTTP server at addr inside the namespace:
// the samples as "name{labels}" -> value.
func (n *Netns) Metrics(addr string) (map[string]float64, error) {
	b, err := n.HTTPGet(addr, "/metrics")
	if err != nil {
		return nil, err
	}
	return ParseMetrics(b), nil
}

// HTTPGet fetches a path from an HTTP server listening at addr inside the namespace.
func (n *Netns) HTTPGet(addr, path string) ([]byte, error) {
	return n.HTTPGetWithin(addr, path, 5*time.Second)
}

// HTTPGetWithin is HTTPGet for an answer that takes up to timeout (a CPU profile).
func (n *Netns) HTTPGetWithin(addr, path string, timeout time.Duration) ([]byte, error) {
	// The connection must be opened on the thread that is in the namespace;
	// http.Transport would dial from another goroutine, so hand it this one.
	var conn net.Conn
	err := n.Do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("HTTP %s in %s: %w", path, n.Name, err)
	}
	defer conn.Close()
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil },
	}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return nil, fmt.Errorf("HTTP %s in %s: %w", path, n.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s: %s", resp.Status, body)
	}
	if err != nil {
		return nil, fmt.Errorf("HTTP %s in %s: %w", path, n.Name, err)
	}
	return body, nil
}

// UnixGet fetches a path from an HTTP server on a unix socket.
func UnixGet(sock, path string) ([]byte, error) { return UnixGetWithin(sock, path, 5*time.Second) }

// UnixGetWithin is UnixGet with its own timeout (a CPU profile takes its seconds).
func UnixGetWithin(sock, path string, timeout time.Duration) ([]byte, error) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := c.Get("http://node" + path)
	if err != nil {
		return nil, fmt.Errorf("HTTP %s on %s: %w", path, sock, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s: %s", resp.Status, body)
	}
	if err != nil {
		return nil, fmt.Errorf("HTTP %s on %s: %w", path, sock, err)
	}
	return body, nil
}

// ParseMetrics reads a Prometheus text exposition into "name{labels}" -> value.
func ParseMetrics(body []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
