// Package testutil holds what tests across packages share: the one policy for a
// missing prerequisite.
package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Need skips when a prerequisite is missing, except in CI (CI set), where it fails:
// CI runs as root with everything installed, so a skip there would hide a broken
// setup.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must run this test: %s", why)
	}
	t.Skip(why)
}

// Have says whether a command is on the PATH.
func Have(cmd string) bool { _, err := exec.LookPath(cmd); return err == nil }
