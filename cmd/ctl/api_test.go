package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/internal/testcert"
)

// TestAPIClient: ctl reaches a node API over HTTPS with a client certificate
// (--api-ca, --api-cert, --api-key), is refused without one, and reaches one on a
// unix socket.
func TestAPIClient(t *testing.T) {
	certs := testcert.Write(t, t.TempDir())
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"node": "n1"})
	})
	srv := httptest.NewUnstartedServer(h)
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")

	var got map[string]string
	g := &globals{apiCA: certs.CA, apiCert: certs.ClientCert, apiKey: certs.ClientKey, timeout: 5e9}
	a, err := g.api()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.get(context.Background(), addr, "/api/v1/status", &got); err != nil || got["node"] != "n1" {
		t.Fatalf("with a client certificate: %v %v", got, err)
	}
	g.apiCert, g.apiKey = "", ""
	if a, err = g.api(); err != nil {
		t.Fatal(err)
	}
	if err := a.get(context.Background(), addr, "/api/v1/status", &got); err == nil {
		t.Error("answered without a client certificate")
	}
	g.apiCert = certs.ClientCert
	if _, err := g.api(); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("--api-cert without --api-key: %v", err)
	}

	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	us := &http.Server{Handler: h}
	go us.Serve(l)
	defer us.Close()
	plain, _ := (&globals{timeout: 5e9}).api()
	got = nil
	if err := plain.get(context.Background(), "unix://"+sock, "/api/v1/status", &got); err != nil || got["node"] != "n1" {
		t.Fatalf("on a unix socket: %v %v", got, err)
	}
}

// TestEnvironmentDefaults: the etcd and node API settings come from the environment
// when no flag gives them (the Helm chart's pod sets it, so ctl there needs no flags);
// a flag wins.
func TestEnvironmentDefaults(t *testing.T) {
	env := map[string]string{"FIBFLEET_ETCD": "https://e1:2379,https://e2:2379", "FIBFLEET_ETCD_CA": "/tls/ca.crt", "FIBFLEET_ETCD_CERT": "/tls/tls.crt",
		"FIBFLEET_ETCD_KEY": "/tls/tls.key", "FIBFLEET_ETCD_USER": "fibfleet", "FIBFLEET_ETCD_PASSWORD_FILE": "/auth/password", "FIBFLEET_CLUSTER": "edge-eu1",
		"FIBFLEET_ETCD_INSECURE": "1", "FIBFLEET_API_CA": "/api/ca.crt", "FIBFLEET_API_CERT": "/api/tls.crt", "FIBFLEET_API_KEY": "/api/tls.key"}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var g globals
	root := newRoot(&g)
	if err := root.PersistentFlags().Parse([]string{"--etcd-user", "admin", "--api-key", "/other/tls.key"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"FIBFLEET_ETCD": strings.Join(g.etcd, ","), "FIBFLEET_ETCD_CA": g.etcdCA, "FIBFLEET_ETCD_CERT": g.etcdCert,
		"FIBFLEET_ETCD_KEY": g.etcdKey, "FIBFLEET_ETCD_USER": g.etcdUser, "FIBFLEET_ETCD_PASSWORD_FILE": g.etcdPwFile, "FIBFLEET_CLUSTER": g.cluster,
		"FIBFLEET_ETCD_INSECURE": map[bool]string{true: "1", false: "0"}[g.etcdInsecure], "FIBFLEET_API_CA": g.apiCA, "FIBFLEET_API_CERT": g.apiCert, "FIBFLEET_API_KEY": g.apiKey}
	env["FIBFLEET_ETCD_USER"] = "admin"
	env["FIBFLEET_API_KEY"] = "/other/tls.key"
	for k, want := range env {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if g.envErr != nil {
		t.Errorf("FIBFLEET_ETCD_INSECURE=1: %v", g.envErr)
	}

	// A flag wins over FIBFLEET_ETCD_INSECURE; a value that is not a boolean is a
	// usage error unless the flag decides.
	t.Setenv("FIBFLEET_ETCD_INSECURE", "true")
	g = globals{}
	if err := newRoot(&g).PersistentFlags().Parse([]string{"--etcd-insecure=false"}); err != nil || g.etcdInsecure {
		t.Errorf("FIBFLEET_ETCD_INSECURE=true --etcd-insecure=false: insecure %v (%v), want false", g.etcdInsecure, err)
	}
	t.Setenv("FIBFLEET_ETCD_INSECURE", "yes please")
	var out, errOut strings.Builder
	if code := execute([]string{"status"}, strings.NewReader(""), &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), `FIBFLEET_ETCD_INSECURE="yes please": use true or false`) {
		t.Errorf("FIBFLEET_ETCD_INSECURE=\"yes please\": exit %d, %q; want a usage error naming it", code, errOut.String())
	}
}

// TestVersion: ctl version prints the version set at build time, as a line or JSON.
func TestVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "1.2.3-test"
	var out, errOut strings.Builder
	if code := execute([]string{"version"}, strings.NewReader(""), &out, &errOut); code != 0 || out.String() != "ctl 1.2.3-test\n" {
		t.Errorf("ctl version: exit %d, %q (%s); want \"ctl 1.2.3-test\"", code, out.String(), errOut.String())
	}
	out.Reset()
	var doc map[string]string
	if code := execute([]string{"version", "-o", "json"}, strings.NewReader(""), &out, &errOut); code != 0 || json.Unmarshal([]byte(out.String()), &doc) != nil || doc["version"] != "1.2.3-test" || len(doc) != 1 {
		t.Errorf("ctl version -o json: exit %d, %q; want {\"version\": \"1.2.3-test\"}", code, out.String())
	}
}
