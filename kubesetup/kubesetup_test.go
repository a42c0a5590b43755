package kubesetup_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/kubesetup"
	"github.com/fibfleet/fibfleet/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var (
	now   = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// mem is Secrets in a map, counting writes.
type mem struct {
	data   map[string]map[string][]byte
	types  map[string]string
	writes int
}

func newMem() *mem { return &mem{data: map[string]map[string][]byte{}, types: map[string]string{}} }

func (m *mem) Get(_ context.Context, name string) (map[string][]byte, bool, error) {
	d, ok := m.data[name]
	return maps.Clone(d), ok, nil
}

func (m *mem) Create(_ context.Context, name, typ string, data map[string][]byte) error {
	if _, ok := m.data[name]; ok {
		return errors.New("already exists")
	}
	m.data[name], m.types[name] = maps.Clone(data), typ
	m.writes++
	return nil
}

func (m *mem) Update(_ context.Context, name, typ string, data map[string][]byte) error {
	if _, ok := m.data[name]; !ok {
		return errors.New("not found")
	}
	m.data[name], m.types[name] = maps.Clone(data), typ
	m.writes++
	return nil
}

func plan() kubesetup.Plan {
	return kubesetup.Plan{
		CASecret: "f-ca",
		Server:   &kubesetup.Server{Secret: "f-etcd-server", Names: []string{"f-etcd-0.f-etcd-headless.ns.svc", "*.f-etcd-headless.ns.svc", "localhost", "127.0.0.1"}},
		Clients: []kubesetup.Client{{User: "root", Secret: "f-etcd-root"}, {User: "fibfleet-node", Secret: "f-etcd-node"},
			{User: "fibfleet-ctl", Secret: "f-etcd-ctl"}},
		GossipSecret: "f-gossip-key",
	}
}

