package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbeddedConfig configures the etcd a node runs inside its own process when no etcd
// endpoints are configured: a one-member cluster, so one node runs alone on defaults.
type EmbeddedConfig struct {
	// Dir holds the data (created if missing).
	Dir string
	// Name is the member's name.
	Name string
	// Listen is the client URL: http://127.0.0.1:2379, unix:///path/etcd.sock; empty:
	// a free loopback port.
	Listen string
	// TLS, when set, serves clients over TLS (an https:// or unixs:// Listen).
	TLS *transport.TLSInfo
}

// Embedded is an etcd server inside the node's process: the same client API as a real
// cluster, its data in a directory of its own.
type Embedded struct {
	e     *embed.Etcd
	level zap.AtomicLevel
	// Endpoint is the client URL to give clientv3.
	Endpoint string
}

// StartEmbedded starts a one-member etcd and waits until it serves. Its peer port is
// a loopback port (no other member will ever connect), chosen free the first time and
// kept with the data.
func StartEmbedded(c EmbeddedConfig) (*Embedded, error) {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: create the embedded etcd's data directory %s: %w", c.Dir, err)
	}
	var client url.URL
	if c.Listen == "" {
		u, err := freeURL()
		if err != nil {
			return nil, err
		}
		client = u
	} else {
		u, err := url.Parse(c.Listen)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("cluster: embedded etcd listen %q: write a URL such as http://127.0.0.1:2379 or unix:///var/lib/fibfleet/etcd.sock", c.Listen)
		}
		client = *u
		if strings.HasPrefix(u.Scheme, "unix") {
			// A socket left by a killed run would make the listen fail.
			_ = os.Remove(u.Host + u.Path)
			if err := os.MkdirAll(filepath.Dir(u.Host+u.Path), 0o755); err != nil {
				return nil, fmt.Errorf("cluster: embedded etcd socket directory: %w", err)
			}
		}
	}
	peer, freshPeer, err := peerURL(c.Dir)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = c.Name + "=" + peer.String()
	// One member: no election to lose, so a short election timeout costs nothing and
	// the member leads within about 0.1 s of a start, not 0.4 to 0.6 s (etcd's 100 ms
	// heartbeat and 1 s election), which every node start and restart waited for.
	// etcd refuses an election under 5 heartbeats: lower both or neither.
	cfg.TickMs, cfg.ElectionMs = 20, 100
	if c.TLS != nil {
		cfg.ClientTLSInfo = *c.TLS
	}
	// etcd logs with zap: errors only, and nothing once Close starts (its listeners
	// report their own closing as errors).
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	zc := zap.NewProductionConfig()
	zc.Level = level
	lg, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded etcd's logger: %w", err)
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	e, err := embed.StartEtcd(cfg)
	// A port chosen free here can be taken by another process before etcd binds it
	// (tests of several packages run at once): choose again, a few times, the ports
	// this call chose and nobody configured.
	for try := 1; err != nil && errors.Is(err, syscall.EADDRINUSE) && try <= 5 && (c.Listen == "" || freshPeer); try++ {
		if c.Listen == "" {
			if client, err = freeURL(); err != nil {
				return nil, err
			}
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		}
		if freshPeer {
			if peer, err = newPeerURL(c.Dir); err != nil {
				return nil, err
			}
			cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
			cfg.InitialCluster = c.Name + "=" + peer.String()
		}
		e, err = embed.StartEtcd(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: start the embedded etcd in %s (is %s or %s in use?): %w", c.Dir, client.String(), peer.String(), err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd failed to start: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd in %s not ready after a minute (is its data directory another member's?)", c.Dir)
	}
	return &Embedded{e: e, level: level, Endpoint: client.String()}, nil
}

// Close stops the server.
func (e *Embedded) Close() {
	e.level.SetLevel(zap.FatalLevel)
	e.e.Close()
}

// peerURL is the member's peer URL: the one its data directory was made with, else a
// free loopback port, remembered there (a restarted member must keep its peer URL);
// fresh says it was chosen now.
func peerURL(dir string) (u url.URL, fresh bool, err error) {
	if b, err := os.ReadFile(peerFile(dir)); err == nil {
		if u, err := url.Parse(strings.TrimSpace(string(b))); err == nil && u.Host != "" {
			return *u, false, nil
		}
	}
	u, err = newPeerURL(dir)
	return u, true, err
}

func peerFile(dir string) string { return filepath.Join(dir, "fibfleet-peer-url") }

// newPeerURL chooses a free loopback port for the peer URL and remembers it.
func newPeerURL(dir string) (url.URL, error) {
	u, err := freeURL()
	if err != nil {
		return u, err
	}
	if err := os.WriteFile(peerFile(dir), []byte(u.String()+"\n"), 0o600); err != nil {
		return u, fmt.Errorf("cluster: remember the embedded etcd's peer URL: %w", err)
	}
	return u, nil
}

// freeURL is an http URL on a loopback port free right now (a variable: a test makes
// it answer ports taken by then).
var freeURL = func() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("cluster: find a free loopback port: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}
