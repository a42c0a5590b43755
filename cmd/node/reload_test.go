package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/internal/testutil"
	"github.com/fsnotify/fsnotify"
)

func TestRestartFields(t *testing.T) {
	a := defaults()
	a.Interfaces, a.BGP.ASN = []string{"eth0"}, 65000
	b := a
	b.Interfaces = []string{"eth1"}
	b.FIB.GroupsV4 = 1
	b.Cluster.Mesh.Address = "10.0.0.1"
	b.Cache.Interval = 5 * a.Cache.Interval
	// Live: none of these take a restart.
	b.LogLevel = "debug"
	b.Cache.Mode, b.Cache.MaxEntries = "fixed", 1<<12
	b.BGP.Neighbors = []NeighborConfig{{Address: "192.0.2.1", ASN: 64500}}
	got := restartFields(a, b)
	want := []string{"interfaces", "fib.groups_v4", "cache.interval", "cluster.mesh.address"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("restartFields = %v, want %v", got, want)
	}
	if f := restartFields(a, a); len(f) != 0 {
		t.Errorf("restartFields of one config with itself = %v", f)
	}
}

func TestPlanReload(t *testing.T) {
	base := defaults()
	base.Interfaces, base.BGP.ASN, base.BGP.RouterID = []string{"eth0"}, 65000, "192.0.2.254"
	old, cur := base, base
	old.BGP.Neighbors = []NeighborConfig{
		{Address: "192.0.2.1", ASN: 64501},                       // removed
		{Address: "192.0.2.2", ASN: 64502},                       // AS changed: reset
		{Address: "192.0.2.3", ASN: 64503, MaxPrefixes: 1000},    // limit changed: live
		{Address: "192.0.2.4", ASN: 64504},                       // unchanged
		{Address: "192.0.2.6", ASN: 64506, Families: []string{}}, // families: the same, written otherwise
		{Address: "192.0.2.7", ASN: 64507},                       // import rules changed: live
	}
	cur.BGP.Neighbors = []NeighborConfig{
		{Address: "192.0.2.2", ASN: 64599},
		{Address: "192.0.2.3", ASN: 64503, MaxPrefixes: 2000},
		{Address: "192.0.2.4", ASN: 64504},
		{Address: "192.0.2.5", ASN: 64505}, // added
		{Address: "192.0.2.6", ASN: 64506, Families: []string{"ipv4-unicast"}},
		{Address: "192.0.2.7", ASN: 64507, Import: ImportConfig{PrivateASNs: true, Allow: []string{"192.0.2.0/24"}}},
	}
	cur.Cache.Mode = "off"
	p, err := planReload(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	addrs := func(ns []bgp.Neighbor) (out []string) {
		for _, n := range ns {
			out = append(out, n.Address.String())
		}
		return out
	}
	for what, c := range map[string]struct{ got, want []string }{
		"add": {addrs(p.add), []string{"192.0.2.5"}}, "remove": {addrs(p.remove), []string{"192.0.2.1"}},
		"reset": {addrs(p.reset), []string{"192.0.2.2"}}, "limits": {addrs(p.limits), []string{"192.0.2.3"}}, "imports": {addrs(p.imports), []string{"192.0.2.7"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", what, c.got, c.want)
		}
	}
	if p.cache == nil || p.cache.Mode != cache.Off || p.logLevel != "" {
		t.Errorf("cache %v, log level %q: want the new policy, no log level change", p.cache, p.logLevel)
	}
	if p, err := planReload(old, old); err != nil || !p.empty() {
		t.Errorf("the same config again: %+v, %v; want nothing to do", p, err)
	}
	moved := cur
	moved.Interfaces, moved.HTTPAddress = []string{"eth9"}, "127.0.0.1:1"
	if _, err := planReload(old, moved); err == nil || !strings.Contains(err.Error(), "interfaces changed: that takes a restart") || !strings.Contains(err.Error(), "http_address changed") {
		t.Errorf("interfaces and http_address changed: %v; want both named as taking a restart", err)
	}
}

// fakeBGP records what a reload did to the speaker's neighbours.
type fakeBGP struct {
	ops     []string
	failAdd map[netip.Addr]bool
	// passwords are the TCP-MD5 passwords of the neighbours added, guarded by mu (a
	// reloader's run adds from its own goroutine).
	mu        sync.Mutex
	passwords map[netip.Addr]string
}

func (f *fakeBGP) AddNeighbor(_ context.Context, n bgp.Neighbor) error {
	if f.failAdd[n.Address] {
		return errors.New("refused")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "add "+n.Address.String())
	if f.passwords == nil {
		f.passwords = map[netip.Addr]string{}
	}
	f.passwords[n.Address] = n.Password
	return nil
}

func (f *fakeBGP) password(a netip.Addr) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.passwords[a]
}

func (f *fakeBGP) RemoveNeighbor(_ context.Context, a netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "remove "+a.String())
	return nil
}

