package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testcert"
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

// serve runs the node's HTTP server with cfg until the test ends.
func serve(t *testing.T, cfg Config) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv, err := newHTTPServer(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = serveHTTP(srv, cfg) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
}

func get(c *http.Client, url string) error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var resp *http.Response
		if resp, err = c.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok" {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if op := (*net.OpError)(nil); !errors.As(err, &op) || op.Op != "dial" {
			return err // a TLS refusal, not a server still starting
		}
	}
	return err
}

// TestAPIOverTLS: with http_tls and a client CA the node API answers only clients
// with a certificate that CA signed, over TLS.
func TestAPIOverTLS(t *testing.T) {
	certs := testcert.Write(t, t.TempDir())
	cfg := defaults()
	cfg.HTTPAddress = freeAddr(t)
	cfg.HTTPTLS = HTTPTLSConfig{Cert: certs.ServerCert, Key: certs.ServerKey, ClientCA: certs.CA}
	serve(t, cfg)
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	with := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}}}}
	without := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if err := get(with, "https://"+cfg.HTTPAddress+"/"); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	if err := get(without, "https://"+cfg.HTTPAddress+"/"); err == nil {
		t.Error("a client without a certificate was answered")
	}
	if err := get(&http.Client{Timeout: 2 * time.Second}, "http://"+cfg.HTTPAddress+"/"); err == nil {
		t.Error("plain HTTP was answered")
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
