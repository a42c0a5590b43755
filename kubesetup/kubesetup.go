// Package kubesetup is what the Helm chart's hook jobs do, so that a fleet is secure
// as installed and stays so through upgrades, whatever renders the chart (helm,
// helm template, Argo CD, Flux):
//
//   - before install and upgrade (Reconcile): the fleet's Secrets, made once and kept:
//     a CA, the bundled etcd's server and peer certificate, the client certificates
//     whose common names are etcd users (root, the nodes, ctl), the gossip key. No key
//     ever passes through a template, so two renders are identical and carry none. A
//     certificate is issued again only when it must be (package pki decides); the CA
//     and the gossip key never are.
//   - after install and upgrade (EnableEtcdAuth): the bundled etcd's authentication
//     on, with a role that can touch only the fleet's keys.
//
// The Kubernetes side is behind the Secrets interface (KubeSecrets is client-go's);
// tests and the chart's own test run the same code on a map.
package kubesetup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/fibfleet/fibfleet/pki"
)

// Secret types, as Kubernetes names them.
const (
	TypeOpaque = "Opaque"
	TypeTLS    = "kubernetes.io/tls"
)

// Keys in the Secrets made: Kubernetes' conventions for TLS Secrets, and the gossip
// key's name the chart and the node's key_file use.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyCert    = "tls.crt"
	KeyKey     = "tls.key"
	KeyGossip  = "key"
	gossipSize = 32
)

// Secrets reads and writes Secrets in one namespace.
type Secrets interface {
	// Get returns a Secret's data, or found false when there is none.
	Get(ctx context.Context, name string) (data map[string][]byte, found bool, err error)
	// Create makes a Secret that does not exist; Update replaces the data of one
	// that does.
	Create(ctx context.Context, name, typ string, data map[string][]byte) error
	Update(ctx context.Context, name, typ string, data map[string][]byte) error
}

// Plan names the Secrets to make (the chart names them all, so that its templates
// and this job agree by construction).
type Plan struct {
	// CASecret holds the CA (ca.crt, ca.key): needed when any certificate is.
	CASecret string
	// Server, when set, is the bundled etcd's certificate (ca.crt, tls.crt,
	// tls.key), for clients and peers alike.
	Server *Server
	// Clients are client certificates, one Secret each.
	Clients []Client
	// GossipSecret, when set, holds the gossip key (key: 32 random bytes, base64).
	GossipSecret string
	// GossipSeed, when set, is a Secret whose key a new GossipSecret takes instead of
	// a random one: the gossip Secret an earlier chart rendered itself, so that an
	// upgrade keeps the fleet's gossip whole.
	GossipSeed string
}

// Server is the etcd members' certificate: the names clients and peers reach them
// by (DNS names and IP addresses alike).
type Server struct {
	Secret string
	Names  []string
}

// Client is a client certificate: its common name is its etcd user.
type Client struct {
	User   string
	Secret string
}

// Validate reports every bad field at once.
func (p Plan) Validate() error {
	var errs []error
	certs := p.Server != nil || len(p.Clients) > 0
	if certs && p.CASecret == "" {
		errs = append(errs, errors.New("certificates need a CA Secret: give --ca-secret"))
	}
	if p.Server != nil && (p.Server.Secret == "" || len(p.Server.Names) == 0) {
		errs = append(errs, errors.New("the etcd server certificate needs a Secret and at least one name"))
	}
	if p.GossipSeed != "" && p.GossipSecret == "" {
		errs = append(errs, errors.New("a gossip seed without a gossip Secret to make: give --gossip-secret"))
	}
	seen := map[string]bool{p.CASecret: true, p.GossipSecret: true}
	if p.Server != nil {
		if seen[p.Server.Secret] {
			errs = append(errs, fmt.Errorf("Secret %s named twice", p.Server.Secret))
		}
		seen[p.Server.Secret] = true
	}
	for _, c := range p.Clients {
		if c.User == "" || c.Secret == "" {
			errs = append(errs, fmt.Errorf("client %q -> Secret %q: give user=secret", c.User, c.Secret))
		}
		if seen[c.Secret] {
			errs = append(errs, fmt.Errorf("Secret %s named twice", c.Secret))
		}
		seen[c.Secret] = true
	}
	if !certs && p.GossipSecret == "" {
		errs = append(errs, errors.New("nothing to make: name a gossip Secret, an etcd server or clients"))
	}
	return errors.Join(errs...)
}

// Change is one Secret written, and why.
type Change struct {
	Secret, Why string
}