func (f *fakeBGP) SetImport(_ context.Context, a netip.Addr, _ *bgp.ImportRules, _ *bgp.ImportActions) error {
	f.ops = append(f.ops, "import "+a.String())
	return nil
}

func (f *fakeBGP) SetExport(_ context.Context, a netip.Addr, e *bgp.Export) error {
	f.ops = append(f.ops, fmt.Sprintf("export %s %d", a, len(e.Prefixes)))
	return nil
}

func (f *fakeBGP) configure(_ context.Context, c OriginateConfig) error {
	f.ops = append(f.ops, fmt.Sprintf("originate %d", len(c.Prefixes)))
	return nil
}

func (f *fakeBGP) SetLimits(a netip.Addr, maxPrefixes, _ uint32, _ time.Duration) error {
	f.ops = append(f.ops, "limits "+a.String())
	return nil
}

// TestReloader drives reloads from a config directory: applied, unchanged, refused
// (invalid; a change that takes a restart), and a neighbour GoBGP refuses tried
// again at the next reload.
func TestReloader(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const head = "interfaces: [eth0]\nbgp:\n  asn: 65000\n  router_id: 192.0.2.254\n  neighbors:\n"
	write(head + "    - {address: 192.0.2.1, asn: 64501}\n")
	args := []string{"-config-dir", dir, "-node-name", "r1"}
	cfg, err := loadConfig(args)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBGP{failAdd: map[netip.Addr]bool{}}
	var policies []cache.Policy
	level := new(slog.LevelVar)
	r := newReloader(args, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), level, b, func(p cache.Policy) error { policies = append(policies, p); return nil })
	r.origin = b
	ctx := context.Background()
	step := func(what, body, wantResult string, wantOps ...string) error {
		t.Helper()
		if body != "" {
			write(body)
		}
		b.ops = nil
		got, err := r.reload(ctx, "test")
		if got != wantResult || !slices.Equal(b.ops, wantOps) {
			t.Fatalf("%s: %s (%v), ops %q; want %s, %q", what, got, err, b.ops, wantResult, wantOps)
		}
		return err
	}
	step("nothing changed", "", reloadUnchanged)
	step("a neighbour added, the log level and the cache policy changed", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.1, asn: 64501}\n    - {address: 192.0.2.2, asn: 64502}\n",
		reloadApplied, "add 192.0.2.2")
	if level.Level() != slog.LevelDebug || len(policies) != 1 || policies[0].Mode != cache.Off {
		t.Errorf("log level %v, policies applied %v; want debug and the off policy", level.Level(), policies)
	}
	err = step("invalid: nothing applied", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: not-an-ip, asn: 64501}\n", reloadRefused)
	if err == nil || !strings.Contains(err.Error(), `bgp.neighbors[0].address "not-an-ip"`) {
		t.Errorf("invalid file: %v, want the bad address named", err)
	}
	err = step("interfaces changed: refused whole", "interfaces: [eth1]\nlog_level: debug\ncache: {mode: off}\nbgp:\n  asn: 65000\n  router_id: 192.0.2.254\n  neighbors: []\n", reloadRefused)
	if err == nil || !strings.Contains(err.Error(), "interfaces changed: that takes a restart") {
		t.Errorf("interfaces changed: %v", err)
	}
	b.failAdd[netip.MustParseAddr("192.0.2.3")] = true
	step("one neighbour removed, one reset, one refused by GoBGP", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.2, asn: 64999}\n    - {address: 192.0.2.3, asn: 64503}\n",
		reloadFailed, "remove 192.0.2.1", "remove 192.0.2.2", "add 192.0.2.2")
	delete(b.failAdd, netip.MustParseAddr("192.0.2.3"))
	step("the refused neighbour tried again, nothing else", "", reloadApplied, "add 192.0.2.3")
	step("then nothing to do", "", reloadUnchanged)
	const orig = "  originate: {prefixes: [{prefix: 198.19.10.0/24, reaches: local}]}\n"
	err = step("an export of a prefix not originated: refused", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.2, asn: 64999, export: {prefixes: [198.19.10.0/24]}}\n    - {address: 192.0.2.3, asn: 64503}\n", reloadRefused)
	if err == nil || !strings.Contains(err.Error(), "198.19.10.0/24 is not one the node originates") {
		t.Errorf("export of a prefix not originated: %v", err)
	}
	step("a prefix originated and exported: the prefixes first, the export live", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.2, asn: 64999, export: {prefixes: [198.19.10.0/24]}}\n    - {address: 192.0.2.3, asn: 64503}\n"+orig,
		reloadApplied, "originate 1", "export 192.0.2.2 1")
	counts, last := r.status()
	if counts[reloadApplied] != 3 || counts[reloadRefused] != 3 || counts[reloadFailed] != 1 || counts[reloadUnchanged] != 2 || last.Result != reloadApplied {
		t.Errorf("counts %v, last %+v", counts, last)
	}
	var weights []map[netip.Addr]int
	r.weights = func(w map[netip.Addr]int) error { weights = append(weights, w); return nil }
	step("a neighbour's weight: live, no session touched", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.2, asn: 64999, weight: 10, export: {prefixes: [198.19.10.0/24]}}\n    - {address: 192.0.2.3, asn: 64503}\n"+orig,
		reloadApplied)
	if len(weights) != 1 || !maps.Equal(weights[0], map[netip.Addr]int{netip.MustParseAddr("192.0.2.2"): 10}) {
		t.Errorf("weights applied %v, want 192.0.2.2's 10", weights)
	}
	err = step("a weight out of range: refused", "log_level: debug\ncache: {mode: off}\n"+head+"    - {address: 192.0.2.2, asn: 64999, weight: 65, export: {prefixes: [198.19.10.0/24]}}\n    - {address: 192.0.2.3, asn: 64503}\n"+orig,
		reloadRefused)
	if err == nil || !strings.Contains(err.Error(), "bgp.neighbors[0].weight 65: use 1 to 64") || len(weights) != 1 {
		t.Errorf("weight 65: %v (weights applied %v)", err, weights)
	}
}

