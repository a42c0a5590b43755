package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// etcdMemberArgs is the command line of one member of a static etcd cluster: clients
// on clientURLs (the first advertised), peers on peerURL.
func etcdMemberArgs(bin, name, dataDir string, clientURLs []string, peerURL string, initial []string, token string) []string {
	return []string{bin, "--name", name, "--data-dir", dataDir,
		"--listen-client-urls", strings.Join(clientURLs, ","), "--advertise-client-urls", clientURLs[0],
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", token,
		"--log-level", "warn"}
}

// EtcdCluster is a static etcd cluster of real processes on loopback: for benchmarks
// that need etcd's own latency, not an embedded server's.
type EtcdCluster struct {
	// Endpoints are the members' client URLs.
	Endpoints []string
	cmds      []*exec.Cmd
	dones     []chan struct{}
}

// StartEtcdCluster starts members processes of the etcd binary bin, data and logs in
// dir, on free loopback ports, and returns once each serves.
func StartEtcdCluster(bin, dir string, members int) (*EtcdCluster, error) {
	// Free ports: listen on :0 for each, note the port, and close the listeners
	// before the members bind them.
	ports := make([]int, 2*members)
	var ls []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Close()
	}
	var initial []string
	for i := 0; i < members; i++ {
		initial = append(initial, fmt.Sprintf("b%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	c := &EtcdCluster{}
	var args [][]string
	for i := 0; i < members; i++ {
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		c.Endpoints = append(c.Endpoints, client)
		args = append(args, etcdMemberArgs(bin, fmt.Sprintf("b%d", i), filepath.Join(dir, fmt.Sprintf("etcd%d", i)), []string{client},
			fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]), initial, fmt.Sprintf("bench-%d", os.Getpid())))
	}
	for i, a := range args {
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("etcd%d.log", i)))
		if err != nil {
			c.Close()
			return nil, err
		}
		cmd := exec.Command(a[0], a[1:]...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			c.Close()
			return nil, fmt.Errorf("start etcd (%s): %w", a[0], err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
		c.cmds, c.dones = append(c.cmds, cmd), append(c.dones, done)
	}
	for i, e := range c.Endpoints {
		host := strings.TrimPrefix(e, "http://")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, fmt.Errorf("etcd member %d does not listen on %s after 30 s (see %s)", i, e, filepath.Join(dir, fmt.Sprintf("etcd%d.log", i)))
			}
		}
	}
	return c, nil
}

// Close stops every member.
func (c *EtcdCluster) Close() error {
	var errs []error
	for i, cmd := range c.cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.dones[i]:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-c.dones[i]
			errs = append(errs, fmt.Errorf("etcd member %d ignored SIGTERM for 20 s; killed", i))
		}
	}
	return errors.Join(errs...)
}
