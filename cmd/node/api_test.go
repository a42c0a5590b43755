package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testcert"
	"github.com/prometheus/client_golang/prometheus"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve runs the node's HTTP server with cfg until the test ends, answering "ok".
func serve(t *testing.T, cfg Config) {
	t.Helper()
	serveWith(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
}

// serveWith runs the node's HTTP server with cfg and handler h until the test ends.
func serveWith(t *testing.T, cfg Config, h http.Handler) {
	t.Helper()
	srv, err := newHTTPServer(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = serveHTTP(srv, cfg) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
}

// get GETs url and wants "ok".
func get(c *http.Client, url string) error {
	code, body, err := fetch(c, url)
	if err == nil && (code != http.StatusOK || body != "ok") {
		return fmt.Errorf("%s: %d %q, want 200 ok", url, code, body)
	}
	return err
}

// fetch GETs url (waiting for a server that is starting) and returns the status
// and body, or the error: a TLS refusal comes back at once.
func fetch(c *http.Client, url string) (int, string, error) {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var resp *http.Response
		if resp, err = c.Get(url); err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b), err
		}
		if op := (*net.OpError)(nil); !errors.As(err, &op) || op.Op != "dial" {
			return 0, "", err
		}
	}
	return 0, "", err
}

// TestAPIOverTLS: with http_tls and a client CA the node API answers over TLS: the
// probes' /healthz and /readyz to anyone (Kubernetes' probes have no certificate),
// everything else only to a client with a certificate that CA signed (403 without
// one); a certificate of another CA fails the handshake.
func TestAPIOverTLS(t *testing.T) {
	certs := testcert.Write(t, t.TempDir())
	other := testcert.Write(t, t.TempDir())
	cfg := defaults()
	cfg.HTTPAddress = freeAddr(t)
	cfg.HTTPTLS = HTTPTLSConfig{Cert: certs.ServerCert, Key: certs.ServerKey, ClientCA: certs.CA}
	// The node's own answers, a not-ready /readyz among them, pass through as they are.
	serveWith(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, "not ready: loading", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok "+r.URL.Path)
	}))
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client := func(cert, key string) *http.Client {
		t.Helper()
		tc := &tls.Config{RootCAs: roots}
		if cert != "" {
			c, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	with, without, stranger := client(certs.ClientCert, certs.ClientKey), client("", ""), client(other.ClientCert, other.ClientKey)
	base := "https://" + cfg.HTTPAddress
	for _, tc := range []struct {
		path  string
		probe bool
		code  int
		body  string
	}{
		{"/healthz", true, http.StatusOK, "ok /healthz"},
		{"/readyz", true, http.StatusServiceUnavailable, "not ready: loading\n"},
		{"/metrics", false, http.StatusOK, "ok /metrics"},
		{"/api/v1/status", false, http.StatusOK, "ok /api/v1/status"},
		{"/healthz/../metrics", false, 0, ""},
	} {
		if tc.code != 0 {
			if code, body, err := fetch(with, base+tc.path); err != nil || code != tc.code || body != tc.body {
				t.Errorf("%s with a client certificate: %d %q (%v), want %d %q", tc.path, code, body, err, tc.code, tc.body)
			}
		}
		code, body, err := fetch(without, base+tc.path)
		switch {
		case err != nil:
			t.Errorf("%s without a client certificate: %v, want an answer over HTTP", tc.path, err)
		case tc.probe && (code != tc.code || body != tc.body):
			t.Errorf("%s without a client certificate: %d %q, want the node's %d %q", tc.path, code, body, tc.code, tc.body)
		case !tc.probe && (code != http.StatusForbidden || !strings.Contains(body, "needs a client certificate") || strings.Count(body, "\n") != 1):
			t.Errorf("%s without a client certificate: %d %q, want 403 and one line saying a certificate is needed", tc.path, code, body)
		}
		if _, _, err := fetch(stranger, base+tc.path); err == nil {
			t.Errorf("%s: a certificate of another CA was answered", tc.path)
		}
	}
	// Go's TLS server answers plain HTTP itself, 400, without the node's handler.
	if code, body, err := fetch(&http.Client{Timeout: 2 * time.Second}, "http://"+cfg.HTTPAddress+"/healthz"); err == nil && (code != http.StatusBadRequest || strings.Contains(body, "ok")) {
		t.Errorf("plain HTTP was answered: %d %q", code, body)
	}
}

// TestAPIOnUnixSocket: http_address unix:///path serves on a socket (a stale one
// left by a killed run is replaced).
func TestAPIOnUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil { // a stale file in the way
		t.Fatal(err)
	}
	cfg := defaults()
	cfg.HTTPAddress = "unix://" + sock
	serve(t, cfg)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if err := get(c, "http://node/"); err != nil {
		t.Fatal(err)
	}
}

// TestProfilesOnlyWhenOn: with pprof on, the API serves Go's profiles and an
// execution trace (what a CPU profile cannot show: how long goroutines waited to
// run); with it off, none of them.
func TestProfilesOnlyWhenOn(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := httpHandler(prometheus.NewRegistry(), on, &atomic.Bool{}, func() (bool, string) { return true, "" }, nil, nil, nil, nil)
		for _, path := range []string{"/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1", "/debug/pprof/goroutine"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			switch {
			case on && rec.Code != http.StatusOK:
				t.Errorf("pprof on: GET %s: %d %q, want 200", path, rec.Code, rec.Body.String())
			case on && strings.HasPrefix(path, "/debug/pprof/trace") && !strings.HasPrefix(rec.Body.String(), "go 1."):
				t.Errorf("pprof on: GET %s: %.20q, want an execution trace (go 1.x trace header)", path, rec.Body.String())
			case !on && rec.Code == http.StatusOK:
				t.Errorf("pprof off: GET %s answered 200, want nothing served", path)
			}
		}
	}
}
