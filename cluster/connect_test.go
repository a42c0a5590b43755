package cluster

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
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// writeCert signs a certificate (by ca, or self-signed when ca is nil) and writes
// cert and key as PEM files into dir.
func writeCert(t *testing.T, dir, name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
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
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".crt", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", kb)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestConnectTLSAndAuth: an etcd that wants client certificates and has auth on takes
// a client with both, and says what is wrong with one that lacks either.
func TestConnectTLSAndAuth(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", &x509.Certificate{IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	writeCert(t, dir, "server", &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	writeCert(t, dir, "client", &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	f := func(n string) string { return filepath.Join(dir, n) }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := "https://" + l.Addr().String()
	l.Close()
	e, err := StartEmbedded(EmbeddedConfig{Dir: f("data"), Name: "fftls", Listen: listen,
		TLS: &transport.TLSInfo{CertFile: f("server.crt"), KeyFile: f("server.key"), TrustedCAFile: f("ca.crt"), ClientCertAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := ctx(t)
	good := EtcdConfig{Endpoints: []string{e.Endpoint}, CA: f("ca.crt"), Cert: f("client.crt"), Key: f("client.key")}

	// Turn auth on: root with a password.
	admin, err := Connect(c, good)
	if err != nil {
		t.Fatalf("TLS with a client certificate: %v", err)
	}
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(c, "root", "s3cret"); return err },
		func() error { _, err := admin.UserGrantRole(c, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(c); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	if err := os.WriteFile(f("password"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	withAuth := good
	withAuth.Username, withAuth.PasswordFile = "root", f("password")
	cli, err := Connect(c, withAuth)
	if err != nil {
		t.Fatalf("TLS and auth: %v", err)
	}
	defer cli.Close()
	s, err := NewStore(cli, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(c, "", cache.Policy{Mode: cache.Off}, NoRevision); err != nil {
		t.Fatalf("write with TLS and auth: %v", err)
	}

	wrongPassword := withAuth
	wrongPassword.PasswordFile, wrongPassword.Password = "", "guess"
	noCert := withAuth
	noCert.Cert, noCert.Key = "", ""
	noAuth := good
	for name, cfg := range map[string]EtcdConfig{"a wrong password": wrongPassword, "no client certificate": noCert, "no credentials": noAuth} {
		cli, err := Connect(c, cfg)
		if err == nil {
			if _, err = cli.Put(c, "/fibfleet/lab/x", "y"); err == nil {
				t.Errorf("%s: connected and wrote", name)
			}
			cli.Close()
			continue
		}
		if !strings.Contains(err.Error(), "check the endpoints") {
			t.Errorf("%s: %v, want it to say what to check", name, err)
		}
	}
}

func TestEtcdConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  EtcdConfig
		want string
	}{
		{EtcdConfig{}, "at least one client URL"},
		{EtcdConfig{Endpoints: []string{"10.0.0.1:2379"}}, "starting with http://"},
		{EtcdConfig{Endpoints: []string{"https://e:2379"}, Cert: "c.pem"}, "both a client certificate and its key"},
		{EtcdConfig{Endpoints: []string{"http://e:2379"}, Password: "x"}, "needs a username"},
		{EtcdConfig{Endpoints: []string{"http://e:2379"}, Username: "u", Password: "x", PasswordFile: "f"}, "not both"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
