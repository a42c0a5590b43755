package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
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
	// Insecure allows http:// endpoints off this host. Whoever reaches such an
	// endpoint changes the fleet's policy, drains and blackholes without credentials,
	// so it must be said: for a network nothing else reaches (a lab's namespaces).
	Insecure bool
}

// PlainHTTPError is an http:// endpoint off this host in a configuration that does
// not say Insecure; a tool names its own setting for Insecure (errors.As).
type PlainHTTPError struct{ Endpoint string }

func (e *PlainHTTPError) Error() string {
	return fmt.Sprintf("etcd endpoint %q is plain HTTP off this host: %s; use https:// with a client certificate (ca, cert, key), or say insecure: true", e.Endpoint, PlainHTTPRisk)
}

// PlainHTTPRisk is why an http:// endpoint off this host is refused, for tools that
// word the refusal with their own settings.
const PlainHTTPRisk = "whoever reaches it can change the fleet's policy, drains and blackholes without credentials"

// PlainHTTPOffHost says whether u is an http:// URL whose host is not this one's
// loopback (127.0.0.0/8, ::1 or localhost): its traffic, credentials included,
// crosses a network in clear.
func PlainHTTPOffHost(u string) bool {
	if !strings.HasPrefix(u, "http://") {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return true // not a URL that names the loopback
	}
	host := p.Hostname()
	if strings.EqualFold(host, "localhost") {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err != nil || !a.Unmap().IsLoopback()
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
		} else if !c.Insecure && PlainHTTPOffHost(e) {
			errs = append(errs, &PlainHTTPError{Endpoint: e})
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
// endpoint that does) with clusterName's keys: for tools, which have nothing to do
// without etcd.
func Connect(ctx context.Context, c EtcdConfig, clusterName string) (*clientv3.Client, error) {
	if err := CheckName(clusterName); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cli, err := NewClient(c)
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, cli, Prefix(clusterName)); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w (check the endpoints %v, TLS files and credentials)", err, c.Endpoints)
	}
	return cli, nil
}

// Ping asks etcd for a count of the store's fleet's keys: it answers, and takes this
// client's credentials. Only that fleet's keys: with etcd auth on, a fleet's role may
// read nothing else.
func (s *Store) Ping(ctx context.Context) error { return ping(ctx, s.cli, s.prefix) }

func ping(ctx context.Context, cli *clientv3.Client, prefix string) error {
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Get(tctx, prefix, clientv3.WithCountOnly(), clientv3.WithPrefix()); err != nil {
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
