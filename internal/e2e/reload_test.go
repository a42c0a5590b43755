package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
	"gopkg.in/yaml.v3"
)

// TestReload changes a running node's configuration as Kubernetes does (a ConfigMap
// swap under -config-dir) and with SIGHUP: the IPv6 upstream removed (its session
// closed, its routes gone) while the IPv4 one's limits change with its session kept;
// then added back; an invalid file and a change that takes a restart refused whole,
// nothing changed; every outcome counted in /metrics and the node API.
func TestReload(t *testing.T) {
	ctx := context.Background()
	sk := startSkeleton(t, lab.SkeletonConfig{ConfigDir: true})
	v4, v6 := len(lab.AllRoutes()), len(lab.SkeletonRoutes6)
	getStatus := func() (nodeapi.Status, error) { return apiGet[nodeapi.Status](sk.Get, "/api/v1/status") }
	status := func() nodeapi.Status {
		t.Helper()
		st, err := getStatus()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	session := func(st nodeapi.Status, addr string) (nodeapi.Session, bool) {
		for _, s := range st.Sessions {
			if s.Neighbor.String() == addr {
				return s, true
			}
		}
		return nodeapi.Session{}, false
	}
	// waitState waits for the routes of both families and the IPv6 session present
	// (established) or absent.
	waitState := func(what string, routes [2]int, v6Session bool) nodeapi.Status {
		t.Helper()
		var st nodeapi.Status
		err := lab.WaitFor(ctx, 60*time.Second, what, func() (bool, error) {
			var err error
			if st, err = getStatus(); err != nil {
				return false, err
			}
			s, ok := session(st, lab.UpstreamAddr6)
			return st.Routes == routes && ok == v6Session && (!ok || s.State == "established"), nil
		})
		if err != nil {
			t.Fatalf("%v: routes %v, sessions %+v", err, st.Routes, st.Sessions)
		}
		return st
	}
	st := waitState("the table from both sessions", [2]int{v4 + 1, v6}, true) // +1: the RFC 8950 route over the IPv6 session
	up4, ok := session(st, lab.UpstreamAddr)
	if !ok || up4.Established.IsZero() {
		t.Fatalf("the IPv4 session: %+v", st.Sessions)
	}

	var base map[string]any
	if err := yaml.Unmarshal([]byte(sk.NodeConfigYAML), &base); err != nil {
		t.Fatal(err)
	}
	bgpSection := base["bgp"].(map[string]any)
	neighbors := bgpSection["neighbors"].([]any)
	render := func(change func(c map[string]any)) string {
		t.Helper()
		b, _ := yaml.Marshal(base)
		var c map[string]any
		_ = yaml.Unmarshal(b, &c)
		change(c)
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	withNeighbors := func(ns ...any) func(map[string]any) {
		return func(c map[string]any) { c["bgp"].(map[string]any)["neighbors"] = ns }
	}
	reloads := func(result string) float64 {
		t.Helper()
		m, err := sk.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		return m[fmt.Sprintf(`fibfleet_config_reloads_total{result=%q}`, result)]
	}
	waitReloads := func(result string, n float64) {
		t.Helper()
		if err := lab.WaitFor(ctx, 20*time.Second, fmt.Sprintf("%v reloads %s", n, result), func() (bool, error) { return reloads(result) == n, nil }); err != nil {
			t.Fatal(err)
		}
	}
	hup := func() {
		t.Helper()
		if err := syscall.Kill(sk.NodePID, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	keptUp4 := func(st nodeapi.Status, when string) {
		t.Helper()
		if s, ok := session(st, lab.UpstreamAddr); !ok || s.State != "established" || !s.Established.Equal(up4.Established) {
			t.Errorf("%s: the IPv4 session %+v, want it established since %v (kept)", when, s, up4.Established)
		}
	}

	// A ConfigMap swap: the IPv6 upstream removed, the IPv4 one's limits changed.
	four := neighbors[0].(map[string]any)
	four["max_prefixes"] = v4 + 500
	if err := sk.WriteConfig(render(withNeighbors(four))); err != nil {
		t.Fatal(err)
	}
	waitReloads("applied", 1)
	st = waitState("the IPv6 session and its routes gone", [2]int{v4, 0}, false)
	keptUp4(st, "after the IPv6 upstream was removed")
	if st.Config.LastReloadResult != "applied" || len(st.Config.Files) != 1 || !strings.HasSuffix(st.Config.Files[0], "fleet.yaml") {
		t.Errorf("the API's config: %+v", st.Config)
	}

	// SIGHUP: the IPv6 upstream back (the file under -config-dir, written as before).
	if err := sk.WriteConfig(render(withNeighbors(four, neighbors[1]))); err != nil {
		t.Fatal(err)
	}
	hup()
	st = waitState("the IPv6 session and its routes back", [2]int{v4 + 1, v6}, true)
	keptUp4(st, "after the IPv6 upstream came back")
	if reloads("applied") != 2 {
		t.Errorf("applied reloads %v, want 2 (the swap and SIGHUP at once are one change)", reloads("applied"))
	}

	// Refused whole: an invalid file, and a change that takes a restart.
	for i, c := range []struct{ body, why string }{
		{render(func(c map[string]any) { c["bgp"].(map[string]any)["neighbours"] = []any{} }), "neighbours"},
		{render(func(c map[string]any) { c["interfaces"] = []any{"lo"}; c["log_level"] = "debug" }), "interfaces changed: that takes a restart"},
	} {
		if err := sk.WriteConfig(c.body); err != nil {
			t.Fatal(err)
		}
		waitReloads("refused", float64(i+1))
		st = status()
		if !strings.Contains(st.Config.LastReloadError, c.why) {
			t.Errorf("refused reload %d: the API says %q, want it to name %q", i+1, st.Config.LastReloadError, c.why)
		}
		if m, _ := sk.Metrics(); m["fibfleet_config_last_reload_successful"] != 0 {
			t.Errorf("refused reload %d: last_reload_successful %v, want 0", i+1, m["fibfleet_config_last_reload_successful"])
		}
		keptUp4(st, fmt.Sprintf("after refused reload %d", i+1))
		if _, ok := session(st, lab.UpstreamAddr6); !ok || st.Routes != [2]int{v4 + 1, v6} {
			t.Errorf("refused reload %d changed something: routes %v, sessions %+v", i+1, st.Routes, st.Sessions)
		}
	}
	// ctl status says so too, in the router's namespace through the node's etcd.
	ctl := build(t, "github.com/fibfleet/fibfleet/cmd/ctl", "ctl")
	out, err := sk.Router.Exec(ctl, "--etcd", "unix://"+filepath.Join(sk.Dir, "etcd", "etcd.sock"), "status", "-o", "json")
	var rows []struct {
		Node        string `json:"node"`
		Config      string `json:"config"`
		ConfigError string `json:"config_error"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].Config != "refused" ||
		!strings.Contains(rows[0].ConfigError, "interfaces changed") {
		t.Errorf("ctl status after a refused reload: %v %s; want config refused, naming interfaces", err, out)
	}

	unchanged := reloads("unchanged")
	if err := sk.WriteConfig(render(withNeighbors(four, neighbors[1]))); err != nil {
		t.Fatal(err)
	}
	waitReloads("unchanged", unchanged+1)
	if m, _ := sk.Metrics(); m["fibfleet_config_last_reload_successful"] != 1 {
		t.Errorf("the running configuration written again: last_reload_successful %v, want 1", m["fibfleet_config_last_reload_successful"])
	}
}

// TestReloadSessions: one configuration change (a ConfigMap swap) with a neighbour
// added, one removed, one whose TCP-MD5 password changed, one whose import policy
// alone changed and one unchanged: only the added and the changed one start a new
// session; the policy change reaches the dataplane (a prefix the new prefix list
// leaves out is no longer forwarded) with that session's uptime unchanged; an
// invalid file before it changes nothing.
func TestReloadSessions(t *testing.T) {
	ctx := context.Background()
	sk := startSkeleton(t, lab.SkeletonConfig{Announce: true, ConfigDir: true, Secure6: "s3cret"})
	sessionsErr := func() (map[string]nodeapi.Session, error) {
		st, err := apiGet[nodeapi.Status](sk.Get, "/api/v1/status")
		out := map[string]nodeapi.Session{}
		for _, s := range st.Sessions {
			out[s.Neighbor.String()] = s
		}
		return out, err
	}
	sessions := func() map[string]nodeapi.Session {
		t.Helper()
		out, err := sessionsErr()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	lookupErr := func(a string) (nodeapi.Lookup, error) {
		return apiGet[nodeapi.Lookup](sk.Get, "/api/v1/lookup?addr="+a)
	}
	all := []string{lab.UpstreamAddr, lab.UpstreamAddr6, lab.CoreAddr, lab.Upstream2Addr}
	var before map[string]nodeapi.Session
	err := lab.WaitFor(ctx, 60*time.Second, "every session established and 9.9.9.0/24 forwarded", func() (bool, error) {
		var err error
		if before, err = sessionsErr(); err != nil {
			return false, err
		}
		for _, a := range all {
			if before[a].State != "established" {
				return false, nil
			}
		}
		l, err := lookupErr("9.9.9.9")
		return l.Found, err
	})
	if err != nil {
		t.Fatalf("%v: %+v", err, before)
	}
	reloads := func(result string) float64 {
		m, _ := sk.Metrics()
		return m[fmt.Sprintf(`fibfleet_config_reloads_total{result=%q}`, result)]
	}

	// An invalid file: refused, nothing changed.
	if err := sk.WriteConfig(sk.NodeConfigYAML + "bgp: [\n"); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, 20*time.Second, "the invalid file refused", func() (bool, error) { return reloads("refused") == 1, nil }); err != nil {
		t.Fatal(err)
	}
	for a, s := range sessions() {
		if !s.Established.Equal(before[a].Established) {
			t.Errorf("an invalid file restarted the session with %s", a)
		}
	}

	// The change: the core removed, the extra upstream added, the IPv6 session's
	// password changed (BIRD's too), the IPv4 upstream's prefix list now leaving
	// 9.9.9.0/24 out, the second upstream unchanged.
	body := sk.NodeConfigYAML
	core := fmt.Sprintf("    - address: %s\n      asn: %d\n", lab.CoreAddr, lab.RouterASN)
	extra := fmt.Sprintf("    - address: %s\n      asn: %d\n      import: %s\n", lab.ExtraAddr, lab.ExtraASN, lab.LabImport)
	list := `, prefix_list: ["198.51.100.0/24", "203.0.113.0/24", "1.1.1.0/24", "100.64.1.0/24", "192.0.2.0/24"]}`
	policy := strings.TrimSuffix(lab.LabImport, "}") + list
	next := strings.Replace(strings.Replace(body, core, extra, 1), "import: "+lab.LabImport, "import: "+policy, 1)
	if next == body || !strings.Contains(next, lab.ExtraAddr) || !strings.Contains(next, "prefix_list") {
		t.Fatalf("the skeleton's configuration does not have the shape this test edits:\n%s", body)
	}
	if err := os.WriteFile(sk.Secure6File, []byte("n3w\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(sk.Dir, "bird.conf")
	bc, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(strings.Replace(string(bc), `password "s3cret"`, `password "n3w"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := sk.Birdc("configure"); err != nil {
		t.Fatalf("birdc configure: %v: %s", err, out)
	}
	if err := sk.WriteConfig(next); err != nil {
		t.Fatal(err)
	}
	var after map[string]nodeapi.Session
	err = lab.WaitFor(ctx, 90*time.Second, "the extra upstream up, the core gone, the IPv6 session back with its new password", func() (bool, error) {
		var err error
		if after, err = sessionsErr(); err != nil {
			return false, err
		}
		_, coreThere := after[lab.CoreAddr]
		v6 := after[lab.UpstreamAddr6]
		return !coreThere && after[lab.ExtraAddr].State == "established" && v6.State == "established" && v6.Established.After(before[lab.UpstreamAddr6].Established), nil
	})
	if err != nil {
		t.Fatalf("%v: %+v", err, after)
	}
	for _, a := range []string{lab.UpstreamAddr, lab.Upstream2Addr} {
		if !after[a].Established.Equal(before[a].Established) {
			t.Errorf("the session with %s started again (%v, was %v): only the added and the changed ones may", a, after[a].Established, before[a].Established)
		}
	}
	if reloads("applied") != 1 {
		t.Errorf("applied reloads: %v, want 1", reloads("applied"))
	}
	// The policy in the dataplane: 9.9.9.0/24 gone, the extra upstream's route in;
	// packets to the first no longer forwarded.
	err = lab.WaitFor(ctx, 20*time.Second, "9.9.9.0/24 out of the FIB, 198.18.77.0/24 in", func() (bool, error) {
		gone, err := lookupErr("9.9.9.9")
		if err != nil {
			return false, err
		}
		in, err := lookupErr("198.18.77.1")
		return !gone.Found && in.Found, err
	})
	if err != nil {
		t.Fatal(err)
	}
	sink2, err := sk.Listen(sk.Sink2)
	if err != nil {
		t.Fatal(err)
	}
	sink1, err := sk.Listen(sk.Sink1)
	if err != nil {
		t.Fatal(err)
	}
	dst, extraDst := netip.MustParseAddr("9.9.9.9"), netip.MustParseAddr("198.18.77.1")
	if err := sk.Send(dst, 20); err != nil {
		t.Fatal(err)
	}
	if err := sk.Send(extraDst, 20); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, 10*time.Second, "the extra upstream's destination forwarded", func() (bool, error) { return sink1.Count(extraDst) == 20, nil }); err != nil {
		t.Error(err)
	}
	if n := sink2.Count(dst); n != 0 {
		t.Errorf("%d packets to %s forwarded after the prefix list left it out", n, dst)
	}
	m, _ := sk.Metrics()
	if v := m[fmt.Sprintf(`fibfleet_bgp_import_refused_total{neighbor="%s",reason="prefix_list"}`, lab.UpstreamAddr)]; v < 1 {
		t.Errorf("prefix_list refusals from %s: %v, want at least 1", lab.UpstreamAddr, v)
	}
}
