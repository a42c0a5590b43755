package k8s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/kubesetup"
	"github.com/fibfleet/fibfleet/pki"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"sigs.k8s.io/yaml"
)

// TestBundledEtcd runs the chart's default etcd as the cluster would: the
// StatefulSet's exact command line for each of its three members (with the real etcd
// server, their cluster names and ports mapped to loopback ports of this test), on the
// certificates the setup job's own code makes from its rendered arguments, then the
// etcd-auth job's own code on its rendered arguments. Then: a client without a
// certificate and one with another CA's are refused at the handshake, the fleet CA's
// certificate for a user etcd does not know by etcd's auth; the node's certificate
// (as its rendered configuration names it) works for the fleet's keys and is refused
// a write outside them, and cannot reach the members' peer port, which a member's
// certificate can; ctl with the environment the chart gives it works, without its
// certificate it is refused; the probes' paths answer on the probes' port, before and
// after auth. (The names are the loopback's here: the cluster DNS names the members
// and clients use in a cluster are the certificate's too, checked by TestChart.)
func TestBundledEtcd(t *testing.T) {
	tl := tools(t)
	// The release's name carries the test's process id into every member's name.
	release := fmt.Sprintf("ff%d", os.Getpid()%100000)
	r := decode(t, run(t, tl.helm, "template", release, chartDir, "--namespace", "routers"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The Secrets, as the setup job makes them.
	made := memSecrets{}
	sj := setupJob(t, r.jobs["setup"])
	if _, err := kubesetup.Reconcile(ctx, made, sj.Plan, time.Now(), quiet); err != nil {
		t.Fatal(err)
	}

	ss := r.statefulSets[0]
	pod, c := ss.Spec.Template.Spec, ss.Spec.Template.Spec.Containers[0]
	n := int(*ss.Spec.Replicas)
	if n != 3 {
		t.Fatalf("the default etcd has %d members, want 3", n)
	}
	type member struct {
		name, host            string
		client, peer, metrics int
		root, log             string
	}
	dir := t.TempDir()
	var advertise string
	for _, a := range c.Command {
		if s, ok := strings.CutPrefix(a, "--advertise-client-urls="); ok {
			advertise = s
		}
	}
	members := make([]member, n)
	for i := range members {
		m := &members[i]
		m.name = fmt.Sprintf("%s-%d", ss.Name, i)
		m.host = strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(advertise, "$(POD_NAME)", m.name), "https://"), ":2379")
		m.client, m.peer, m.metrics = freePort(t), freePort(t), freePort(t)
		m.root = filepath.Join(dir, m.name)
		m.log = filepath.Join(dir, m.name+".log")
	}
	// Cluster names to this test's loopback ports (the certificate names 127.0.0.1).
	var names []string
	for _, m := range members {
		names = append(names, "https://"+m.host+":2379", fmt.Sprintf("https://127.0.0.1:%d", m.client),
			"https://"+m.host+":2380", fmt.Sprintf("https://127.0.0.1:%d", m.peer))
	}
	clusterNames := strings.NewReplacer(names...)
	for _, m := range members {
		mount(t, m.root, r, pod, c, made)
		args := []string{}
		for _, a := range c.Command[1:] {
			a = strings.ReplaceAll(a, "$(POD_NAME)", m.name)
			a = clusterNames.Replace(a)
			a = strings.NewReplacer("0.0.0.0:2379", fmt.Sprintf("127.0.0.1:%d", m.client), "0.0.0.0:2380", fmt.Sprintf("127.0.0.1:%d", m.peer),
				"0.0.0.0:2381", fmt.Sprintf("127.0.0.1:%d", m.metrics), "=/etc/etcd/", "="+m.root+"/etc/etcd/", "=/var/lib/etcd/", "="+m.root+"/var/lib/etcd/").Replace(a)
			args = append(args, a)
		}
		if c.Command[0] != "/usr/local/bin/etcd" {
			t.Fatalf("etcd's container runs %s", c.Command[0])
		}
		logf, err := os.Create(m.log)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(tl.etcd, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(m.log)
				t.Logf("%s's log (last 3000 bytes):\n%s", m.name, b[max(0, len(b)-3000):])
			}
		})
	}

	// The probes: what the kubelet asks, where it asks.
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = int(p.ContainerPort)
	}
	if ports[c.ReadinessProbe.HTTPGet.Port.String()] != 2381 || ports[c.LivenessProbe.HTTPGet.Port.String()] != 2381 {
		t.Fatalf("the probes are not on the metrics port 2381 (%v)", ports)
	}
	for _, m := range members {
		for _, path := range []string{c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path} {
			url := fmt.Sprintf("http://127.0.0.1:%d%s", m.metrics, path)
			deadline := time.Now().Add(90 * time.Second)
			for {
				resp, err := http.Get(url)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s does not answer 200 after 90 s (%v)", m.name, url, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, fmt.Sprintf("https://127.0.0.1:%d", m.client))
	}

	// Auth on, as the etcd-auth job does it.
	authJob := r.jobs["etcd-auth"]
	aj := etcdAuthJob(t, authJob)
	jobRoot := filepath.Join(dir, "etcd-auth")
	mount(t, jobRoot, r, authJob.Spec.Template.Spec, authJob.Spec.Template.Spec.Containers[0], made)
	e := aj.Etcd
	for i := range e.Endpoints {
		e.Endpoints[i] = clusterNames.Replace(e.Endpoints[i])
	}
	e.CA, e.Cert, e.Key = jobRoot+e.CA, jobRoot+e.Cert, jobRoot+e.Key
	if err := kubesetup.EnableEtcdAuth(ctx, e, aj.Auth, time.Minute, quiet); err != nil {
		t.Fatal(err)
	}

	// A router's files, mounted as its pod mounts them.
	ds := r.daemonSets[0]
	nodeRoot := filepath.Join(dir, "node")
	mount(t, nodeRoot, r, ds.Spec.Template.Spec, ds.Spec.Template.Spec.Containers[0], made)
	raw, err := os.ReadFile(filepath.Join(nodeRoot, "etc/fibfleet/config/fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var nodeCfg struct {
		Cluster struct {
			Name string `json:"name"`
			Etcd struct {
				Endpoints []string `json:"endpoints"`
				CA        string   `json:"ca"`
				Cert      string   `json:"cert"`
				Key       string   `json:"key"`
			} `json:"etcd"`
		} `json:"cluster"`
	}
	if err := yaml.Unmarshal(raw, &nodeCfg); err != nil {
		t.Fatal(err)
	}
	fleet := nodeCfg.Cluster.Name
	for i, ep := range nodeCfg.Cluster.Etcd.Endpoints {
		nodeCfg.Cluster.Etcd.Endpoints[i] = clusterNames.Replace(ep)
	}
	nodeEtcd := cluster.EtcdConfig{Endpoints: nodeCfg.Cluster.Etcd.Endpoints, CA: nodeCfg.Cluster.Etcd.CA, Cert: nodeCfg.Cluster.Etcd.Cert,
		Key: nodeCfg.Cluster.Etcd.Key, DialTimeout: 3 * time.Second}
	if !strings.HasPrefix(nodeEtcd.Cert, nodeRoot) || len(nodeEtcd.Endpoints) != 3 || !strings.HasPrefix(nodeEtcd.Endpoints[0], "https://127.0.0.1:") {
		t.Fatalf("the node's etcd settings %+v: not the mounted certificate, or not the members", nodeEtcd)
	}

	// The node, with its certificate: the store's operations on the fleet's keys.
	cli, err := cluster.Connect(ctx, nodeEtcd, fleet)
	if err != nil {
		t.Fatalf("the node with its certificate: %v", err)
	}
	defer cli.Close()
	s, err := cluster.NewStore(cli, fleet)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Register(ctx, cluster.NodeInfo{Name: "edge-1"}, 5*time.Second, quiet)
	if err != nil {
		t.Fatalf("the node registers under a lease: %v", err)
	}
	if _, err := s.SetPolicy(ctx, "edge-1", cache.Policy{Mode: cache.Off}, cluster.NoRevision); err != nil {
		t.Errorf("the node writes its policy: %v", err)
	}
	if _, err := s.Flush(ctx); err != nil {
		t.Errorf("a flush: %v", err)
	}
	// ... and nothing else.
	for _, k := range []string{"/fibfleet/other/policy", "/fibfleet/" + fleet + "x", "/x"} {
		if _, err := cli.Put(ctx, k, "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("the node writes %s, outside its fleet's keys: %v, want permission denied", k, err)
		}
	}

	// Refused: no certificate, another CA's, the fleet CA's for a user etcd does not
	// know.
	caData := made[sj.Plan.CASecret]
	ca, err := pki.LoadCA(caData[kubesetup.KeyCACert], caData[kubesetup.KeyCAKey])
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "clients")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	client := func(name string, issuer *pki.CA, cn string) cluster.EtcdConfig {
		cfg := cluster.EtcdConfig{Endpoints: nodeEtcd.Endpoints, CA: nodeEtcd.CA, DialTimeout: 3 * time.Second}
		if issuer == nil {
			return cfg
		}
		is, err := issuer.Issue(pki.Leaf{CommonName: cn, Client: true}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cert, cfg.Key = filepath.Join(certs, name+".crt"), filepath.Join(certs, name+".key")
		for f, b := range map[string][]byte{cfg.Cert: is.CertPEM, cfg.Key: is.KeyPEM} {
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return cfg
	}
	for name, c := range map[string]struct {
		cfg cluster.EtcdConfig
		// tls: refused at the handshake (a client certificate missing or not the
		// CA's); else refused by etcd's auth.
		tls bool
	}{
		"no certificate":                  {client("none", nil, ""), true},
		"another CA's certificate":        {client("other", other, "fibfleet-node"), true},
		"a certificate for a stranger":    {client("stranger", ca, "stranger"), false},
		"the CA's certificate for a role": {client("role", ca, cluster.RoleName(fleet)), false},
	} {
		cli, err := cluster.NewClient(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = cli.Put(wctx, "/fibfleet/"+fleet+"/policy", "x")
		cancel()
		cli.Close()
		switch {
		case err == nil:
			t.Errorf("%s: wrote the fleet's policy", name)
		case c.tls && (errors.Is(err, rpctypes.ErrPermissionDenied) || !strings.Contains(err.Error(), "certificate") && !errors.Is(err, context.DeadlineExceeded)):
			t.Errorf("%s: %v, want a refusal at the TLS handshake", name, err)
		case !c.tls && !errors.Is(err, rpctypes.ErrPermissionDenied):
			t.Errorf("%s: %v, want etcd's permission denied", name, err)
		}
	}

	// The peer port: the members' certificate alone, not the fleet's client ones.
	peerGet := func(cert, key string) error {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caData[kubesetup.KeyCACert])
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/members", members[0].peer))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	memberTLS := filepath.Join(members[1].root, "etc/etcd/tls")
	if err := peerGet(filepath.Join(memberTLS, "tls.crt"), filepath.Join(memberTLS, "tls.key")); err != nil {
		t.Errorf("a member's certificate on another member's peer port: %v", err)
	}
	if err := peerGet(nodeEtcd.Cert, nodeEtcd.Key); err == nil {
		t.Error("the node's certificate reached a member's peer port (raft, leases, members: past etcd's auth)")
	}

	// The probes still answer with auth on (they read no key).
	for _, m := range members {
		for _, path := range []string{c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", m.metrics, path))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s with auth on: %v %v", m.name, path, resp, err)
			}
			if resp != nil {
				resp.Body.Close()
			}
		}
	}

	// ctl, with the environment the chart gives it in the router's pod.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, ev := range ds.Spec.Template.Spec.Containers[0].Env {
		if !strings.HasPrefix(ev.Name, "FIBFLEET_") || ev.ValueFrom != nil {
			continue
		}
		val := ev.Value
		switch {
		case ev.Name == "FIBFLEET_ETCD":
			val = clusterNames.Replace(val)
		case strings.HasPrefix(val, "/"):
			val = nodeRoot + val
		}
		env = append(env, ev.Name+"="+val)
	}
	ctl := func(args ...string) (string, error) {
		cmd := exec.Command(tl.ctl, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := ctl("cache", "set", "--mode", "fixed", "--entries-v4", "4096"); err != nil {
		t.Errorf("ctl cache set with the pod's environment: %v\n%s", err, out)
	}
	if out, err := ctl("-o", "json", "cache", "get"); err != nil || !strings.Contains(out, "4096") {
		t.Errorf("ctl cache get with the pod's environment: %v\n%s", err, out)
	}
	// The same ctl without its certificate is refused.
	env = append(env, "FIBFLEET_ETCD_CERT=", "FIBFLEET_ETCD_KEY=")
	if out, err := ctl("--timeout", "5s", "cache", "set", "--mode", "off"); err == nil {
		t.Errorf("ctl without a certificate set the fleet's policy:\n%s", out)
	}
	if err := reg.Close(ctx); err != nil {
		t.Errorf("the node deregisters (revokes its lease): %v", err)
	}
	// The etcd-auth job again (every upgrade runs it): nothing changes, nothing fails.
	if err := kubesetup.EnableEtcdAuth(ctx, e, aj.Auth, time.Minute, quiet); err != nil {
		t.Errorf("the etcd-auth job run again: %v", err)
	}
}

// freePort is a loopback TCP port free when asked.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
