package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// birdHolds parses `birdc show route protocol <p> all`: per prefix, the attributes
// the node sent ("path=... med=... comm=... large=...", only those present).
func birdHolds(out string) map[string]string {
	got := map[string]string{}
	var cur string
	var attrs []string
	flush := func() {
		if cur != "" {
			got[cur] = strings.Join(attrs, " ")
		}
		cur, attrs = "", nil
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && (f[1] == "unicast" || f[1] == "blackhole") && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t"):
			flush()
			cur = f[0]
		case cur == "":
		case strings.HasPrefix(strings.TrimSpace(line), "BGP.as_path:"):
			attrs = append(attrs, "path="+strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "BGP.as_path:")))
		case strings.HasPrefix(strings.TrimSpace(line), "BGP.med:"):
			attrs = append(attrs, "med="+strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "BGP.med:")))
		case strings.HasPrefix(strings.TrimSpace(line), "BGP.community:"):
			attrs = append(attrs, "comm="+strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "BGP.community:")))
		case strings.HasPrefix(strings.TrimSpace(line), "BGP.large_community:"):
			attrs = append(attrs, "large="+strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "BGP.large_community:")))
		}
	}
	flush()
	return got
}

// TestAnnounce: the fleet's prefixes reach two BIRD upstreams exactly as the
// configuration allows each (which prefixes, communities, large communities,
// prepends, MED; IPv4 and IPv6), a prefix with no route from inside the AS is never
// announced and one whose core route goes is withdrawn after the hold-down, not
// before; the upstream announcing one of the node's own prefixes is refused
// (counted, and its packets never forwarded); one upstream resetting its sessions,
// and a reload that changes an export, withdraw nothing from the other; detaching
// the dataplane withdraws everything after the hold-down.
func TestAnnounce(t *testing.T) {
	ctx := context.Background()
	sk := startSkeleton(t, lab.SkeletonConfig{Announce: true, ConfigDir: true})
	birdc := map[string]func(...string) (string, error){"up1": sk.Birdc, "up2": sk.Birdc2}
	holds := func(up, proto string) (map[string]string, error) {
		out, err := birdc[up]("show", "route", "protocol", proto, "all")
		if err != nil {
			return nil, fmt.Errorf("birdc %s: %w: %s", up, err, out)
		}
		return birdHolds(out), nil
	}
	const (
		attrs1 = "path=65000 65000 65000 med=50 comm=(65000,100) large=(65000, 1, 2)"
		attrs2 = "path=65000 comm=(65000,200)"
	)
	local, local6, routed := lab.OriginLocal.String(), lab.OriginLocal6.String(), lab.OriginRouted.String()
	want := map[string]map[string]string{
		"up1 node":  {local: attrs1, routed: attrs1},
		"up1 node6": {local6: "path=65000"},
		"up2 node":  {local: attrs2},
	}
	state := func() (map[string]map[string]string, error) {
		got := map[string]map[string]string{}
		for k := range want {
			up, proto, _ := strings.Cut(k, " ")
			h, err := holds(up, proto)
			if err != nil {
				return nil, err
			}
			got[k] = h
		}
		return got, nil
	}
	equal := func(a, b map[string]map[string]string) bool {
		return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
	}
	waitHolds := func(what string, want map[string]map[string]string, timeout time.Duration) {
		t.Helper()
		var got map[string]map[string]string
		err := lab.WaitFor(ctx, timeout, what, func() (bool, error) {
			var err error
			got, err = state()
			return err == nil && equal(got, want), err
		})
		if err != nil {
			for k := range want {
				up, proto, _ := strings.Cut(k, " ")
				out, _ := birdc[up]("show", "protocols", "all", proto)
				t.Logf("%s: birdc show protocols all %s:\n%s", up, proto, out)
			}
			t.Fatalf("%v:\n got %v\nwant %v", err, got, want)
		}
	}
	waitHolds("each upstream holding exactly what its export allows", want, 90*time.Second)

	announce := func() nodeapi.Announce {
		t.Helper()
		a, err := apiGet[nodeapi.Announce](sk.Get, "/api/v1/announce")
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, p := range announce().Prefixes {
		if p.Prefix == lab.OriginUnrouted && (p.Announced || !strings.Contains(p.Why, "no route from inside the AS")) {
			t.Errorf("%s: %+v, want it not announced, for want of a route", p.Prefix, p)
		}
	}
	for _, n := range announce().Neighbors {
		if n.Neighbor.String() == lab.Upstream2Addr && (len(n.Advertised) != 1 || n.Advertised[0].Prefix != lab.OriginLocal || !slices.Equal(n.Advertised[0].ASPath, []uint32{lab.RouterASN})) {
			t.Errorf("the node's account of what up2 is sent: %+v", n)
		}
	}

	// The upstream's route inside the fleet's own prefix: refused, never forwarded.
	m, err := sk.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if v := m[fmt.Sprintf(`fibfleet_bgp_import_refused_total{neighbor="%s",reason="own_prefix"}`, lab.UpstreamAddr)]; v != 1 {
		t.Errorf("own_prefix refusals from the upstream: %v, want 1", v)
	}
	for _, k := range []string{fmt.Sprintf(`fibfleet_bgp_advertised_prefixes{neighbor="%s"}`, lab.Upstream2Addr), fmt.Sprintf(`fibfleet_bgp_originated_prefix_announced{prefix="%s"}`, local)} {
		if m[k] != 1 {
			t.Errorf("%s = %v, want 1", k, m[k])
		}
	}
	sink, err := sk.Listen(sk.Sink1)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.MustParseAddr("198.19.10.7")
	if err := sk.Send(dst, 20); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := sink.Count(dst); n != 0 {
		t.Errorf("%d packets to %s reached sink1 over the upstream's refused route", n, dst)
	}

	// The core's route goes: the routed prefix stays for the hold-down, then leaves.
	if out, err := sk.Birdc2("disable", "corenet"); err != nil {
		t.Fatalf("birdc disable corenet: %v: %s", err, out)
	}
	gone := time.Now()
	time.Sleep(lab.AnnounceHoldDown / 2)
	if got, err := state(); err != nil || got["up1 node"][routed] != attrs1 {
		t.Fatalf("half the hold-down after the core's route went, up1 holds %v (%v): want %s still announced", got, err, routed)
	}
	noRouted := map[string]map[string]string{"up1 node": {local: attrs1}, "up1 node6": want["up1 node6"], "up2 node": want["up2 node"]}
	waitHolds("the routed prefix withdrawn after the hold-down", noRouted, lab.AnnounceHoldDown+30*time.Second)
	if d := time.Since(gone); d < lab.AnnounceHoldDown {
		t.Errorf("withdrawn %v after its route went, before the hold-down (%v)", d, lab.AnnounceHoldDown)
	}
	if out, err := sk.Birdc2("enable", "corenet"); err != nil {
		t.Fatalf("birdc enable corenet: %v: %s", err, out)
	}
	waitHolds("the routed prefix back with its route", want, 60*time.Second)

	// One upstream resets both its sessions, and the node reloads with up2's export
	// changed: up2 never loses the prefix meanwhile.
	watch := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				watch <- nil
				return
			case <-time.After(200 * time.Millisecond):
			}
			h, err := holds("up2", "node")
			if err == nil && h[local] == "" {
				err = fmt.Errorf("up2 lost %s: holds %v", local, h)
			}
			if err != nil {
				watch <- err
				return
			}
		}
	}()
	if out, err := sk.Birdc("restart", `"node*"`); err != nil {
		t.Fatalf("birdc restart: %v: %s", err, out)
	}
	time.Sleep(2 * time.Second)
	waitHolds("up1 holding the prefixes again after its reset", want, 60*time.Second)
	st := status(t, sk)
	var up2Since time.Time
	for _, s := range st.Sessions {
		if s.Neighbor.String() == lab.Upstream2Addr {
			up2Since = s.Established
		}
	}
	body := strings.Replace(sk.NodeConfigYAML, `communities: ["65000:200"]`, `communities: ["65000:200", "65000:201"]`, 1)
	if body == sk.NodeConfigYAML {
		t.Fatal("the skeleton's configuration has no export for up2 to change")
	}
	if err := sk.WriteConfig(body); err != nil {
		t.Fatal(err)
	}
	changed := map[string]map[string]string{"up1 node": want["up1 node"], "up1 node6": want["up1 node6"], "up2 node": {local: "path=65000 comm=(65000,200) (65000,201)"}}
	waitHolds("up2 holding the prefix with its new communities", changed, 30*time.Second)
	if err := syscall.Kill(sk.NodePID, syscall.SIGHUP); err != nil { // and a SIGHUP that changes nothing
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	if err := <-watch; err != nil {
		t.Error(err)
	}
	for _, s := range status(t, sk).Sessions {
		if s.Neighbor.String() == lab.Upstream2Addr && !s.Established.Equal(up2Since) {
			t.Errorf("up2's session started again (%v, was %v): an export change must keep it", s.Established, up2Since)
		}
	}

	// ctl drain: every announcement carries GRACEFUL_SHUTDOWN, every session kept;
	// ctl status says so; ctl undrain takes it off.
	ctlBin := build(t, "github.com/fibfleet/fibfleet/cmd/ctl", "ctl")
	etcd := "unix://" + filepath.Join(sk.Dir, "etcd", "etcd.sock")
	ctl := func(args ...string) string {
		t.Helper()
		out, err := sk.Router.Exec(append([]string{ctlBin, "--etcd", etcd, "--timeout", "20s"}, args...)...)
		if err != nil {
			t.Fatalf("ctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	// ctl advertised, routes and neighbors: what the node tracks.
	var adv []struct {
		Prefix      netip.Prefix `json:"prefix"`
		ASPath      []uint32     `json:"as_path"`
		Communities []string     `json:"communities"`
	}
	if err := json.Unmarshal([]byte(ctl("advertised", lab.Upstream2Addr, "-o", "json")), &adv); err != nil || len(adv) != 1 || adv[0].Prefix != lab.OriginLocal ||
		!slices.Equal(adv[0].ASPath, []uint32{lab.RouterASN}) || !slices.Equal(adv[0].Communities, []string{"65000:200", "65000:201"}) {
		t.Errorf("ctl advertised %s: %+v (%v)", lab.Upstream2Addr, adv, err)
	}
	type routeRow struct {
		Prefix    netip.Prefix `json:"prefix"`
		Neighbor  netip.Addr   `json:"neighbor"`
		Best      bool         `json:"best"`
		Installed bool         `json:"installed"`
		Refused   string       `json:"refused"`
	}
	var routes []routeRow
	if err := json.Unmarshal([]byte(ctl("routes", "198.19.10.7", "-o", "json")), &routes); err != nil {
		t.Fatal(err)
	}
	refusedSeen := false
	for _, r := range routes {
		if r.Neighbor.String() == lab.UpstreamAddr && r.Refused == "own_prefix" && r.Prefix == lab.OriginLocal {
			refusedSeen = true
		}
		if r.Installed {
			t.Errorf("ctl routes 198.19.10.7: %+v installed; the FIB must hold no route of the fleet's own prefix", r)
		}
	}
	if !refusedSeen {
		t.Errorf("ctl routes 198.19.10.7: %+v, want the upstream's path refused (own_prefix)", routes)
	}
	routes = nil
	if err := json.Unmarshal([]byte(ctl("routes", "1.1.1.1", "-o", "json")), &routes); err != nil || len(routes) != 1 || !routes[0].Best || !routes[0].Installed ||
		routes[0].Prefix != netip.MustParsePrefix("1.1.1.0/24") {
		t.Errorf("ctl routes 1.1.1.1: %+v (%v): want the upstream's path, best and installed", routes, err)
	}
	var nbs []struct {
		Neighbor   netip.Addr        `json:"neighbor"`
		Received   [2]uint64         `json:"received"`
		Accepted   uint64            `json:"accepted"`
		Refused    map[string]uint64 `json:"refused"`
		Advertised int               `json:"advertised"`
	}
	if err := json.Unmarshal([]byte(ctl("neighbors", "-o", "json")), &nbs); err != nil {
		t.Fatal(err)
	}
	for _, n := range nbs {
		if n.Neighbor.String() == lab.UpstreamAddr {
			// Refusals count since the node started: two sessions, the reset above.
			if want := uint64(len(lab.AllRoutes()) + 1); n.Received[0] != want || n.Accepted != want-1 || n.Refused["own_prefix"] != 2 || n.Advertised != 2 {
				t.Errorf("ctl neighbors, %s: %+v: want %d received, %d accepted, the own prefix refused once per session (2), 2 advertised", lab.UpstreamAddr, n, want, want-1)
			}
		}
	}
	if len(nbs) != 4 {
		t.Errorf("ctl neighbors: %d sessions, want 4 (the upstream's two, the core, the second upstream)", len(nbs))
	}

	if out := ctl("drain", sk.NodeName, "--reason", "test"); !strings.Contains(out, "drained: applied") {
		t.Errorf("ctl drain said %q", out)
	}
	gshut := func(attrs string) string {
		path, comm, _ := strings.Cut(attrs, " comm=")
		if comm == "" {
			return path + " comm=(65535,0)"
		}
		return path + " comm=" + comm + " (65535,0)"
	}
	drainedWant := map[string]map[string]string{}
	for k, v := range changed {
		drainedWant[k] = map[string]string{}
		for p, a := range v {
			if strings.Contains(a, "large=") { // BIRD lists communities before large ones
				head, large, _ := strings.Cut(a, " large=")
				drainedWant[k][p] = gshut(head) + " large=" + large
			} else {
				drainedWant[k][p] = gshut(a)
			}
		}
	}
	waitHolds("every announcement with GRACEFUL_SHUTDOWN", drainedWant, 30*time.Second)
	var rows []struct {
		Node         string `json:"node"`
		PolicyHash   string `json:"policy_hash"`
		PolicyAgrees bool   `json:"policy_agrees"`
		Drained      bool   `json:"drained"`
	}
	if err := json.Unmarshal([]byte(ctl("status", "-o", "json")), &rows); err != nil || len(rows) != 1 || !rows[0].Drained || len(rows[0].PolicyHash) != 12 || !rows[0].PolicyAgrees {
		t.Errorf("ctl status: %+v (%v): want the node drained, with its policy hash", rows, err)
	}
	ctl("undrain", sk.NodeName)
	waitHolds("GRACEFUL_SHUTDOWN gone after undrain", changed, 30*time.Second)
	for _, s := range status(t, sk).Sessions {
		if s.Neighbor.String() == lab.Upstream2Addr && !s.Established.Equal(up2Since) {
			t.Errorf("up2's session started again (%v, was %v): a drain must keep it", s.Established, up2Since)
		}
	}

	// The dataplane detached from one port: every prefix withdrawn after the hold-down.
	var id uint32
	for _, i := range status(t, sk).Interfaces {
		if i.Name == sk.If("r0") {
			id = i.XDPLink
		}
	}
	l, err := link.NewFromID(link.ID(id))
	if err != nil {
		t.Fatalf("the node's XDP link on r0 (id %d): %v", id, err)
	}
	defer l.Close()
	if err := l.Detach(); err != nil {
		t.Fatalf("detach the node's XDP link: %v", err)
	}
	detached := time.Now()
	time.Sleep(lab.AnnounceHoldDown / 2)
	if got, err := state(); err != nil || !equal(got, changed) {
		t.Fatalf("half the hold-down after the detach, the upstreams hold %v (%v): want everything still announced", got, err)
	}
	empty := map[string]map[string]string{"up1 node": {}, "up1 node6": {}, "up2 node": {}}
	waitHolds("every prefix withdrawn after the hold-down", empty, lab.AnnounceHoldDown+30*time.Second)
	if d := time.Since(detached); d < lab.AnnounceHoldDown {
		t.Errorf("withdrawn %v after the detach, before the hold-down (%v)", d, lab.AnnounceHoldDown)
	}
	for _, i := range status(t, sk).Interfaces {
		if i.Name == sk.If("r0") && i.Attached {
			t.Errorf("r0 reported attached after its link was detached: %+v", i)
		}
	}
}

// status reads the node's /api/v1/status.
func status(t *testing.T, sk *lab.Skeleton) nodeapi.Status {
	t.Helper()
	st, err := apiGet[nodeapi.Status](sk.Get, "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	return st
}
