package cluster_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/pki"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// authEtcd starts an etcd that wants client certificates of a fresh CA and returns
// its endpoint and a function making a client with a certificate of that CA for a
// common name ("" for no certificate at all).
func authEtcd(t *testing.T) (string, func(cn string) *clientv3.Client) {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.NewCA("test CA", now)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.crt", ca.CertPEM)
	srv, err := ca.Issue(pki.Leaf{CommonName: "etcd", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := "https://" + l.Addr().String()
	l.Close()
	e, err := cluster.StartEmbedded(cluster.EmbeddedConfig{Dir: filepath.Join(dir, "data"), Name: "ffauth", Listen: listen,
		TLS: &transport.TLSInfo{CertFile: write("srv.crt", srv.CertPEM), KeyFile: write("srv.key", srv.KeyPEM), TrustedCAFile: caFile, ClientCertAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e.Endpoint, func(cn string) *clientv3.Client {
		t.Helper()
		cfg := cluster.EtcdConfig{Endpoints: []string{e.Endpoint}, CA: caFile, DialTimeout: 2 * time.Second}
		if cn != "" {
			is, err := ca.Issue(pki.Leaf{CommonName: cn, Client: true}, now)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Cert, cfg.Key = write(cn+".crt", is.CertPEM), write(cn+".key", is.KeyPEM)
		}
		cli, err := cluster.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
}

// TestEnableAuth: after EnableAuth the fleet's users reach the fleet's keys and
// nothing else, a certificate the CA signed for anyone else reaches nothing, and
// running it again (a rename of the fleet included) leaves the role with exactly the
// fleet's prefix.
func TestEnableAuth(t *testing.T) {
	_, client := authEtcd(t)
	c := ctx(t)
	root := client(cluster.RootUser)
	a := cluster.Auth{Cluster: "edge", Users: []string{"fibfleet-node", "fibfleet-ctl"}}
	for range 2 { // a second run changes nothing and fails on nothing
		if err := cluster.EnableAuth(c, root, a); err != nil {
			t.Fatal(err)
		}
	}
	node, intruder := client("fibfleet-node"), client("intruder")
	// canWrite: written, or refused by etcd's auth (anything else fails the test:
	// a timeout is not a refusal).
	canWrite := func(cli *clientv3.Client, key string) bool {
		_, err := cli.Put(c, key, "x")
		if err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("put %s: %v, want a write or permission denied", key, err)
		}
		return err == nil
	}
	for _, k := range []string{"/fibfleet/edge/x", "/fibfleet/edge/policy/nodes/n1"} {
		if !canWrite(node, k) {
			t.Errorf("the node cannot write its fleet's %s", k)
		}
		if canWrite(intruder, k) {
			t.Errorf("a certificate for a user etcd does not know wrote %s", k)
		}
	}
	for _, k := range []string{"/fibfleet/other/x", "/fibfleet/edgex", "/x"} {
		if canWrite(node, k) {
			t.Errorf("the node wrote %s, outside its fleet's prefix", k)
		}
	}
	if !canWrite(root, "/x") {
		t.Error("root cannot write")
	}
	// The store's own operations, leases included, work with the role alone.
	s, err := cluster.NewStore(node, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(c, "", cache.Policy{Mode: cache.Off}, cluster.NoRevision); err != nil {
		t.Errorf("set the fleet's policy as the node: %v", err)
	}
	reg, err := s.Register(c, cluster.NodeInfo{Name: "n1"}, 2*time.Second, nil)
	if err != nil {
		t.Fatalf("register under a lease as the node: %v", err)
	}
	if err := reg.Close(c); err != nil {
		t.Errorf("deregister as the node (revoke its lease): %v", err)
	}
	if _, err := s.Flush(c); err != nil {
		t.Errorf("flush as the node: %v", err)
	}

	// Renamed: the role follows, the old prefix is closed.
	if err := cluster.EnableAuth(c, root, cluster.Auth{Cluster: "edge2", Users: a.Users}); err != nil {
		t.Fatal(err)
	}
	if !canWrite(node, "/fibfleet/edge2/x") || canWrite(node, "/fibfleet/edge/x") {
		t.Error("after a rename the node's role is not exactly the new prefix")
	}
	r, err := root.RoleGet(c, cluster.RoleName("edge2"))
	if err != nil || len(r.Perm) != 1 {
		t.Errorf("role %s: %v, %v; want one permission", cluster.RoleName("edge2"), r, err)
	}
	if err := cluster.EnableAuth(c, root, cluster.Auth{Cluster: "bad/name", Users: a.Users}); err == nil {
		t.Error("a bad fleet name was taken")
	}
}
