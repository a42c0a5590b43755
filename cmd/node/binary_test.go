package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryCheckAndVersion runs the built node: -check refuses a remote plain-HTTP
// etcd with exit status 2 and one line on stderr (what kubectl logs and a shell show
// of a pod or unit that will not start), takes it with insecure: true, and -version
// prints the version -ldflags set. (Symbols and DWARF left out: a faster link.)
func TestBinaryCheckAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the node (about 10 s)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "node")
	if b, err := exec.Command("go", "build", "-ldflags", "-s -w -X main.version=v9.8.7-test", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/node: %v\n%s", err, b)
	}
	run := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("node %s: %v", strings.Join(args, " "), err)
		}
		return code, out.String(), errOut.String()
	}
	conf := filepath.Join(dir, "node.yaml")
	check := func(body string) (int, string, string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return run("-check", "-probe=false", "-node-name", "n1", "-interfaces", "eth0", "-bgp-asn", "65000", "-bgp-router-id", "192.0.2.1", "-config", conf)
	}

	const endpoints = "cluster:\n  etcd:\n    endpoints: [http://192.0.2.50:2379]\n"
	code, out, errOut := check(endpoints)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], `"http://192.0.2.50:2379"`) || !strings.Contains(lines[0], "insecure: true") {
		t.Errorf("a remote plain-HTTP etcd: exit %d, stderr %q; want 2 and one line naming the endpoint and insecure: true", code, errOut)
	}
	if out != "" {
		t.Errorf("a refused config printed %q on stdout", out)
	}
	if code, out, errOut := check(endpoints + "    insecure: true\n"); code != 0 || !strings.HasPrefix(out, "config valid") || errOut != "" {
		t.Errorf("with insecure: true: exit %d, stdout %q, stderr %q; want 0 and config valid", code, out, errOut)
	}

	if code, out, errOut := run("-version"); code != 0 || out != "fibfleet-node v9.8.7-test\n" || errOut != "" {
		t.Errorf("-version: exit %d, stdout %q, stderr %q; want 0 and \"fibfleet-node v9.8.7-test\"", code, out, errOut)
	}
}
