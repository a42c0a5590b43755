// Package testutil holds what tests across packages share: the one policy for a
// missing prerequisite, and the one way to wait for something.
package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
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

// Eventually polls cond every 20 ms and fails the test if it is not true within 10 s:
// a loose bound on something that should happen at once, never a timing figure
// (those are benchmarks).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
