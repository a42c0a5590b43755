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
	clientv3 "go.etcd.io/etcd/client/v3"
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
	admin, err := cluster.Connect(c, good, "lab")
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
	cli, err := cluster.Connect(c, withAuth, "lab")
	if err != nil {
		t.Fatalf("TLS and auth: %v", err)
	}
	defer cli.Close()

	// A user whose role reaches only /fibfleet/lab/ (as a fleet's should) connects to
	// fleet lab, and not to another fleet: Connect reads no key outside the fleet's.
	for _, step := range []func() error{
		func() error { _, err := cli.RoleAdd(c, "fleet-lab"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(c, "fleet-lab", "/fibfleet/lab/", clientv3.GetPrefixRangeEnd("/fibfleet/lab/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(c, "lab", "l4b"); return err },
		func() error { _, err := cli.UserGrantRole(c, "lab", "fleet-lab"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	labUser := good
	labUser.Username, labUser.Password = "lab", "l4b"
	labCli, err := cluster.Connect(c, labUser, "lab")
	if err != nil {
		t.Fatalf("a user limited to /fibfleet/lab/, fleet lab: %v", err)
	}
	labCli.Close()
	if other, err := cluster.Connect(c, labUser, "other"); err == nil {
		other.Close()
		t.Error("a user limited to /fibfleet/lab/ connected to fleet other")
	}
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
		cli, err := cluster.Connect(c, cfg, "lab")
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
		{cluster.EtcdConfig{Endpoints: []string{"http://127.0.0.1:2379"}, Password: "x"}, "needs a username"},
		{cluster.EtcdConfig{Endpoints: []string{"http://127.0.0.1:2379"}, Username: "u", Password: "x", PasswordFile: "f"}, "not both"},
		{cluster.EtcdConfig{Endpoints: []string{"http://10.0.0.1:2379"}},
			`etcd endpoint "http://10.0.0.1:2379" is plain HTTP off this host: whoever reaches it can change the fleet's policy, drains and blackholes without credentials; use https:// with a client certificate (ca, cert, key), or say insecure: true`},
		{cluster.EtcdConfig{Endpoints: []string{"https://10.0.0.1:2379", "http://etcd.example:2379"}}, `"http://etcd.example:2379" is plain HTTP off this host`},
		{cluster.EtcdConfig{Endpoints: []string{"http://[2001:db8::1]:2379"}}, "plain HTTP off this host"},
		{cluster.EtcdConfig{Endpoints: []string{"http://127.0.0.1.example:2379"}}, "plain HTTP off this host"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(tc.want, "plain HTTP") && strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %q, want one line", tc.cfg, err)
		}
	}
	for _, cfg := range []cluster.EtcdConfig{
		{Endpoints: []string{"http://127.0.0.1:2379", "http://127.8.9.10:2379", "http://[::1]:2379", "http://localhost:2379", "http://LocalHost"}},
		{Endpoints: []string{"unix:///var/lib/fibfleet/etcd/etcd.sock"}},
		{Endpoints: []string{"https://10.0.0.1:2379"}, CA: "ca.pem", Cert: "c.pem", Key: "k.pem"},
		{Endpoints: []string{"http://10.0.0.1:2379", "http://etcd.example:2379"}, Insecure: true},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v, want it valid", cfg, err)
		}
	}
}
