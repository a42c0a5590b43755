package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdConfig says how to reach the fleet's etcd.
type EtcdConfig struct {
	// Endpoints are client URLs (http://, https://, or unix:///path for a socket).
	Endpoints []string
	// CA verifies the servers' certificates; Cert and Key are this client's (etcd's
	// --client-cert-auth). Any of them set means TLS.
	CA, Cert, Key string
	// Username and Password authenticate (etcd auth enabled); PasswordFile, when set,
	// holds the password (so it stays out of config files and process lists).
	Username, Password, PasswordFile string
	// DialTimeout bounds the first connection (default 5 s).
	DialTimeout time.Duration
}

// Validate reports every bad field at once.
func (c EtcdConfig) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("etcd endpoints: give at least one client URL, such as http://10.0.0.1:2379"))
	}
	for _, e := range c.Endpoints {
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") && !strings.HasPrefix(e, "unix://") {
			errs = append(errs, fmt.Errorf("etcd endpoint %q: write a URL starting with http://, https:// or unix://", e))
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		errs = append(errs, errors.New("etcd TLS: give both a client certificate and its key, or neither"))
	}
	if c.Password != "" && c.PasswordFile != "" {
		errs = append(errs, errors.New("etcd auth: give a password or a password file, not both"))
	}
	if (c.Password != "" || c.PasswordFile != "") && c.Username == "" {
		errs = append(errs, errors.New("etcd auth: a password needs a username"))
	}
	return errors.Join(errs...)
}

// Connect opens an etcd client and checks that the cluster answers (the first
// endpoint that does): for tools, which have nothing to do without etcd.
func Connect(ctx context.Context, c EtcdConfig) (*clientv3.Client, error) {
	cli, err := NewClient(c)
	if err != nil {
		return nil, err
	}
	if err := Ping(ctx, cli); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w (check the endpoints %v, TLS files and credentials)", err, c.Endpoints)
	}
	return cli, nil
}

// Ping asks etcd for a count of the fleet's keys: it answers, and takes this client's
// credentials.
func Ping(ctx context.Context, cli *clientv3.Client) error {
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Get(tctx, "/fibfleet/", clientv3.WithCountOnly(), clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("cluster: etcd does not answer: %w", err)
	}
	return nil
}

// NewClient opens an etcd client without waiting for a server (but for the token,
// when it has credentials): a node starts, and forwards, while etcd is away, and its
// agent catches up when it answers.
func NewClient(c EtcdConfig) (*clientv3.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg := clientv3.Config{Endpoints: c.Endpoints, DialTimeout: c.DialTimeout, Username: c.Username, Password: c.Password,
		// etcd's client logs with zap at info; the node reports what matters itself.
		Logger: zap.NewNop()}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: read the etcd password file: %w", err)
		}
		cfg.Password = strings.TrimRight(string(b), "\r\n")
	}
	if c.CA != "" || c.Cert != "" {
		tlsInfo := transport.TLSInfo{TrustedCAFile: c.CA, CertFile: c.Cert, KeyFile: c.Key}
		tc, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster: etcd TLS files (ca %q, cert %q, key %q): %w", c.CA, c.Cert, c.Key, err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		// With credentials the client authenticates before it returns.
		return nil, fmt.Errorf("cluster: etcd at %v refused or did not answer (check the endpoints, TLS files and credentials): %w", c.Endpoints, err)
	}
	return cli, nil
}
