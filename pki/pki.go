// Package pki is the fleet's own certificate authority: a CA made once and kept, and
// the leaf certificates it issues (the bundled etcd's server and peer certificate, the
// clients' certificates whose common names are etcd users). It decides when a leaf
// must be issued again (missing, from another CA, for other names, or near its end),
// so that the Helm chart's setup job can run on every install and upgrade and change
// only what needs it.
//
// Keys are ECDSA P-256, PEM encoded (SEC 1 for keys). Nothing here touches files or
// Kubernetes: callers store the PEM bytes where they belong.
package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Lifetimes. A leaf is issued again once less than a third of its life is left, so a
// setup job that runs at every upgrade renews it long before it lapses; the CA is not
// renewed (every leaf would change at once): it lives ten years.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	LeafLifetime = 2 * 365 * 24 * time.Hour
	// backdate covers clocks a little behind the issuer's.
	backdate = 5 * time.Minute
)

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is Cert as PEM: what clients and servers trust.
	CertPEM []byte
}

// NewCA makes a self-signed CA named name, valid from now for CALifetime.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate the CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CALifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs leaves only: no intermediate below it.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: sign the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: read back the CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemCert(der)}, nil
}

// LoadCA reads a CA from its PEM certificate and key, and checks that they belong
// together and that the certificate is a CA's.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("pki: the certificate of %q is not a CA's", cert.Subject.CommonName)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("pki: the CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, Key: key, CertPEM: bytes.Clone(certPEM)}, nil
}

// KeyPEM is the CA's key as PEM.
func (ca *CA) KeyPEM() ([]byte, error) { return pemKey(ca.Key) }

// Leaf describes a certificate to issue: its subject's common name (an etcd user's
// name for a client certificate), its DNS names and IP addresses, and whether it
// serves, connects as a client, or both (etcd's members do both with one certificate:
// clients and peers connect to them, and they connect to their peers).
type Leaf struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	Server     bool
	Client     bool
}

// Issued is a leaf certificate and its key, as PEM.
type Issued struct {
	CertPEM, KeyPEM []byte
}

// Issue makes a key and a certificate for l, signed by ca, valid from now for
// LeafLifetime (never past the CA's own end).
func (ca *CA) Issue(l Leaf, now time.Time) (Issued, error) {
	if l.CommonName == "" {
		return Issued{}, errors.New("pki: a leaf needs a common name")
	}
	if !l.Server && !l.Client {
		return Issued{}, fmt.Errorf("pki: leaf %q: say whether it serves, is a client, or both", l.CommonName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, fmt.Errorf("pki: generate the key of %q: %w", l.CommonName, err)
	}
	serial, err := serialNumber()
	if err != nil {
		return Issued{}, err
	}
	end := now.Add(LeafLifetime)
	if end.After(ca.Cert.NotAfter) {
		end = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.CommonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     end,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		DNSNames:     l.DNSNames,
		IPAddresses:  l.IPs,
		ExtKeyUsage:  l.usages(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Issued{}, fmt.Errorf("pki: sign the certificate of %q: %w", l.CommonName, err)
	}
	kp, err := pemKey(key)
	if err != nil {
		return Issued{}, err
	}
	return Issued{CertPEM: pemCert(der), KeyPEM: kp}, nil
}

func (l Leaf) usages() []x509.ExtKeyUsage {
	var u []x509.ExtKeyUsage
	if l.Server {
		u = append(u, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		u = append(u, x509.ExtKeyUsageClientAuth)
	}
	return u
}

// Stale says why a leaf must be issued again, or "" when the one held is good: it
// must parse, pair with its key, chain to ca, be for exactly l's names and usages, and
// have more than a third of its life left at now.
func (ca *CA) Stale(l Leaf, held Issued, now time.Time) string {
	if len(held.CertPEM) == 0 || len(held.KeyPEM) == 0 {
		return "missing"
	}
	cert, err := ParseCert(held.CertPEM)
	if err != nil {
		return "unreadable certificate"
	}
	key, err := parseKey(held.KeyPEM)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		return "key does not match the certificate"
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		return "signed by another CA"
	}
	if cert.Subject.CommonName != l.CommonName {
		return fmt.Sprintf("common name %q, want %q", cert.Subject.CommonName, l.CommonName)
	}
	if !sameSet(cert.DNSNames, l.DNSNames) || !sameIPs(cert.IPAddresses, l.IPs) {
		return "other names"
	}
	if !slices.Equal(cert.ExtKeyUsage, l.usages()) {
		return "other usages"
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	if left := cert.NotAfter.Sub(now); left < life/3 {
		return fmt.Sprintf("expires %s", cert.NotAfter.UTC().Format(time.DateOnly))
	}
	return ""
}

// ParseCert reads the first certificate of a PEM block list.
func ParseCert(p []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseKey(p []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "EC PRIVATE KEY" {
		return nil, errors.New("no PEM EC private key")
	}
	return x509.ParseECPrivateKey(b.Bytes)
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("pki: encode a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// serialNumber is 128 random bits, as RFC 5280 allows up to 20 octets.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never zero
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func sameIPs(a, b []net.IP) bool {
	str := func(ips []net.IP) []string {
		var out []string
		for _, ip := range ips {
			out = append(out, ip.String())
		}
		return out
	}
	return sameSet(str(a), str(b))
}
