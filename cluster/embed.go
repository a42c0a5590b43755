package cluster

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Embedded is an etcd server inside the node's process, for a node that runs alone
// (no etcd endpoints configured): the same client API as a real cluster, its data in
// a directory of its own, listening on loopback only.
type Embedded struct {
	e *embed.Etcd
	// Endpoint is the client URL to give clientv3.
	Endpoint string
}

// StartEmbedded starts a one-member etcd with its data in dir (created if missing)
// and waits until it serves. Client and peer ports are free loopback ports.
func StartEmbedded(dir, name string) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: create the embedded etcd's data directory %s: %w", dir, err)
	}
	client, err := freeURL()
	if err != nil {
		return nil, err
	}
	peer, err := freeURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = name + "=" + peer.String()
	cfg.LogLevel = "error" // etcd's own log is zap's; the node logs what matters
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: start the embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd failed to start: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd in %s not ready after a minute (is its data directory another member's?)", dir)
	}
	return &Embedded{e: e, Endpoint: client.String()}, nil
}

// Close stops the server.
func (e *Embedded) Close() { e.e.Close() }

// freeURL is an http URL on a loopback port free right now.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("cluster: find a free loopback port: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}
