package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/dataplane"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestAttachModes attaches the program natively and in generic mode to veths in a
// namespace, checks the kernel reports each mode, and detaches.
func TestAttachModes(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root for namespaces and XDP (CI runs as root)")
	l, err := lab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	ns, err := l.Netns("att")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(ns, "a0", "", ns, "a1", ""); err != nil {
		t.Fatal(err)
	}
	dp, err := dataplane.Load(dataplane.Config{NodeName: l.Prefix + "-att", GroupsV4: 16})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			dp.Close()
		}
	})
	// xdpState reads the attach mode the kernel reports (IFLA_XDP_ATTACHED).
	xdpState := func(ifname string) string {
		t.Helper()
		out, err := ns.Exec("ip", "-j", "-d", "link", "show", "dev", ifname)
		if err != nil {
			t.Fatal(err)
		}
		var links []struct {
			XDP *struct {
				Mode int `json:"mode"`
			} `json:"xdp"`
		}
		if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
			t.Fatalf("parse ip -j link: %v: %s", err, out)
		}
		if links[0].XDP == nil {
			return "none"
		}
		return map[int]string{0: "none", 1: "native", 2: "generic", 3: "offload"}[links[0].XDP.Mode]
	}
	inNS := func(fn func() error) error { return ns.Do(fn) }

	a0, a1 := l.If("a0"), l.If("a1")
	if err := inNS(func() error { return dp.Attach(a0, dataplane.ModeNative) }); err != nil {
		t.Fatal(err)
	}
	if err := inNS(func() error { return dp.Attach(a1, dataplane.ModeGeneric) }); err != nil {
		t.Fatal(err)
	}
	if got := xdpState(a0); got != "native" {
		t.Errorf("%s: XDP %s, want native", a0, got)
	}
	if got := xdpState(a1); got != "generic" {
		t.Errorf("%s: XDP %s, want generic", a1, got)
	}
	if err := inNS(func() error { return dp.Attach(a0, dataplane.ModeNative) }); err == nil {
		t.Error("attaching twice to the same interface succeeded")
	}
	if err := inNS(func() error { return dp.Attach(l.If("zz"), dataplane.ModeNative) }); err == nil || !strings.Contains(err.Error(), "interfaces list") {
		t.Errorf("a missing interface: %v, want an error that points at the interfaces list", err)
	}
	if err := inNS(func() error { return dp.Attach(a0, "turbo") }); err == nil {
		t.Error("an unknown mode was accepted")
	}
	if err := dp.Detach(a0); err != nil {
		t.Fatal(err)
	}
	if got := xdpState(a0); got != "none" {
		t.Errorf("%s after detach: XDP %s", a0, got)
	}
	pins, err := dataplane.LivePinDir("", l.Prefix+"-att")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pins + "/stats"); err != nil {
		t.Errorf("maps are not pinned under %s: %v", pins, err)
	}
	closed = true
	if err := dp.Close(); err != nil {
		t.Fatal(err)
	}
	if got := xdpState(a1); got != "none" {
		t.Errorf("%s after Close: XDP %s", a1, got)
	}
	if _, err := os.Stat(pins); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind: %v", pins, err)
	}
}
