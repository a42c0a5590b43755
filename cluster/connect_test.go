package cluster_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/testcert"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TestConnectTLSAndAuth: an etcd that wants client certificates and has auth on takes
// a client with both, and says what is wrong with one that lacks either.
func TestConnectTLSAndAuth(t *testing.T) {
	// A test helper, not a dependency of the package: certificates for this test.
	dir := t.TempDir()
	certs := testcert.Write(t, dir)
	f := func(n string) string { return filepath.Join(dir, n) }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := "https://" + l.Addr().String()
	l.Close()
	e, err := cluster.StartEmbedded(cluster.EmbeddedConfig{Dir: f("data"), Name: "fftls", Listen: listen,
		TLS: &transport.TLSInfo{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CA, ClientCertAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := ctx(t)
	good := cluster.EtcdConfig{Endpoints: []string{e.Endpoint}, CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}

	// Turn auth on: root with a password.
	admin, err := cluster.Connect(c, good)
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
	cli, err := cluster.Connect(c, withAuth)
	if err != nil {
		t.Fatalf("TLS and auth: %v", err)
	}
	defer cli.Close()
	s, err := cluster.NewStore(cli, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(c, "", cache.Policy{Mode: cache.Off}, cluster.NoRevision); err != nil {
		t.Fatalf("write with TLS and auth: %v", err)
	}

	wrongPassword := withAuth
	wrongPassword.PasswordFile, wrongPassword.Password = "", "guess"
	noCert := withAuth
	noCert.Cert, noCert.Key = "", ""
	noAuth := good
	for name, cfg := range map[string]cluster.EtcdConfig{"a wrong password": wrongPassword, "no client certificate": noCert, "no credentials": noAuth} {
		cli, err := cluster.Connect(c, cfg)
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
		cfg  cluster.EtcdConfig
		want string
	}{
		{cluster.EtcdConfig{}, "at least one client URL"},
		{cluster.EtcdConfig{Endpoints: []string{"10.0.0.1:2379"}}, "starting with http://"},
		{cluster.EtcdConfig{Endpoints: []string{"https://e:2379"}, Cert: "c.pem"}, "both a client certificate and its key"},
		{cluster.EtcdConfig{Endpoints: []string{"http://e:2379"}, Password: "x"}, "needs a username"},
		{cluster.EtcdConfig{Endpoints: []string{"http://e:2379"}, Username: "u", Password: "x", PasswordFile: "f"}, "not both"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
