package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigFileAndFlags(t *testing.T) {
	p := writeConfig(t, `
node_name: r1
interfaces: [eth0, eth1]
bgp:
  asn: 65000
  router_id: 192.0.2.1
  neighbors:
    - {address: 192.0.2.2, asn: 65001, max_prefixes: 1200000, expected_prefixes: 1000000}
fib:
  groups_v4: 32768
`)
	cfg, err := loadConfig([]string{"-config", p, "-interfaces", "eth2, eth3", "-xdp-mode", "generic", "-bgp-listen-port", "-1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeName != "r1" || cfg.FIB.GroupsV4 != 32768 || cfg.BGP.ASN != 65000 {
		t.Errorf("file values lost: %+v", cfg)
	}
	if strings.Join(cfg.Interfaces, ",") != "eth2,eth3" || cfg.XDPMode != "generic" || cfg.BGP.ListenPort != -1 {
		t.Errorf("flags did not override the file: %+v", cfg)
	}
	if cfg.HTTPAddress != "127.0.0.1:9464" || cfg.BGP.GRPCAddress != "" {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	b, err := cfg.bgpConfig()
	if err != nil || len(b.Neighbors) != 1 || b.Neighbors[0].MaxPrefixes != 1200000 || b.Neighbors[0].ExpectedPrefixes != 1000000 {
		t.Errorf("bgp config %+v, %v", b, err)
	}
}

func TestConfigErrorsSayWhatToDo(t *testing.T) {
	p := writeConfig(t, `
node_name: "a/b"
xdp_mode: turbo
log_level: loud
fib: {groups_v4: 0, lines_v4: 3, retry_interval: 0s, backend: kernel, kernel_sync: false}
cache: {mode: auto, min_entries: 4096, max_entries: 1000, interval: 1ms}
cluster: {mesh: {resend_after: -1s, alarm_after: 500ms}}
bgp:
  asn: 65000
  router_id: 192.0.2.1
  grpc_address: 0.0.0.0:50051
  neighbors:
    - {address: not-an-ip, asn: 1}
    - {address: 192.0.2.7, asn: 1, password_file: /nonexistent/md5, ttl_security: true, multihop_ttl: 2, max_prefix_restart: 1m, bfd: {interval: 300ms}}
    - {address: 192.0.2.8, asn: 1, bfd: {interval: 1ms}}
    - {address: 192.0.2.9, asn: 1, bfd: {multiplier: 60}}
`)
	_, err := loadConfig([]string{"-config", p})
	if err == nil {
		t.Fatal("a bad config was accepted")
	}
	for _, want := range []string{`bgp.grpc_address "0.0.0.0:50051": GoBGP's API changes routes without credentials`, "bgp.neighbors[1].password_file: open /nonexistent/md5",
		"bgp.neighbors[1].bfd: BFD here is single hop", "bgp.neighbors[2].bfd.interval 1ms: use 10ms to 10s", "bgp.neighbors[3].bfd.multiplier 60: use 1 to 50"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	for _, want := range []string{`node_name: name "a/b"`, "interfaces: list at least one", `xdp_mode "turbo": use native`, `log_level "loud"`,
		"fib.groups_v4 0", "fib.lines_v4 3", "fib.retry_interval", "fib.backend kernel looks routes up in the kernel", `bgp.neighbors[0].address "not-an-ip"`,
		"cache.max_entries 1000: use a power of two", "cache.min_entries 4096 is above cache.max_entries 1000", "cache.interval 1ms", "cluster.mesh.resend_after -1s", "cluster.mesh.alarm_after 500ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestConfigUnknownField(t *testing.T) {
	p := writeConfig(t, "node_name: r1\ninterfaces: [eth0]\nbgp: {asn: 1, router_id: 192.0.2.1, neighbours: []}\n")
	_, err := loadConfig([]string{"-config", p})
	if err == nil || !strings.Contains(err.Error(), "neighbours") {
		t.Fatalf("a misspelt field was not reported: %v", err)
	}
}

func TestConfigStrayArguments(t *testing.T) {
	if _, err := loadConfig([]string{"eth0"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Fatalf("a stray argument was not reported: %v", err)
	}
}

// TestConfigDir: with -config-dir (a Helm chart's ConfigMap) a node reads its own
// file, node.<name>.yaml, else the fleet's; flags still win; -config with it is refused.
func TestConfigDir(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"fleet.yaml":       "interfaces: [eth0]\nbgp: {asn: 65000, router_id: 192.0.2.1, neighbors: [{address: 192.0.2.5, asn: 64501}]}\nfib: {groups_v4: 32768}\ncache: {mode: fixed, entries_v4: 4096}\n",
		"node.edge-1.yaml": "interfaces: [ens1]\nbgp: {router_id: 192.0.2.11, neighbors: [{address: 192.0.2.9, asn: 64500}]}\nfib: {lines_v4: 4096}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := loadConfig([]string{"-config-dir", dir, "-node-name", "edge-1", "-mesh-address", "10.0.0.1", "-check"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.files, []string{filepath.Join(dir, "fleet.yaml"), filepath.Join(dir, "node.edge-1.yaml")}) || !cfg.checkOnly {
		t.Errorf("edge-1 read %v, want fleet.yaml then its own", cfg.files)
	}
	// The node's file overlays the fleet's field by field; a list is replaced whole.
	if cfg.Interfaces[0] != "ens1" || cfg.BGP.RouterID != "192.0.2.11" || cfg.BGP.ASN != 65000 || len(cfg.BGP.Neighbors) != 1 || cfg.BGP.Neighbors[0].Address != "192.0.2.9" ||
		cfg.FIB.LinesV4 != 4096 || cfg.FIB.GroupsV4 != 32768 || cfg.Cache.Mode != "fixed" || cfg.Cache.EntriesV4 != 4096 {
		t.Errorf("edge-1's config is not the fleet's overlaid by its own: %+v", cfg)
	}
	if cfg.Cluster.Mesh.Address != "10.0.0.1" || cfg.Cluster.Gossip.Address != "10.0.0.1:7946" {
		t.Errorf("-mesh-address: mesh %q, gossip %q; want 10.0.0.1 and gossip on it", cfg.Cluster.Mesh.Address, cfg.Cluster.Gossip.Address)
	}
	cfg, err = loadConfig([]string{"-config-dir", dir, "-node-name", "edge-2"})
	if err != nil || !slices.Equal(cfg.files, []string{filepath.Join(dir, "fleet.yaml")}) || cfg.Interfaces[0] != "eth0" || cfg.BGP.Neighbors[0].Address != "192.0.2.5" {
		t.Errorf("edge-2 read %v (%v), want fleet.yaml alone", cfg.files, err)
	}
	if _, err := loadConfig([]string{"-config-dir", dir, "-config", filepath.Join(dir, "fleet.yaml")}); err == nil || !strings.Contains(err.Error(), "give one of them") {
		t.Errorf("-config with -config-dir: %v, want a refusal", err)
	}
	if _, err := loadConfig([]string{"-config-dir", t.TempDir(), "-node-name", "edge-1"}); err == nil || !strings.Contains(err.Error(), "neither fleet.yaml nor node.edge-1.yaml") {
		t.Errorf("an empty directory: %v, want an error naming fleet.yaml", err)
	}
}

// TestConfigPolicyErrors: the routing policy's mistakes, all named at once: the
// fleet's prefixes (bad, with host bits, twice, without reaches), exports (a prefix
// not originated, bad communities, too many prepends), prefix lists, import rules on
// a neighbour whose filter is off, bad import communities; and a good one read whole.
func TestConfigPolicyErrors(t *testing.T) {
	p := writeConfig(t, `
interfaces: [eth0]
bgp:
  asn: 65000
  router_id: 192.0.2.1
  originate:
    hold_down: -1s
    prefixes:
      - {prefix: 203.0.113.0/24, reaches: route}
      - {prefix: 203.0.113.1/24, reaches: local}
      - {prefix: 203.0.113.0/24, reaches: route}
      - {prefix: nonsense, reaches: local}
      - {prefix: 198.51.100.0/24}
  neighbors:
    - address: 192.0.2.2
      asn: 64512
      export: {prefixes: [192.0.2.0/24], communities: ["1:2:3"], large_communities: ["1:2"], prepend: 11}
      import: {prefix_list: ["10.0.0.0/8 le 4", "x"], communities: ["65536:1"]}
    - address: 192.0.2.3
      asn: 65000
      import: {origin_asns: [15169]}
rpki:
  validators: ["192.0.2.9:8282"]
  invalid: demote
  invalid_local_pref: 40
`)
	_, err := loadConfig([]string{"-config", p})
	if err == nil {
		t.Fatal("a bad routing policy was accepted")
	}
	for _, want := range []string{"bgp.originate.hold_down -1s", "bgp.originate.prefixes[1].prefix 203.0.113.1/24 has host bits set: write 203.0.113.0/24",
		"bgp.originate.prefixes[2].prefix 203.0.113.0/24 is listed twice", `bgp.originate.prefixes[3].prefix "nonsense"`, `bgp.originate.prefixes[4].reaches ""`,
		"export prefix 192.0.2.0/24 is not one the node originates", `community "1:2:3"`, `large community "1:2"`, "prepend 11",
		`bgp.neighbors[0].import.prefix_list "10.0.0.0/8 le 4": the length after le must be from 8 to 32`, `bgp.neighbors[0].import.prefix_list "x"`,
		`bgp.neighbors[0].import: community "65536:1"`, "bgp.neighbors[1].import: prefix_list, origin_asns and deny_asns are import rules, and the filter is off",
		`rpki.invalid "demote": use reject (default), lower or mark`, "rpki.invalid_local_pref 40: it is the local preference of invalid routes with invalid: lower"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}

	good := writeConfig(t, `
interfaces: [eth0]
bgp:
  asn: 65000
  router_id: 192.0.2.1
  originate: {prefixes: [{prefix: 203.0.113.0/24, reaches: route}]}
  neighbors:
    - address: 192.0.2.2
      asn: 64512
      export: {prefixes: [203.0.113.0/24], med: 0}
      import: {prefix_list: ["8.8.4.0/22 le 24"], origin_asns: [15169], local_pref: 150, communities: ["65000:1"]}
`)
	cfg, err := loadConfig([]string{"-config", good})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.bgpConfig()
	if err != nil {
		t.Fatal(err)
	}
	n := b.Neighbors[0]
	if n.Export == nil || !n.Export.HasMED || n.Export.MED != 0 || n.Import == nil || len(n.Import.Prefixes) != 1 || n.Import.Prefixes[0].MaxLength != 24 ||
		n.ImportActions == nil || n.ImportActions.LocalPref != 150 || len(b.Originated) != 1 {
		t.Errorf("read %+v, export %+v, import %+v, actions %+v", b, n.Export, n.Import, n.ImportActions)
	}
}

// TestPolicyHash: nodes whose upstreams differ only in address (and order) run the
// same policy; a changed rule, export or originated prefix is another policy.
func TestPolicyHash(t *testing.T) {
	read := func(neighbors, originate string) string {
		t.Helper()
		cfg, err := loadConfig([]string{"-config", writeConfig(t, "interfaces: [eth0]\nbgp:\n  asn: 65000\n  router_id: 192.0.2.1\n  neighbors:\n"+neighbors+originate)})
		if err != nil {
			t.Fatal(err)
		}
		return cfg.policyHash()
	}
	const orig = "  originate: {prefixes: [{prefix: 203.0.113.0/24, reaches: route}]}\n"
	a := read("    - {address: 192.0.2.2, asn: 64512, export: {prefixes: [203.0.113.0/24]}}\n    - {address: 10.0.0.1, asn: 65000}\n", orig)
	for what, want := range map[string]struct {
		neighbors, originate string
		same                 bool
	}{
		"other addresses, other order": {"    - {address: 10.9.0.1, asn: 65000}\n    - {address: 198.51.100.2, asn: 64999, export: {prefixes: [203.0.113.0/24]}}\n", orig, true},
		"an import rule":               {"    - {address: 192.0.2.2, asn: 64512, export: {prefixes: [203.0.113.0/24]}, import: {private_asns: true}}\n    - {address: 10.0.0.1, asn: 65000}\n", orig, false},
		"an export":                    {"    - {address: 192.0.2.2, asn: 64512, export: {prefixes: [203.0.113.0/24], prepend: 1}}\n    - {address: 10.0.0.1, asn: 65000}\n", orig, false},
		"the fleet's prefixes":         {"    - {address: 192.0.2.2, asn: 64512, export: {prefixes: [203.0.113.0/24]}}\n    - {address: 10.0.0.1, asn: 65000}\n", orig + "  # and a hold-down\n", true},
		"a hold-down":                  {"    - {address: 192.0.2.2, asn: 64512, export: {prefixes: [203.0.113.0/24]}}\n    - {address: 10.0.0.1, asn: 65000}\n", "  originate: {hold_down: 1m, prefixes: [{prefix: 203.0.113.0/24, reaches: route}]}\n", false},
	} {
		if got := read(want.neighbors, want.originate); (got == a) != want.same {
			t.Errorf("%s: hash %s against %s, want same=%v", what, got, a, want.same)
		}
	}
	if len(a) != 12 {
		t.Errorf("hash %q: want 12 hex digits", a)
	}
}

// TestConfigPlainHTTPEtcd: etcd over plain HTTP off this host (endpoints, or the
// embedded etcd's listen) is refused, in one line that says what to do, unless
// cluster.etcd.insecure says so; the loopback and unix sockets need nothing.
func TestConfigPlainHTTPEtcd(t *testing.T) {
	const head = "node_name: n1\ninterfaces: [eth0]\nbgp: {asn: 65000, router_id: 192.0.2.1}\n"
	for _, tc := range []struct {
		cluster, want string // want "": valid
	}{
		{"{etcd: {endpoints: [http://192.0.2.50:2379]}}",
			`invalid configuration: cluster.etcd: etcd endpoint "http://192.0.2.50:2379" is plain HTTP off this host: whoever reaches it can change the fleet's policy, drains and blackholes without credentials; use https:// with a client certificate (ca, cert, key), or say insecure: true`},
		{"{etcd: {endpoints: [http://192.0.2.50:2379], insecure: true}}", ""},
		{"{etcd: {endpoints: [http://127.0.0.1:2379, http://localhost:2379, unix:///run/etcd.sock]}}", ""},
		{"{embedded: {listen: http://0.0.0.0:2379}}",
			`invalid configuration: cluster.embedded.listen "http://0.0.0.0:2379" is plain HTTP off this host: whoever reaches it can change the fleet's policy, drains and blackholes without credentials; listen on unix:///path or a loopback address (http://127.0.0.1:2379), or say cluster.etcd.insecure: true`},
		{"{embedded: {listen: http://0.0.0.0:2379}, etcd: {insecure: true}}", ""},
		{"{embedded: {listen: http://127.0.0.1:2379}}", ""},
		// With endpoints the embedded etcd does not run: its listen does not matter.
		{"{embedded: {listen: http://0.0.0.0:2379}, etcd: {endpoints: [unix:///run/etcd.sock]}}", ""},
	} {
		cfg, err := loadConfig([]string{"-config", writeConfig(t, head+"cluster: "+tc.cluster+"\n")})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("cluster %s: %v, want it valid", tc.cluster, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("cluster %s:\n got %v\nwant %s", tc.cluster, err, tc.want)
		case tc.want == "" && strings.Contains(tc.cluster, "insecure") && !cfg.Cluster.etcdConfig().Insecure:
			t.Errorf("cluster %s: insecure not passed to the etcd client", tc.cluster)
		}
	}
}

// TestConfigErrorLines: one error is one line; several are one line each under
// "invalid configuration:", a joined error (the etcd section's) split into its own.
func TestConfigErrorLines(t *testing.T) {
	_, err := loadConfig([]string{"-config", writeConfig(t, "node_name: n1\nbgp: {asn: 65000, router_id: 192.0.2.1}\n")})
	if want := "invalid configuration: interfaces: list at least one interface to forward on (-interfaces eth0,eth1)"; err == nil || err.Error() != want {
		t.Errorf("one error: %q, want %q", err, want)
	}
	_, err = loadConfig([]string{"-config", writeConfig(t, "node_name: n1\nlog_level: loud\ncluster: {etcd: {endpoints: [10.0.0.1:2379, http://10.0.0.2:2379]}}\nbgp: {asn: 65000, router_id: 192.0.2.1}\n")})
	if err == nil {
		t.Fatal("a bad config was accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 5 || lines[0] != "invalid configuration:" {
		t.Fatalf("four errors: %d lines, want the heading and four:\n%v", len(lines), err)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
			t.Errorf("line %q: want it indented by two spaces", l)
		}
	}
	if !strings.HasPrefix(lines[3], `  cluster.etcd: etcd endpoint "10.0.0.1:2379"`) || !strings.HasPrefix(lines[4], `  cluster.etcd: etcd endpoint "http://10.0.0.2:2379" is plain HTTP`) {
		t.Errorf("the etcd section's errors are not one line each, named:\n%v", err)
	}
}

// TestVersionFlag: -version reads no configuration (there may be none).
func TestVersionFlag(t *testing.T) {
	cfg, err := loadConfig([]string{"-version", "-config", "/nonexistent/node.yaml"})
	if err != nil || !cfg.showVersion {
		t.Errorf("-version: %v, show %v; want the version shown and nothing read", err, cfg.showVersion)
	}
}