func reconcile(t *testing.T, s kubesetup.Secrets, p kubesetup.Plan, at time.Time) []kubesetup.Change {
	t.Helper()
	ch, err := kubesetup.Reconcile(context.Background(), s, p, at, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func secrets(ch []kubesetup.Change) []string {
	var out []string
	for _, c := range ch {
		out = append(out, c.Secret)
	}
	slices.Sort(out)
	return out
}

// TestReconcileMakesOnceAndKeeps: the first run makes every Secret, with
// certificates that chain to the CA for the users and names asked; the next runs
// write nothing.
func TestReconcileMakesOnceAndKeeps(t *testing.T) {
	m := newMem()
	ch := reconcile(t, m, plan(), now)
	want := []string{"f-ca", "f-etcd-ctl", "f-etcd-node", "f-etcd-root", "f-etcd-server", "f-gossip-key"}
	if got := secrets(ch); !slices.Equal(got, want) {
		t.Fatalf("made %v, want %v", got, want)
	}
	roots := x509.NewCertPool()
	ca, err := pki.ParseCert(m.data["f-ca"][kubesetup.KeyCACert])
	if err != nil {
		t.Fatal(err)
	}
	roots.AddCert(ca)
	for name, c := range map[string]struct {
		cn    string
		usage x509.ExtKeyUsage
		host  string
	}{
		"f-etcd-server": {"etcd", x509.ExtKeyUsageServerAuth, "f-etcd-2.f-etcd-headless.ns.svc"},
		"f-etcd-root":   {"root", x509.ExtKeyUsageClientAuth, ""},
		"f-etcd-node":   {"fibfleet-node", x509.ExtKeyUsageClientAuth, ""},
		"f-etcd-ctl":    {"fibfleet-ctl", x509.ExtKeyUsageClientAuth, ""},
	} {
		d := m.data[name]
		if m.types[name] != kubesetup.TypeTLS || !bytes.Equal(d[kubesetup.KeyCACert], m.data["f-ca"][kubesetup.KeyCACert]) || len(d[kubesetup.KeyKey]) == 0 {
			t.Errorf("%s: type %s, keys %v: want a TLS Secret with the CA beside it", name, m.types[name], slices.Collect(maps.Keys(d)))
		}
		cert, err := pki.ParseCert(d[kubesetup.KeyCert])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.host, KeyUsages: []x509.ExtKeyUsage{c.usage}, CurrentTime: now}); err != nil || cert.Subject.CommonName != c.cn {
			t.Errorf("%s: %q, %v; want %q verifying for %v", name, cert.Subject.CommonName, err, c.cn, c.usage)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(string(m.data["f-gossip-key"]["key"]))
	if err != nil || len(raw) != 32 {
		t.Errorf("gossip key %q: %d bytes (%v), want 32 in base64", m.data["f-gossip-key"]["key"], len(raw), err)
	}

	before := m.writes
	for _, at := range []time.Time{now, now.Add(time.Hour), now.Add(pki.LeafLifetime / 2)} {
		if ch := reconcile(t, m, plan(), at); len(ch) != 0 {
			t.Errorf("at %v a second run wrote %v", at, ch)
		}
	}
	if m.writes != before {
		t.Errorf("%d writes on runs that had nothing to do", m.writes-before)
	}
}

// TestReconcileRenews: leaves are issued again near their end, for new names, or
// when the CA is gone; the CA and the gossip key stay.
func TestReconcileRenews(t *testing.T) {
	m := newMem()
	reconcile(t, m, plan(), now)
	caBefore, gossipBefore := m.data["f-ca"], m.data["f-gossip-key"]

	late := now.Add(pki.LeafLifetime*2/3 + 24*time.Hour)
	if got, want := secrets(reconcile(t, m, plan(), late)), []string{"f-etcd-ctl", "f-etcd-node", "f-etcd-root", "f-etcd-server"}; !slices.Equal(got, want) {
		t.Errorf("near their end: renewed %v, want %v", got, want)
	}
	if !maps.EqualFunc(caBefore, m.data["f-ca"], bytes.Equal) || !maps.EqualFunc(gossipBefore, m.data["f-gossip-key"], bytes.Equal) {
		t.Error("the CA or the gossip key changed on a renewal")
	}

	more := plan()
	more.Server.Names = append(more.Server.Names, "f-etcd-3.f-etcd-headless.ns.svc")
	if got := secrets(reconcile(t, m, more, late)); !slices.Equal(got, []string{"f-etcd-server"}) {
		t.Errorf("a member more: renewed %v, want the server's alone", got)
	}

	delete(m.data, "f-ca")
	if got, want := secrets(reconcile(t, m, more, late)), []string{"f-ca", "f-etcd-ctl", "f-etcd-node", "f-etcd-root", "f-etcd-server"}; !slices.Equal(got, want) {
		t.Errorf("CA deleted: wrote %v, want %v", got, want)
	}
	if !maps.EqualFunc(gossipBefore, m.data["f-gossip-key"], bytes.Equal) {
		t.Error("the gossip key changed with the CA")
	}
}

// TestReconcileRefusesDamage: a CA or gossip Secret that is not what it should be is
// an error saying what to do, and nothing is written.
func TestReconcileRefusesDamage(t *testing.T) {
	for name, damage := range map[string]func(m *mem){
		"ca key of another CA": func(m *mem) {
			other, _ := pki.NewCA("x", now)
			k, _ := other.KeyPEM()
			m.data["f-ca"]["ca.key"] = k
		},
		"ca garbage":        func(m *mem) { m.data["f-ca"]["ca.crt"] = []byte("x") },
		"gossip key short":  func(m *mem) { m.data["f-gossip-key"]["key"] = []byte("c2hvcnQ=") },
		"gossip key absent": func(m *mem) { delete(m.data["f-gossip-key"], "key") },
	} {
		m := newMem()
		reconcile(t, m, plan(), now)
		damage(m)
		m.writes = 0
		_, err := kubesetup.Reconcile(context.Background(), m, plan(), now.Add(pki.LeafLifetime), quiet)
		if err == nil || !strings.Contains(err.Error(), "delete") {
			t.Errorf("%s: %v, want an error saying what to do", name, err)
		}
		if m.writes != 0 {
			t.Errorf("%s: %d Secrets written", name, m.writes)
		}
	}
	// A gossip key in any form the node reads is kept.
	for _, k := range []string{"0123456789abcdef", base64.StdEncoding.EncodeToString(make([]byte, 24)) + "\n"} {
		m := newMem()
		m.data["g"] = map[string][]byte{"key": []byte(k)}
		if ch := reconcile(t, m, kubesetup.Plan{GossipSecret: "g"}, now); len(ch) != 0 {
			t.Errorf("gossip key %q replaced", k)
		}
	}
}

func TestPlanValidate(t *testing.T) {
	for name, c := range map[string]struct {
		p    kubesetup.Plan
		want string
	}{
		"nothing":      {kubesetup.Plan{}, "nothing to make"},
		"no CA":        {kubesetup.Plan{Clients: []kubesetup.Client{{User: "u", Secret: "s"}}}, "CA Secret"},
		"twice":        {kubesetup.Plan{CASecret: "a", Clients: []kubesetup.Client{{User: "u", Secret: "a"}}}, "named twice"},
		"no names":     {kubesetup.Plan{CASecret: "a", Server: &kubesetup.Server{Secret: "s"}}, "at least one name"},
		"empty client": {kubesetup.Plan{CASecret: "a", Clients: []kubesetup.Client{{Secret: "s"}}}, "user=secret"},
	} {
		if err := c.p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestKubeSecrets: the same reconcile through client-go (its fake API server):
// Secrets made with the release's labels and their types, an update keeping labels
// it did not set.
func TestKubeSecrets(t *testing.T) {
	cs := fake.NewClientset()
	k := kubesetup.KubeSecrets{Client: cs, Namespace: "routers", Labels: map[string]string{"app.kubernetes.io/instance": "edge"}}
	reconcile(t, k, plan(), now)
	list, err := cs.CoreV1().Secrets("routers").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=edge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 6 {
		t.Fatalf("%d Secrets with the release's label, want 6", len(list.Items))
	}
	types := map[string]corev1.SecretType{}
	for _, s := range list.Items {
		types[s.Name] = s.Type
	}
	if types["f-ca"] != corev1.SecretTypeOpaque || types["f-etcd-node"] != corev1.SecretTypeTLS {
		t.Errorf("types %v", types)
	}
	s, _ := cs.CoreV1().Secrets("routers").Get(context.Background(), "f-etcd-node", metav1.GetOptions{})
	s.Labels["team"] = "net"
	if _, err := cs.CoreV1().Secrets("routers").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ch := reconcile(t, k, plan(), now.Add(pki.LeafLifetime)); len(ch) != 4 {
		t.Fatalf("renewal wrote %v, want the four leaves", ch)
	}
	s, _ = cs.CoreV1().Secrets("routers").Get(context.Background(), "f-etcd-node", metav1.GetOptions{})
	if s.Labels["team"] != "net" || s.Labels["app.kubernetes.io/instance"] != "edge" {
		t.Errorf("labels after an update: %v", s.Labels)
	}
}

// TestEnableEtcdAuthGivesUp: with no etcd answering it tries again until its wait is
// over, then says what to look at.
func TestEnableEtcdAuthGivesUp(t *testing.T) {
	start := time.Now()
	err := kubesetup.EnableEtcdAuth(context.Background(), cluster.EtcdConfig{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond},
		cluster.Auth{Cluster: "edge", Users: []string{"fibfleet-node"}}, 4*time.Second, quiet)
	if err == nil || !strings.Contains(err.Error(), "not on after 4s") || !strings.Contains(err.Error(), "etcd pods") {
		t.Errorf("%v, want it to give up saying what to check", err)
	}
	if d := time.Since(start); d < 4*time.Second || d > 30*time.Second {
		t.Errorf("gave up after %v, want about its 4 s wait", d)
	}
}

// TestReconcileGossipSeed: a new gossip Secret takes the key of the one an earlier
// chart rendered, when that holds one; otherwise a random key.
func TestReconcileGossipSeed(t *testing.T) {
	old := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for name, c := range map[string]struct {
		seed    map[string][]byte
		inherit bool
	}{
		"seed with a key":    {map[string][]byte{"key": []byte(old)}, true},
		"no seed":            {nil, false},
		"seed without a key": {map[string][]byte{"other": []byte("x")}, false},
	} {
		m := newMem()
		if c.seed != nil {
			m.data["old-gossip"] = c.seed
		}
		ch := reconcile(t, m, kubesetup.Plan{GossipSecret: "g", GossipSeed: "old-gossip"}, now)
		got := string(m.data["g"]["key"])
		if (got == old) != c.inherit || len(ch) != 1 {
			t.Errorf("%s: key %q (changes %v), inherited: want %v", name, got, ch, c.inherit)
		}
		raw, err := base64.StdEncoding.DecodeString(got)
		if err != nil || len(raw) != 32 {
			t.Errorf("%s: key %q is not 32 bytes in base64", name, got)
		}
	}
	if err := (kubesetup.Plan{GossipSeed: "x", CASecret: "c", Clients: []kubesetup.Client{{User: "u", Secret: "s"}}}).Validate(); err == nil {
		t.Error("a seed without a gossip Secret was taken")
	}
}

// TestEnableEtcdAuthMissingFiles: a certificate file that is not there fails at once.
func TestEnableEtcdAuthMissingFiles(t *testing.T) {
	start := time.Now()
	err := kubesetup.EnableEtcdAuth(context.Background(), cluster.EtcdConfig{Endpoints: []string{"https://127.0.0.1:1"}, CA: "/nonexistent/ca.crt",
		Cert: "/nonexistent/tls.crt", Key: "/nonexistent/tls.key"}, cluster.Auth{Cluster: "edge", Users: []string{"u"}}, time.Minute, quiet)
	if err == nil || !strings.Contains(err.Error(), "setup job") || time.Since(start) > 5*time.Second {
		t.Errorf("%v after %v, want at once an error naming the setup job", err, time.Since(start))
	}
}