// Reconcile makes what the plan names and is missing, and issues again the
// certificates that must be (pki.CA.Stale); the rest it leaves as it is. It never
// replaces the CA or the gossip key: a damaged one is an error saying what to do.
func Reconcile(ctx context.Context, s Secrets, p Plan, now time.Time, log *slog.Logger) ([]Change, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var changes []Change
	did := func(name, why string) {
		changes = append(changes, Change{name, why})
		log.Info("secret written", "secret", name, "why", why)
	}
	if p.GossipSecret != "" {
		why, err := gossip(ctx, s, p.GossipSecret, p.GossipSeed)
		if err != nil {
			return changes, err
		}
		if why != "" {
			did(p.GossipSecret, why)
		}
	}
	if p.CASecret == "" {
		return changes, nil
	}
	ca, why, err := authority(ctx, s, p.CASecret, now)
	if err != nil {
		return changes, err
	}
	if why != "" {
		did(p.CASecret, why)
	}
	type want struct {
		secret string
		leaf   pki.Leaf
	}
	var leaves []want
	if p.Server != nil {
		l := pki.Leaf{CommonName: "etcd", Server: true, Client: true}
		for _, n := range p.Server.Names {
			if ip := net.ParseIP(n); ip != nil {
				l.IPs = append(l.IPs, ip)
			} else {
				l.DNSNames = append(l.DNSNames, n)
			}
		}
		leaves = append(leaves, want{p.Server.Secret, l})
	}
	for _, c := range p.Clients {
		leaves = append(leaves, want{c.Secret, pki.Leaf{CommonName: c.User, Client: true}})
	}
	for _, w := range leaves {
		data, found, err := s.Get(ctx, w.secret)
		if err != nil {
			return changes, fmt.Errorf("read Secret %s: %w", w.secret, err)
		}
		why := ca.Stale(w.leaf, pki.Issued{CertPEM: data[KeyCert], KeyPEM: data[KeyKey]}, now)
		if why == "" && !bytes.Equal(data[KeyCACert], ca.CertPEM) {
			why = "another CA certificate beside it"
		}
		if why == "" {
			continue
		}
		is, err := ca.Issue(w.leaf, now)
		if err != nil {
			return changes, err
		}
		out := map[string][]byte{KeyCACert: ca.CertPEM, KeyCert: is.CertPEM, KeyKey: is.KeyPEM}
		if err := put(ctx, s, w.secret, TypeTLS, out, found); err != nil {
			return changes, err
		}
		did(w.secret, why)
	}
	return changes, nil
}

// authority loads the CA, or makes it when its Secret does not exist.
func authority(ctx context.Context, s Secrets, name string, now time.Time) (*pki.CA, string, error) {
	data, found, err := s.Get(ctx, name)
	if err != nil {
		return nil, "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	if found {
		ca, err := pki.LoadCA(data[KeyCACert], data[KeyCAKey])
		if err != nil {
			return nil, "", fmt.Errorf("Secret %s does not hold the fleet's CA (%w): restore it, or delete it to make a new CA: every certificate is then issued again, and etcd reads its CA only at start, so restart every etcd member at once, then the nodes", name, err)
		}
		if left := ca.Cert.NotAfter.Sub(now); left < 365*24*time.Hour {
			return nil, "", fmt.Errorf("Secret %s: the fleet's CA expires %s: delete the Secret to make a new CA (every certificate is then issued again; restart every etcd member at once, then the nodes)", name, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
		}
		return ca, "", nil
	}
	ca, err := pki.NewCA("fibfleet CA "+name, now)
	if err != nil {
		return nil, "", err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, "", err
	}
	if err := put(ctx, s, name, TypeOpaque, map[string][]byte{KeyCACert: ca.CertPEM, KeyCAKey: key}, false); err != nil {
		return nil, "", err
	}
	return ca, "missing", nil
}

// gossip makes the gossip key when its Secret does not exist (the seed's, if it holds
// one), and checks the one that does (replacing it would split the fleet's gossip
// until every node restarts).
func gossip(ctx context.Context, s Secrets, name, seed string) (string, error) {
	data, found, err := s.Get(ctx, name)
	if err != nil {
		return "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	if found {
		if !validGossipKey(data[KeyGossip]) {
			return "", fmt.Errorf("Secret %s: its %q is not a gossip key (16, 24 or 32 bytes, raw or base64): fix it, or delete the Secret to make a new one and restart every node at once", name, KeyGossip)
		}
		return "", nil
	}
	if seed != "" {
		old, found, err := s.Get(ctx, seed)
		if err != nil {
			return "", fmt.Errorf("read Secret %s: %w", seed, err)
		}
		if found && validGossipKey(old[KeyGossip]) {
			if err := put(ctx, s, name, TypeOpaque, map[string][]byte{KeyGossip: old[KeyGossip]}, false); err != nil {
				return "", err
			}
			return "missing: the key of " + seed, nil
		}
	}
	raw := make([]byte, gossipSize)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("gossip key: %w", err)
	}
	key := []byte(base64.StdEncoding.EncodeToString(raw))
	if err := put(ctx, s, name, TypeOpaque, map[string][]byte{KeyGossip: key}, false); err != nil {
		return "", err
	}
	return "missing", nil
}

// validGossipKey: what the node's gossip key_file takes.
func validGossipKey(k []byte) bool {
	sizes := []int{16, 24, 32}
	if slices.Contains(sizes, len(k)) {
		return true
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(k)))
	return err == nil && slices.Contains(sizes, len(raw))
}

func put(ctx context.Context, s Secrets, name, typ string, data map[string][]byte, exists bool) error {
	var err error
	if exists {
		err = s.Update(ctx, name, typ, data)
	} else {
		err = s.Create(ctx, name, typ, data)
	}
	if err != nil {
		return fmt.Errorf("write Secret %s: %w", name, err)
	}
	return nil
}
