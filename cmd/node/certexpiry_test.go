package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testcert"
)

// TestCertExpiry: the end of the etcd client certificate, as the metric exports it,
// read from the file each time (a renewed file counts at once); nothing without one.
func TestCertExpiry(t *testing.T) {
	dir := t.TempDir()
	certs := testcert.Write(t, dir)
	end, ok := certExpiry(certs.ClientCert)
	if !ok || end.Before(time.Now()) || end.After(time.Now().Add(2*time.Hour)) {
		t.Errorf("certExpiry(client) = %v, %v; want its end, within the hour testcert gives", end, ok)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", filepath.Join(dir, "missing"), garbage} {
		if _, ok := certExpiry(p); ok {
			t.Errorf("certExpiry(%q) reported an end", p)
		}
	}
}