// TestReloadOnPasswordFileChange: a neighbour's password file in a directory laid out
// as the kubelet mounts a Secret (password -> ..data/password, ..data -> ..<version>,
// the ..data symlink swapped on update) is followed, with no -config-dir: its change
// reloads, and the session starts again with the new password.
func TestReloadOnPasswordFileChange(t *testing.T) {
	secret := t.TempDir()
	publish := func(version, password string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(secret, version), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(secret, version, "password"), []byte(password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(secret, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(secret, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish("..v1", "one")
	if err := os.Symlink("..data/password", filepath.Join(secret, "password")); err != nil {
		t.Fatal(err)
	}
	conf := writeConfig(t, fmt.Sprintf("interfaces: [eth0]\nbgp:\n  asn: 65000\n  router_id: 192.0.2.254\n  neighbors:\n    - {address: 192.0.2.1, asn: 64501, password_file: %s}\n",
		filepath.Join(secret, "password")))
	args := []string{"-config", conf, "-node-name", "r1"}
	cfg, err := loadConfig(args)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBGP{}
	r := newReloader(args, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), new(slog.LevelVar), b, func(cache.Policy) error { return nil })
	r.origin = b
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal)
	done := make(chan struct{})
	go func() { r.run(ctx, "", hup); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// Taken once run watches: the update below cannot come before the watch.
	hup <- syscall.SIGHUP

	publish("..v2", "two")
	if err := os.RemoveAll(filepath.Join(secret, "..v1")); err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddr("192.0.2.1")
	testutil.Eventually(t, "the neighbour's session started again with the new password", func() bool { return b.password(peer) == "two" })
	b.mu.Lock()
	ops := slices.Clone(b.ops)
	b.mu.Unlock()
	if !slices.Equal(ops, []string{"remove 192.0.2.1", "add 192.0.2.1"}) {
		t.Errorf("ops %q, want the session reset alone", ops)
	}
	// One applied (the swap's events within 200 ms are one change; on a slow
	// machine the old version's removal may come later: another reload, unchanged).
	if counts, _ := r.status(); counts[reloadApplied] != 1 || counts[reloadRefused]+counts[reloadFailed] != 0 {
		t.Errorf("reloads %v; want the password's applied once, none refused or failed", counts)
	}
}

// TestDirWatchFollow: the password files' directories are watched as the running
// configuration names them: one not there yet is tried again at the next reload, one
// no longer named is dropped, the config directory is left to its own watch.
func TestDirWatchFollow(t *testing.T) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	config := t.TempDir()
	if err := w.Add(config); err != nil {
		t.Fatal(err)
	}
	d := &dirWatch{w: w, config: config, secrets: map[string]bool{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	md5 := filepath.Join(t.TempDir(), "md5")
	watched := func() []string { l := w.WatchList(); slices.Sort(l); return l }

	d.follow([]string{md5, config})
	if got := watched(); !slices.Equal(got, []string{config}) || len(d.secrets) != 0 {
		t.Fatalf("with %s not there: watching %v (secrets %v), want the config directory alone", md5, got, d.secrets)
	}
	if err := os.Mkdir(md5, 0o755); err != nil {
		t.Fatal(err)
	}
	d.follow([]string{md5, config})
	if got, want := watched(), []string{config, md5}; !slices.Equal(got, want) {
		t.Fatalf("once %s is there: watching %v, want %v", md5, got, want)
	}
	if err := os.WriteFile(filepath.Join(md5, "password"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Events:
		if why := d.why(ev); why != "a password file changed" {
			t.Errorf("%v: trigger %q, want a password file changed", ev, why)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event for a file written in a password file's directory")
	}
	d.follow(nil)
	if got := watched(); !slices.Equal(got, []string{config}) || len(d.secrets) != 0 {
		t.Errorf("no password file named: watching %v (secrets %v), want the config directory alone", got, d.secrets)
	}
}
