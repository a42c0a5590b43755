package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestReapStale: what a lab of a dead process left (a namespace with a process in it,
// a pin directory) is removed by the next New; a live lab's is not.
func TestReapStale(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces")
	dead, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dead.Close() })
	ns, err := dead.Netns("x")
	if err != nil {
		t.Fatal(err)
	}
	sleeper, err := ns.Start(filepath.Join(t.TempDir(), "sleep.log"), "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	pins := filepath.Join("/sys/fs/bpf/fibfleet", dead.Prefix+"-x")
	if err := os.MkdirAll(pins, 0o755); err != nil {
		t.Fatal(err)
	}
	// Its owner is now a process that has exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ownerDir, dead.Prefix), []byte(strconv.Itoa(gone.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	liveNS, err := live.Netns("y")
	if err != nil {
		t.Fatal(err)
	}
	again, err := New() // must leave the live lab alone
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	out, err := run("ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, ns.Name) {
		t.Errorf("the dead lab's namespace %s is still there", ns.Name)
	}
	if !strings.Contains(out, liveNS.Name) {
		t.Errorf("the live lab's namespace %s was removed", liveNS.Name)
	}
	if _, err := os.Stat(pins); !os.IsNotExist(err) {
		t.Errorf("the dead lab's pins %s are still there (%v)", pins, err)
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(sleeper.Process.Pid, 0) != syscall.ESRCH; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process in the dead lab's namespace was not killed")
		}
	}
}
