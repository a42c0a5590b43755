package pki_test

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/pki"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestIssueVerifies: what the CA issues verifies against it for the usages asked,
// and only those, for the names asked.
func TestIssueVerifies(t *testing.T) {
	ca := newCA(t, "fleet CA")
	server := pki.Leaf{CommonName: "etcd", DNSNames: []string{"e-0.e.ns.svc", "*.e.ns.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}
	client := pki.Leaf{CommonName: "fibfleet-node", Client: true}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, c := range []struct {
		leaf  pki.Leaf
		usage x509.ExtKeyUsage
		host  string
		ok    bool
	}{
		{server, x509.ExtKeyUsageServerAuth, "e-0.e.ns.svc", true},
		{server, x509.ExtKeyUsageServerAuth, "e-2.e.ns.svc", true}, // the wildcard
		{server, x509.ExtKeyUsageServerAuth, "127.0.0.1", true},
		{server, x509.ExtKeyUsageClientAuth, "", true},
		{server, x509.ExtKeyUsageServerAuth, "evil.example", false},
		{client, x509.ExtKeyUsageClientAuth, "", true},
		{client, x509.ExtKeyUsageServerAuth, "", false},
	} {
		is, err := ca.Issue(c.leaf, now)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.ParseCert(is.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.host, KeyUsages: []x509.ExtKeyUsage{c.usage}, CurrentTime: now.Add(time.Hour)})
		if (err == nil) != c.ok {
			t.Errorf("%s for %v at %q: verify %v, want ok %v", c.leaf.CommonName, c.usage, c.host, err, c.ok)
		}
		if cert.NotAfter.Sub(cert.NotBefore) < pki.LeafLifetime || cert.NotAfter.After(ca.Cert.NotAfter) {
			t.Errorf("%s valid %v to %v: want %v, within the CA's", c.leaf.CommonName, cert.NotBefore, cert.NotAfter, pki.LeafLifetime)
		}
	}
	other := newCA(t, "other CA")
	is, _ := other.Issue(client, now)
	cert, _ := pki.ParseCert(is.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err == nil {
		t.Error("a certificate of another CA verified")
	}
	if _, err := ca.Issue(pki.Leaf{CommonName: "x"}, now); err == nil {
		t.Error("a leaf neither server nor client was issued")
	}
}

// TestStale: a leaf is kept while good and issued again when missing, damaged, from
// another CA, for other names or usages, or with a third of its life left.
func TestStale(t *testing.T) {
	ca := newCA(t, "fleet CA")
	leaf := pki.Leaf{CommonName: "etcd", DNSNames: []string{"b", "a"}, Server: true, Client: true}
	good, err := ca.Issue(leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	if why := ca.Stale(leaf, good, now.Add(time.Hour)); why != "" {
		t.Errorf("a fresh leaf is stale: %s", why)
	}
	reordered := leaf
	reordered.DNSNames = []string{"a", "b"}
	if why := ca.Stale(reordered, good, now); why != "" {
		t.Errorf("the same names in another order: stale (%s)", why)
	}
	otherCA := newCA(t, "other")
	foreign, _ := otherCA.Issue(leaf, now)
	otherKey, _ := ca.Issue(leaf, now)
	moreNames := leaf
	moreNames.DNSNames = append(moreNames.DNSNames, "c")
	clientOnly := leaf
	clientOnly.Server = false
	renamed := leaf
	renamed.CommonName = "root"
	for name, c := range map[string]struct {
		leaf pki.Leaf
		held pki.Issued
		at   time.Time
		want string
	}{
		"missing":          {leaf, pki.Issued{}, now, "missing"},
		"garbage":          {leaf, pki.Issued{CertPEM: []byte("x"), KeyPEM: good.KeyPEM}, now, "unreadable"},
		"another key":      {leaf, pki.Issued{CertPEM: good.CertPEM, KeyPEM: otherKey.KeyPEM}, now, "key does not match"},
		"another CA":       {leaf, foreign, now, "another CA"},
		"more names":       {moreNames, good, now, "other names"},
		"other usages":     {clientOnly, good, now, "other usages"},
		"other user":       {renamed, good, now, "common name"},
		"a third left":     {leaf, good, now.Add(pki.LeafLifetime * 2 / 3).Add(time.Hour), "expires"},
		"past its end":     {leaf, good, now.Add(pki.LeafLifetime + time.Hour), "expires"},
		"just in its life": {leaf, good, now.Add(pki.LeafLifetime / 2), ""},
	} {
		got := ca.Stale(c.leaf, c.held, c.at)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: stale %q, want %q", name, got, c.want)
		}
	}
}

// TestLoadCA: a CA reads back from its PEM, and a mismatched pair or a leaf is refused.
func TestLoadCA(t *testing.T) {
	ca := newCA(t, "fleet CA")
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := pki.LoadCA(ca.CertPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	is, err := back.Issue(pki.Leaf{CommonName: "c", Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if why := ca.Stale(pki.Leaf{CommonName: "c", Client: true}, is, now); why != "" {
		t.Errorf("a leaf of the reloaded CA is stale for the original: %s", why)
	}
	other := newCA(t, "other")
	otherKey, _ := other.KeyPEM()
	if _, err := pki.LoadCA(ca.CertPEM, otherKey); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("a CA with another's key: %v", err)
	}
	if _, err := pki.LoadCA(is.CertPEM, is.KeyPEM); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a leaf as CA: %v", err)
	}
	if _, err := pki.LoadCA([]byte("nope"), keyPEM); err == nil {
		t.Error("garbage as CA certificate loaded")
	}
}
