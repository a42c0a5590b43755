package dataplane

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// inNewNetns runs the rest of the test on this goroutine's OS thread inside a new,
// unnamed network namespace (the kernel removes it when the test ends) and returns
// its loopback, up: an interface of the test's own to attach to (in generic mode:
// the kernel matrix's virtual machines have no veth module).
func inNewNetns(t *testing.T) string {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.New()
	if err != nil {
		orig.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = netns.Set(orig)
		orig.Close()
		ns.Close()
		runtime.UnlockOSThread()
	})
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	return "lo"
}

// linkProgram is the id of the program the pinned XDP link of ifname runs, and
// whether the interface has it attached.
func linkProgram(t *testing.T, node, ifname string) (ebpf.ProgramID, bool) {
	t.Helper()
	l, err := link.LoadPinnedLink(filepath.Join(PinDir("", node), linksDir, ifname), nil)
	if err != nil {
		t.Fatalf("open the pinned link of %s: %v", ifname, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	return info.Program, info.XDP() != nil && info.XDP().Ifindex != 0
}

func progID(t *testing.T, d *Dataplane) ebpf.ProgramID {
	t.Helper()
	info, err := d.Program().Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

func generations(t *testing.T, node string) []string {
	t.Helper()
	entries, err := os.ReadDir(PinDir("", node))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, ok := genNumber(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRestartKeepsForwarding walks the lifecycle of the pins across processes (each
// Load stands for a process): a released dataplane keeps its program attached; the
// next load adopts it and leaves it running until Swap, which moves the link to the
// new program at once and removes the old generation; a load released before its
// Swap leaves the running one alone; a generation nothing runs is removed at the next
// start; Uninstall detaches and removes everything.
func TestRestartKeepsForwarding(t *testing.T) {
	requireBPF(t)
	a := inNewNetns(t)
	node := fmt.Sprintf("fftest-restart-%d", os.Getpid())
	t.Cleanup(func() { _, _ = Uninstall("", node) })
	load := func() *Dataplane {
		t.Helper()
		d, err := Load(Config{NodeName: node, GroupsV4: 64})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	first := load()
	if p := first.Previous(); p.Adopted || len(p.Interfaces) > 0 {
		t.Fatalf("first start found %+v, want nothing", p)
	}
	if err := first.Attach(a, ModeGeneric); err != nil {
		t.Fatal(err)
	}
	if err := first.Swap(); err != nil {
		t.Fatal(err)
	}
	firstProg := progID(t, first)
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if id, on := linkProgram(t, node, a); id != firstProg || !on {
		t.Fatalf("after release: link runs program %d (attached %v), want the released one, %d, attached", id, on, firstProg)
	}
	if g := generations(t, node); !slices.Equal(g, []string{"gen-1"}) {
		t.Fatalf("generations after release: %v, want [gen-1]", g)
	}

	second := load()
	p := second.Previous()
	if !p.Adopted || !slices.Equal(p.Interfaces, []string{a}) || p.Generation != "gen-1" {
		t.Fatalf("second start found %+v, want gen-1 adopted on %s", p, a)
	}
	if err := second.Attach(a, ModeGeneric); err != nil {
		t.Fatal(err)
	}
	if id, _ := linkProgram(t, node, a); id != firstProg {
		t.Fatalf("before Swap the link runs %d, want the adopted program %d", id, firstProg)
	}
	if g := generations(t, node); !slices.Equal(g, []string{"gen-1", "gen-2"}) {
		t.Fatalf("generations while building: %v, want [gen-1 gen-2]", g)
	}
	if err := second.Swap(); err != nil {
		t.Fatal(err)
	}
	secondProg := progID(t, second)
	if id, on := linkProgram(t, node, a); id != secondProg || !on {
		t.Fatalf("after Swap the link runs %d (attached %v), want %d", id, on, secondProg)
	}
	if g := generations(t, node); !slices.Equal(g, []string{"gen-2"}) {
		t.Fatalf("generations after Swap: %v, want [gen-2]", g)
	}
	if dir, err := LivePinDir("", node); err != nil || filepath.Base(dir) != "gen-2" {
		t.Fatalf("LivePinDir = %s, %v; want gen-2", dir, err)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}

	// A start that stops before its Swap: the running program is untouched and the
	// half-built generation goes.
	third := load()
	if err := third.Attach(a, ModeGeneric); err != nil {
		t.Fatal(err)
	}
	if err := third.Release(); err != nil {
		t.Fatal(err)
	}
	if id, _ := linkProgram(t, node, a); id != secondProg {
		t.Fatalf("after a start released before Swap the link runs %d, want %d", id, secondProg)
	}
	if g := generations(t, node); !slices.Equal(g, []string{"gen-2"}) {
		t.Fatalf("generations after an unfinished start: %v, want [gen-2]", g)
	}
	// A crash's leftovers: a generation no program runs is removed at the next start.
	if err := os.Mkdir(filepath.Join(PinDir("", node), "gen-7"), 0o700); err != nil {
		t.Fatal(err)
	}
	fourth := load()
	if g := generations(t, node); !slices.Equal(g, []string{"gen-2", "gen-8"}) {
		t.Fatalf("generations at the start after a crash's leftover gen-7: %v, want [gen-2 gen-8]", g)
	}
	if err := fourth.Release(); err != nil {
		t.Fatal(err)
	}

	removed, err := Uninstall("", node)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Uninstall: removed %v, err %v; want the link and the maps", removed, err)
	}
	if _, err := os.Stat(PinDir("", node)); !os.IsNotExist(err) {
		t.Fatalf("pins still there after Uninstall: %v", err)
	}
	l, err := netlink.LinkByName(a)
	if err != nil {
		t.Fatal(err)
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		t.Fatalf("%s still has an XDP program (id %d) after Uninstall", a, x.ProgId)
	}
}

// TestHeartbeatExpiry: a program whose heartbeat is past its deadline passes every
// frame to the kernel (counted as stale), one before it forwards; and a start that
// finds an expired heartbeat does not adopt.
func TestHeartbeatExpiry(t *testing.T) {
	d := testDataplane(t)
	in := frame(frameOpts{payload: 10})
	var zero uint32
	set := func(dl time.Duration) {
		t.Helper()
		v := uint64(dl)
		if err := d.objs.Heartbeat.Put(&zero, &v); err != nil {
			t.Fatal(err)
		}
	}
	set(monotonic() + time.Minute)
	if ret, _ := run(t, d, in); ret != xdpRedirect {
		t.Fatalf("heartbeat a minute ahead: action %d, want a redirect", ret)
	}
	set(monotonic() - time.Second)
	for range 3 {
		if ret, out := run(t, d, in); ret != xdpPass || string(out[:len(in)]) != string(in) {
			t.Fatalf("heartbeat expired: action %d, want an untouched pass", ret)
		}
	}
	s := stats(t, d)
	if s[PassStale].Packets != 3 || s[Forwarded].Packets != 1 {
		t.Fatalf("counters %+v: want 3 stale passes and 1 forwarded", s)
	}
	set(0) // no deadline: forwards again
	if ret, _ := run(t, d, frame(frameOpts{dst: netip.MustParseAddr("198.51.100.9")})); ret != xdpRedirect {
		t.Fatalf("no deadline: action %d, want a redirect", ret)
	}

	// A start finding an expired heartbeat on an attached link adopts nothing.
	a := inNewNetns(t)
	node := fmt.Sprintf("fftest-hb-%d", os.Getpid())
	t.Cleanup(func() { _, _ = Uninstall("", node) })
	old, err := Load(Config{NodeName: node, GroupsV4: 64, RestartTime: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Attach(a, ModeGeneric); err != nil {
		t.Fatal(err)
	}
	if err := old.Swap(); err != nil {
		t.Fatal(err)
	}
	if err := old.Release(); err != nil {
		t.Fatal(err)
	}
	next, err := Load(Config{NodeName: node, GroupsV4: 64})
	if err != nil {
		t.Fatal(err)
	}
	if p := next.Previous(); !p.Adopted {
		t.Fatalf("a start within the restart time found %+v, want it adopted", p)
	}
	next.Release()
	time.Sleep(time.Second)
	late, err := Load(Config{NodeName: node, GroupsV4: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Release()
	if p := late.Previous(); p.Adopted || !slices.Equal(p.Interfaces, []string{a}) {
		t.Fatalf("a start after the restart time found %+v, want the link found and not adopted", p)
	}
}
