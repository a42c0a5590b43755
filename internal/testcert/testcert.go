// Package testcert writes a throwaway CA and certificates signed by it, for tests of
// TLS with client certificates.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Set is a CA and a server and a client certificate, as PEM files in a directory.
type Set struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// Write makes a CA, a server certificate for 127.0.0.1 and a client certificate in
// dir.
func Write(t testing.TB, dir string) Set {
	t.Helper()
	ca, caKey := write(t, dir, "ca", &x509.Certificate{IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	write(t, dir, "server", &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"node"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	write(t, dir, "client", &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	f := func(n string) string { return filepath.Join(dir, n) }
	return Set{CA: f("ca.crt"), ServerCert: f("server.crt"), ServerKey: f("server.key"), ClientCert: f("client.crt"), ClientKey: f("client.key")}
}

// write signs a certificate (by ca, or self-signed when ca is nil) and writes it and
// its key as PEM files named after name.
func write(t testing.TB, dir, name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.Subject = pkix.Name{CommonName: name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{name + ".crt": {Type: "CERTIFICATE", Bytes: der}, name + ".key": {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
