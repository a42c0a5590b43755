package k8s

import (
	"bytes"
	"cmp"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/kubesetup"
	"github.com/fibfleet/fibfleet/pki"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// helmModule is the Helm the tests run, from the Go module proxy (built once per
// test binary: about 2.5 minutes the first time on this machine, seconds after).
const helmModule = "helm.sh/helm/v4/cmd/helm@v4.3.2"

var (
	buildOnce sync.Once
	toolDir   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if toolDir != "" {
		os.RemoveAll(toolDir)
	}
	os.Exit(code)
}

// toolset is what the tests run: helm (from the module proxy), and from this tree the
// node (to check the configuration files the chart renders), ctl and etcd (the
// server module go.mod names as a tool: the bundled etcd's command line is run with
// it).
type toolset struct {
	helm, node, ctl, etcd string
}

// tools builds the toolset once per test binary into a temporary directory.
func tools(t *testing.T) toolset {
	t.Helper()
	buildOnce.Do(func() {
		if toolDir, buildErr = os.MkdirTemp("", "fibfleet-k8s-tools-"); buildErr != nil {
			return
		}
		t.Logf("building %s, the node, ctl and etcd (the first helm build takes minutes)", helmModule)
		cmd := exec.Command("go", "install", helmModule)
		cmd.Env = append(os.Environ(), "GOBIN="+toolDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go install %s: %w\n%s", helmModule, err, out)
			return
		}
		for name, pkg := range map[string]string{"node": "github.com/fibfleet/fibfleet/cmd/node", "ctl": "github.com/fibfleet/fibfleet/cmd/ctl", "etcd": "go.etcd.io/etcd/server/v3"} {
			if out, err := exec.Command("go", "build", "-o", filepath.Join(toolDir, name), pkg).CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return toolset{helm: filepath.Join(toolDir, "helm"), node: filepath.Join(toolDir, "node"), ctl: filepath.Join(toolDir, "ctl"), etcd: filepath.Join(toolDir, "etcd")}
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// rendered is what helm template produced, decoded strictly into the API types.
type rendered struct {
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	services        map[string]*corev1.Service
	serviceAccounts map[string]*corev1.ServiceAccount
	daemonSets      []*appsv1.DaemonSet
	statefulSets    []*appsv1.StatefulSet
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
	// jobs are the hook jobs, by their component label (setup, etcd-auth).
	jobs         map[string]*batchv1.Job
	roles        []*rbacv1.Role
	roleBindings []*rbacv1.RoleBinding
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode splits helm template's output and decodes every document strictly (an
// unknown or misplaced field, a duplicate key or a wrong type fails) into the type
// of its apiVersion and kind; a kind the chart should not render fails too.
func decode(t *testing.T, out []byte) rendered {
	t.Helper()
	r := rendered{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, serviceAccounts: map[string]*corev1.ServiceAccount{}, jobs: map[string]*batchv1.Job{}}
	for _, doc := range docSep.Split(string(out), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document does not parse: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue // comments only
		}
		kind := head.APIVersion + " " + head.Kind
		switch kind {
		case "v1 ConfigMap":
			o := strictly[corev1.ConfigMap](t, kind, doc)
			r.configMaps[o.Name] = o
		case "v1 Secret":
			o := strictly[corev1.Secret](t, kind, doc)
			r.secrets[o.Name] = o
		case "v1 Service":
			o := strictly[corev1.Service](t, kind, doc)
			r.services[o.Name] = o
		case "v1 ServiceAccount":
			o := strictly[corev1.ServiceAccount](t, kind, doc)
			r.serviceAccounts[o.Name] = o
		case "apps/v1 DaemonSet":
			r.daemonSets = append(r.daemonSets, strictly[appsv1.DaemonSet](t, kind, doc))
		case "apps/v1 StatefulSet":
			r.statefulSets = append(r.statefulSets, strictly[appsv1.StatefulSet](t, kind, doc))
		case "policy/v1 PodDisruptionBudget":
			r.pdbs = append(r.pdbs, strictly[policyv1.PodDisruptionBudget](t, kind, doc))
		case "monitoring.coreos.com/v1 ServiceMonitor":
			r.serviceMonitors = append(r.serviceMonitors, strictly[monitoringv1.ServiceMonitor](t, kind, doc))
		case "batch/v1 Job":
			o := strictly[batchv1.Job](t, kind, doc)
			r.jobs[o.Labels["app.kubernetes.io/component"]] = o
		case "rbac.authorization.k8s.io/v1 Role":
			r.roles = append(r.roles, strictly[rbacv1.Role](t, kind, doc))
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			r.roleBindings = append(r.roleBindings, strictly[rbacv1.RoleBinding](t, kind, doc))
		default:
			t.Fatalf("unexpected %s %s in the rendered chart", head.APIVersion, head.Kind)
		}
	}
	return r
}

// strictly decodes one document into a T: an unknown or misplaced field, a
// duplicate key or a wrong type fails.
func strictly[T any](t *testing.T, kind, doc string) *T {
	t.Helper()
	var o T
	if err := yaml.UnmarshalStrict([]byte(doc), &o); err != nil {
		t.Fatalf("%s: strict decoding: %v\n%s", kind, err, doc)
	}
	return &o
}

// chartDir is the chart in this tree (the test runs in deploy/k8s).
const chartDir = "fibfleet"

// secured are values the examples do not show: the node API over HTTPS with client
// certificates, TCP-MD5 passwords from Secrets (in the fleet's settings and a
// router's), the memory formula with one table.
const secured = `
httpTLS:
  secretName: fibfleet-api-tls
  clientAuth: true
config:
  bgp:
    asn: 65000
    neighbors:
      - address: 192.0.2.1
        asn: 64500
        passwordSecret: {name: transit-md5, key: md5}
nodes:
  edge-2:
    bgp:
      neighbors:
        - address: 198.51.100.1
          asn: 64501
          passwordSecret: {name: edge-2.peer-md5}
        - address: 198.51.100.5
          asn: 64505
          passwordSecret: {name: transit-md5, key: md5}
daemonset:
  memory: {tables: 1, meshPeers: 0}
serviceMonitor:
  enabled: true
  tlsConfig:
    ca: {secret: {name: prom-ca, key: ca.crt}}
`

// valueSets are the default values, every example values file, and secured.
func valueSets(t *testing.T) map[string][]string {
	sets := map[string][]string{"default": nil}
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example values files (%v)", err)
	}
	for _, f := range files {
		sets[strings.TrimSuffix(filepath.Base(f), ".yaml")] = []string{"-f", f}
	}
	f := filepath.Join(t.TempDir(), "secured.yaml")
	if err := os.WriteFile(f, []byte(secured), 0o600); err != nil {
		t.Fatal(err)
	}
	sets["secured"] = []string{"-f", f}
	return sets
}

// TestChart lints and renders the chart with the default values and each example,
// decodes what it renders strictly into the Kubernetes API types, checks the node
// DaemonSet's security context, volumes and probes and how the objects refer to each
// other, runs the setup job's own code on its rendered arguments and mounts what it
// makes (and the Secrets the values name) where the pods mount them, and has the
// node binary validate every configuration file it renders from there: every file a
// router's configuration or its ctl names is where a mounted Secret puts it.
func TestChart(t *testing.T) {
	tl := tools(t)
	for name, args := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			run(t, tl.helm, append([]string{"lint", "--strict", chartDir}, args...)...)
			out := run(t, tl.helm, append([]string{"template", "edge", chartDir, "--namespace", "routers"}, args...)...)
			r := decode(t, out)
			vals := values(t, args)
			made := checkSetup(t, r, vals)
			checkDaemonSet(t, r, vals)
			checkConfig(t, r, vals, made, tl.node)
			checkEtcd(t, r, vals, made)
			checkMonitoring(t, r, vals)
			checkNames(t, r)
		})
	}
}

// chartValues is the part of the values the assertions need.
type chartValues struct {
	ClusterName string         `json:"clusterName"`
	Config      map[string]any `json:"config"`
	Nodes       map[string]any `json:"nodes"`
	Etcd        struct {
		Bundled struct {
			Enabled  bool `json:"enabled"`
			Replicas int  `json:"replicas"`
		} `json:"bundled"`
		External struct {
			Endpoints      []string `json:"endpoints"`
			TLSSecret      string   `json:"tlsSecret"`
			Username       string   `json:"username"`
			PasswordSecret string   `json:"passwordSecret"`
			Insecure       bool     `json:"insecure"`
		} `json:"external"`
	} `json:"etcd"`
	Gossip struct {
		ExistingSecret string `json:"existingSecret"`
	} `json:"gossip"`
	HTTPTLS struct {
		SecretName string `json:"secretName"`
		ClientAuth bool   `json:"clientAuth"`
	} `json:"httpTLS"`
	Daemonset struct {
		NodeSelector map[string]string `json:"nodeSelector"`
		Tolerations  []map[string]any  `json:"tolerations"`
		Memory       struct {
			Tables    int `json:"tables"`
			MeshPeers int `json:"meshPeers"`
		} `json:"memory"`
		Resources corev1.ResourceRequirements `json:"resources"`
	} `json:"daemonset"`
	ServiceMonitor struct {
		Enabled bool `json:"enabled"`
	} `json:"serviceMonitor"`
	PodDisruptionBudget struct {
		Enabled bool `json:"enabled"`
	} `json:"podDisruptionBudget"`
	GrafanaDashboard struct {
		Enabled bool `json:"enabled"`
	} `json:"grafanaDashboard"`
}

// userSecrets are the Secrets the values name for the operator to make, with the
// keys the chart's README says each holds.
func userSecrets(v chartValues) map[string][]string {
	out := map[string][]string{}
	if v.Gossip.ExistingSecret != "" {
		out[v.Gossip.ExistingSecret] = []string{"key"}
	}
	if ext := v.Etcd.External; !v.Etcd.Bundled.Enabled {
		if ext.TLSSecret != "" {
			out[ext.TLSSecret] = []string{"ca.crt", "tls.crt", "tls.key"}
		}
		if ext.Username != "" {
			out[ext.PasswordSecret] = []string{"password"}
		}
	}
	if v.HTTPTLS.SecretName != "" {
		out[v.HTTPTLS.SecretName] = []string{"ca.crt", "tls.crt", "tls.key"}
	}
	cfgs := []any{v.Config}
	for _, n := range v.Nodes {
		cfgs = append(cfgs, n)
	}
	for _, c := range cfgs {
		for _, n := range neighbors(c) {
			if ps, ok := n["passwordSecret"].(map[string]any); ok {
				key, _ := ps["key"].(string)
				out[ps["name"].(string)] = append(out[ps["name"].(string)], cmp.Or(key, "password"))
			}
		}
	}
	return out
}

// neighbors are a configuration's bgp.neighbors.
func neighbors(cfg any) []map[string]any {
	c, _ := cfg.(map[string]any)
	b, _ := c["bgp"].(map[string]any)
	ns, _ := b["neighbors"].([]any)
	var out []map[string]any
	for _, n := range ns {
		if m, ok := n.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// values reads the chart's defaults with the example (if any) over them, as helm
// merges maps (a list in the example replaces the default's).
func values(t *testing.T, args []string) chartValues {
	t.Helper()
	read := func(p string) map[string]any {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read(filepath.Join(chartDir, "values.yaml"))
	if len(args) == 2 {
		merge(m, read(args[1]))
	}
	raw, _ := yaml.Marshal(m)
	var v chartValues
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func checkDaemonSet(t *testing.T, r rendered, v chartValues) {
	if len(r.daemonSets) != 1 {
		t.Fatalf("%d DaemonSets, want 1", len(r.daemonSets))
	}
	ds := r.daemonSets[0]
	pod := ds.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("DaemonSet selector %v does not select its pods' labels %v (%v)", ds.Spec.Selector, ds.Spec.Template.Labels, err)
	}
	// One router at a time.
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 1 ||
		ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("update strategy %+v, want a rolling update with maxUnavailable 1 and no surge", ds.Spec.UpdateStrategy)
	}
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %q: want the host's network and cluster DNS from it", pod.HostNetwork, pod.DNSPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token; the node calls no Kubernetes API")
	}
	if sa := r.serviceAccounts[pod.ServiceAccountName]; sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("service account %q: not rendered or mounting its token", pod.ServiceAccountName)
	}
	if !maps.Equal(pod.NodeSelector, v.Daemonset.NodeSelector) {
		t.Errorf("node selector %v, want %v", pod.NodeSelector, v.Daemonset.NodeSelector)
	}
	if len(pod.Tolerations) != len(v.Daemonset.Tolerations) {
		t.Errorf("%d tolerations, want %d", len(pod.Tolerations), len(v.Daemonset.Tolerations))
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Security: root with only the capabilities the node needs.
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("the node container has no security context with capabilities")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the node container is privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the root filesystem is writable")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Error("runAsUser is not 0: added capabilities reach the effective set of UID 0 only")
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities dropped %v, want [ALL]", sc.Capabilities.Drop)
	}
	add := slices.Clone(sc.Capabilities.Add)
	slices.Sort(add)
	var want []corev1.Capability
	for _, c := range NodeCapabilities {
		want = append(want, corev1.Capability(c))
	}
	if !slices.Equal(add, want) {
		t.Errorf("capabilities added %v, want exactly %v", add, want)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod does not run under the runtime's default seccomp profile")
	}

	// Volumes: bpffs from the host (the only hostPath), configuration and gossip
	// key from objects the chart renders or names.
	vols := map[string]corev1.Volume{}
	for _, vol := range pod.Volumes {
		vols[vol.Name] = vol
		if vol.HostPath != nil && vol.Name != "bpffs" {
			t.Errorf("volume %s mounts host path %s; only bpffs should", vol.Name, vol.HostPath.Path)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("mount %s: no such volume", m.Name)
		}
		mounts[m.Name] = m
	}
	if b := vols["bpffs"]; b.HostPath == nil || b.HostPath.Path != "/sys/fs/bpf" || b.HostPath.Type == nil || *b.HostPath.Type != corev1.HostPathDirectory {
		t.Errorf("bpffs volume %+v, want the host's /sys/fs/bpf directory", b.VolumeSource)
	}
	if m := mounts["bpffs"]; m.MountPath != "/sys/fs/bpf" || m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationHostToContainer || m.ReadOnly {
		t.Errorf("bpffs mount %+v, want /sys/fs/bpf, writable, propagation HostToContainer", m)
	}
	if cm := vols["config"].ConfigMap; cm == nil || r.configMaps[cm.Name] == nil {
		t.Errorf("config volume %+v names no rendered ConfigMap", vols["config"].VolumeSource)
	}
	sec := vols["gossip-key"].Secret
	if want := gossipSecret(r, v); sec == nil || sec.SecretName != want || want == "" {
		t.Errorf("gossip key volume %+v, want Secret %q (existingSecret, or the setup job's)", vols["gossip-key"].VolumeSource, want)
	}
	tlsVol, ctlVol, authVol := vols["etcd-tls"].Secret, vols["etcd-ctl"].Secret, vols["etcd-auth"].Secret
	ext := v.Etcd.External
	switch {
	case v.Etcd.Bundled.Enabled:
		if tlsVol == nil || ctlVol == nil || authVol != nil || mounts["etcd-tls"].MountPath != "/etc/fibfleet/etcd-tls" {
			t.Errorf("bundled etcd: the node's and ctl's certificates not mounted (etcd-tls %+v, etcd-ctl %+v), or a password (%+v)", tlsVol, ctlVol, authVol)
		}
	case ext.TLSSecret != "":
		if tlsVol == nil || tlsVol.SecretName != ext.TLSSecret || mounts["etcd-tls"].MountPath != "/etc/fibfleet/etcd-tls" {
			t.Errorf("etcd TLS Secret %q not mounted at /etc/fibfleet/etcd-tls (volume %+v)", ext.TLSSecret, tlsVol)
		}
	default:
		if tlsVol != nil || ctlVol != nil {
			t.Error("etcd certificate volumes without an etcd asking for them")
		}
	}
	if !v.Etcd.Bundled.Enabled && ext.Username != "" {
		if authVol == nil || authVol.SecretName != ext.PasswordSecret {
			t.Errorf("etcd password Secret %q not mounted (volume %+v)", ext.PasswordSecret, authVol)
		}
	} else if authVol != nil {
		t.Error("an etcd password volume without a username")
	}
	// The neighbours' password Secrets: each mounted whole (a subPath is never
	// updated by the kubelet), read-only, where the configuration points.
	for name, keys := range userSecrets(v) {
		if !slices.Contains(keys, "md5") && !slices.Contains(keys, "password") || name == ext.PasswordSecret {
			continue
		}
		var found bool
		for _, vol := range pod.Volumes {
			if vol.Secret != nil && vol.Secret.SecretName == name {
				for _, m := range c.VolumeMounts {
					if m.Name == vol.Name {
						found = m.MountPath == "/etc/fibfleet/secrets/"+name && m.ReadOnly && m.SubPath == ""
					}
				}
			}
		}
		if !found {
			t.Errorf("password Secret %s not mounted whole and read-only at /etc/fibfleet/secrets/%s", name, name)
		}
	}

	// Memory: from the formula unless the values give it.
	req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
	wantReq := resource.MustParse(fmt.Sprintf("%dMi", 768+512*v.Daemonset.Memory.Tables+256*v.Daemonset.Memory.MeshPeers))
	wantLim := resource.MustParse(fmt.Sprintf("%dMi", (768+512*v.Daemonset.Memory.Tables+256*v.Daemonset.Memory.MeshPeers)*3/2))
	if q, ok := v.Daemonset.Resources.Requests[corev1.ResourceMemory]; ok {
		wantReq = q
	}
	if q, ok := v.Daemonset.Resources.Limits[corev1.ResourceMemory]; ok {
		wantLim = q
	}
	if req.Cmp(wantReq) != 0 || lim.Cmp(wantLim) != 0 || req.Cmp(*lim) > 0 {
		t.Errorf("memory request %v, limit %v; want %v and %v", req, lim, &wantReq, &wantLim)
	}
	// The README's figures for the default (3 tables, 2 mesh peers): 2.75 GiB, and
	// half as much again.
	if v.Daemonset.Memory.Tables == 3 && v.Daemonset.Memory.MeshPeers == 2 && v.Daemonset.Resources.Requests.Memory().IsZero() &&
		(req.String() != "2816Mi" || lim.String() != "4224Mi") {
		t.Errorf("memory for 3 tables and 2 mesh peers: request %v, limit %v; the README says 2.75 GiB (2816Mi) and 4224Mi", req, lim)
	}

	// Probes: on the declared metrics port; liveness and startup on /healthz,
	// readiness on /readyz (the node holds its upstreams' tables).
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := "/healthz"
		if name == "readiness" {
			want = "/readyz"
		}
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s probe: none, or not HTTP", name)
			continue
		}
		if pr.HTTPGet.Path != want || ports[pr.HTTPGet.Port.String()] == 0 {
			t.Errorf("%s probe GET %s on port %q, want %s on a declared port", name, pr.HTTPGet.Path, pr.HTTPGet.Port.String(), want)
		}
		// The node serves HTTPS with httpTLS: so do the probes.
		if scheme := map[bool]corev1.URIScheme{true: corev1.URISchemeHTTPS, false: corev1.URISchemeHTTP}[v.HTTPTLS.SecretName != ""]; pr.HTTPGet.Scheme != scheme {
			t.Errorf("%s probe scheme %q, want %q", name, pr.HTTPGet.Scheme, scheme)
		}
	}
	if !slices.Contains(c.Args, fmt.Sprintf("-http-address=$(HOST_IP):%d", ports["metrics"])) {
		t.Errorf("args %v: the node does not listen where the probes go (port %d)", c.Args, ports["metrics"])
	}
	env, plain := map[string]string{}, map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		} else {
			plain[e.Name] = e.Value
		}
	}
	// ctl inside the pod reaches the fleet's etcd from its environment.
	if want := strings.Join(etcdEndpoints(v), ","); plain["FIBFLEET_ETCD"] != want {
		t.Errorf("FIBFLEET_ETCD %q, want %q", plain["FIBFLEET_ETCD"], want)
	}
	// ctl's own certificate with the bundled etcd; the operator's with an external one.
	for _, k := range []string{"FIBFLEET_ETCD_CA", "FIBFLEET_ETCD_CERT", "FIBFLEET_ETCD_KEY"} {
		want := ""
		switch {
		case v.Etcd.Bundled.Enabled:
			want = "/etc/fibfleet/etcd-ctl/"
		case v.Etcd.External.TLSSecret != "":
			want = "/etc/fibfleet/etcd-tls/"
		}
		if (want == "") != (plain[k] == "") || !strings.HasPrefix(plain[k], want) {
			t.Errorf("%s=%q, want a file under %q", k, plain[k], want)
		}
	}
	if insecure := !v.Etcd.Bundled.Enabled && v.Etcd.External.Insecure; (plain["FIBFLEET_ETCD_INSECURE"] == "true") != insecure {
		t.Errorf("FIBFLEET_ETCD_INSECURE=%q with etcd.external.insecure %v", plain["FIBFLEET_ETCD_INSECURE"], insecure)
	}
	if env["NODE_NAME"] != "spec.nodeName" || env["HOST_IP"] != "status.hostIP" {
		t.Errorf("env from fields %v, want NODE_NAME from spec.nodeName and HOST_IP from status.hostIP", env)
	}
	if !slices.Contains(c.Args, "-node-name=$(NODE_NAME)") || !slices.Contains(c.Args, "-config-dir=/etc/fibfleet/config") || mounts["config"].MountPath != "/etc/fibfleet/config" {
		t.Errorf("args %v: the node does not read its file from the mounted ConfigMap under its Kubernetes node's name", c.Args)
	}

	if v.PodDisruptionBudget.Enabled {
		var found bool
		for _, p := range r.pdbs {
			s, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err == nil && s.Matches(labels.Set(ds.Spec.Template.Labels)) {
				found = true
				if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 {
					t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want 1", p.Name, p.Spec.MaxUnavailable)
				}
			}
		}
		if !found {
			t.Error("no PodDisruptionBudget selects the nodes")
		}
	}
}

// memSecrets are Secrets in a map: the setup job's code writes here in the tests.
type memSecrets map[string]map[string][]byte

func (m memSecrets) Get(_ context.Context, name string) (map[string][]byte, bool, error) {
	d, ok := m[name]
	return d, ok, nil
}

func (m memSecrets) Create(_ context.Context, name, _ string, data map[string][]byte) error {
	if _, ok := m[name]; ok {
		return fmt.Errorf("Secret %s exists", name)
	}
	m[name] = data
	return nil
}

func (m memSecrets) Update(_ context.Context, name, _ string, data map[string][]byte) error {
	m[name] = data
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// jobArgs are a rendered hook job's arguments to `kubesetup <sub>`.
func jobArgs(t *testing.T, j *batchv1.Job, sub string) []string {
	t.Helper()
	cmd := j.Spec.Template.Spec.Containers[0].Command
	if len(cmd) < 2 || cmd[0] != "/usr/local/bin/kubesetup" || cmd[1] != sub {
		t.Fatalf("job %s runs %v, want /usr/local/bin/kubesetup %s", j.Name, cmd, sub)
	}
	return cmd[2:]
}

// setupJob parses the rendered setup job's command as kubesetup does.
func setupJob(t *testing.T, j *batchv1.Job) kubesetup.SecretsJob {
	t.Helper()
	sj, err := kubesetup.ParseSecrets(jobArgs(t, j, "secrets"))
	if err != nil {
		t.Fatalf("the setup job's arguments: %v", err)
	}
	return sj
}

// etcdAuthJob parses the rendered etcd-auth job's command as kubesetup does.
func etcdAuthJob(t *testing.T, j *batchv1.Job) kubesetup.EtcdAuthJob {
	t.Helper()
	aj, err := kubesetup.ParseEtcdAuth(jobArgs(t, j, "etcd-auth"))
	if err != nil {
		t.Fatalf("the etcd-auth job's arguments: %v", err)
	}
	return aj
}

// gossipSecret is the Secret the gossip key should come from.
func gossipSecret(r rendered, v chartValues) string {
	if v.Gossip.ExistingSecret != "" {
		return v.Gossip.ExistingSecret
	}
	if j := r.jobs["setup"]; j != nil {
		for _, a := range j.Spec.Template.Spec.Containers[0].Command {
			if s, ok := strings.CutPrefix(a, "--gossip-secret="); ok {
				return s
			}
		}
	}
	return ""
}

// checkHook: a hook of the given kinds, replaced by the next run and removed once it
// succeeded; the setup job's access (not a job) is removed however the hook ended,
// a failed job is kept for its logs.
func checkHook(t *testing.T, kind string, m metav1.ObjectMeta, hooks string) {
	t.Helper()
	policy := "before-hook-creation,hook-succeeded"
	if kind != "Job" {
		policy += ",hook-failed"
	}
	if m.Annotations["helm.sh/hook"] != hooks || m.Annotations["helm.sh/hook-delete-policy"] != policy {
		t.Errorf("%s %s: hook %q, delete policy %q; want %q, %s", kind, m.Name,
			m.Annotations["helm.sh/hook"], m.Annotations["helm.sh/hook-delete-policy"], hooks, policy)
	}
}

// checkSetup checks the hook jobs and runs the setup job's own code on its rendered
// arguments. It returns every Secret the pods may mount: what the job makes, and the
// Secrets the values name for the operator to make (with the keys the README says).
func checkSetup(t *testing.T, r rendered, v chartValues) memSecrets {
	made := memSecrets{}
	job := r.jobs["setup"]
	if want := v.Etcd.Bundled.Enabled || v.Gossip.ExistingSecret == ""; (job != nil) != want {
		t.Fatalf("setup job rendered: %v, want %v (it makes the bundled etcd's certificates and the gossip key)", job != nil, want)
	}
	if job != nil {
		checkHook(t, "Job", job.ObjectMeta, "pre-install,pre-upgrade")
		sj := setupJob(t, job)
		if sj.Namespace != "routers" || sj.Labels["app.kubernetes.io/instance"] != "edge" {
			t.Errorf("the setup job makes Secrets in %q labelled %v, want the release's namespace and instance", sj.Namespace, sj.Labels)
		}
		if _, err := kubesetup.Reconcile(context.Background(), made, sj.Plan, time.Now(), quiet); err != nil {
			t.Fatalf("the setup job's code on its arguments: %v", err)
		}
		// It may write what it makes, and nothing else; only it.
		pod := job.Spec.Template.Spec
		sa := r.serviceAccounts[pod.ServiceAccountName]
		if sa == nil || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
			t.Fatalf("the setup job's service account %q: not rendered, or its token not mounted", pod.ServiceAccountName)
		}
		checkHook(t, "ServiceAccount", sa.ObjectMeta, "pre-install,pre-upgrade")
		var rules []rbacv1.PolicyRule
		for _, rb := range r.roleBindings {
			if len(rb.Subjects) == 1 && rb.Subjects[0].Name == sa.Name && rb.Subjects[0].Kind == "ServiceAccount" {
				checkHook(t, "RoleBinding", rb.ObjectMeta, "pre-install,pre-upgrade")
				for _, ro := range r.roles {
					if rb.RoleRef.Kind == "Role" && ro.Name == rb.RoleRef.Name {
						checkHook(t, "Role", ro.ObjectMeta, "pre-install,pre-upgrade")
						rules = append(rules, ro.Rules...)
					}
				}
			}
		}
		may := func(verb, name string) bool {
			for _, ru := range rules {
				if slices.Contains(ru.Resources, "secrets") && slices.Contains(ru.Verbs, verb) && (len(ru.ResourceNames) == 0 || slices.Contains(ru.ResourceNames, name)) {
					return true
				}
			}
			return false
		}
		for name := range made {
			for _, verb := range []string{"get", "create", "update"} {
				if !may(verb, name) {
					t.Errorf("the setup job may not %s Secret %s", verb, name)
				}
			}
		}
		// The seed of the gossip key (chart 0.1's Secret) it may read.
		if sj.Plan.GossipSeed != "" && !may("get", sj.Plan.GossipSeed) {
			t.Errorf("the setup job may not read the gossip seed %s", sj.Plan.GossipSeed)
		}
		// Nothing more: only create goes without names (Kubernetes cannot name what
		// does not exist yet), and no verb beyond get, create and update.
		for _, ru := range rules {
			unnamed := len(ru.ResourceNames) == 0 && !slices.Equal(ru.Verbs, []string{"create"})
			extra := slices.ContainsFunc(ru.Verbs, func(v string) bool { return !slices.Contains([]string{"get", "create", "update"}, v) })
			if unnamed || extra || !slices.Equal(ru.Resources, []string{"secrets"}) || !slices.Equal(ru.APIGroups, []string{""}) {
				t.Errorf("the setup job's role allows %v on %v %v: more than the fleet's Secrets", ru.Verbs, ru.Resources, ru.ResourceNames)
			}
		}
		checkJobPod(t, job)
	}
	auth := r.jobs["etcd-auth"]
	if (auth != nil) != v.Etcd.Bundled.Enabled {
		t.Fatalf("etcd-auth job rendered: %v, want it with the bundled etcd alone", auth != nil)
	}
	if auth != nil {
		checkHook(t, "Job", auth.ObjectMeta, "post-install,post-upgrade")
		aj := etcdAuthJob(t, auth)
		if aj.Auth.Cluster != v.ClusterName || !slices.Equal(aj.Etcd.Endpoints, etcdEndpoints(v)) {
			t.Errorf("etcd-auth for fleet %q at %v, want %q at %v", aj.Auth.Cluster, aj.Etcd.Endpoints, v.ClusterName, etcdEndpoints(v))
		}
		// Root logs in with the root certificate the job mounts; the fleet's users
		// are exactly the common names of the certificates the routers mount for the
		// node and for ctl.
		if cn := certCN(t, r, auth.Spec.Template.Spec, aj.Etcd.Cert, made); cn != "root" {
			t.Errorf("etcd-auth logs in with a certificate for %q, want root", cn)
		}
		ds := r.daemonSets[0]
		var cns []string
		for _, f := range []string{"/etc/fibfleet/etcd-tls/tls.crt", "/etc/fibfleet/etcd-ctl/tls.crt"} {
			cns = append(cns, certCN(t, r, ds.Spec.Template.Spec, f, made))
		}
		if users := slices.Sorted(slices.Values(aj.Auth.Users)); !slices.Equal(users, slices.Sorted(slices.Values(cns))) {
			t.Errorf("etcd-auth gives the fleet's role to %v; the routers' certificates are for %v", users, cns)
		}
		if auth.Spec.Template.Spec.AutomountServiceAccountToken == nil || *auth.Spec.Template.Spec.AutomountServiceAccountToken {
			t.Error("the etcd-auth job mounts a service account token: it calls no Kubernetes API")
		}
		checkJobPod(t, auth)
	}
	for name, keys := range userSecrets(v) {
		if made[name] != nil {
			t.Errorf("Secret %s: the values name it for the operator to make, and the setup job makes it", name)
		}
		made[name] = map[string][]byte{}
		for _, k := range keys {
			made[name][k] = []byte("the operator's " + name + "/" + k)
		}
	}
	return made
}

// checkJobPod: a hook job's pod runs as non-root, read-only, without capabilities.
func checkJobPod(t *testing.T, j *batchv1.Job) {
	t.Helper()
	pod := j.Spec.Template.Spec
	psc, c := pod.SecurityContext, pod.Containers[0]
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil ||
		!*c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.Capabilities == nil || !slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("job %s runs as root, writable or with capabilities", j.Name)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever || j.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("job %s: restart policy %q, deadline %v: want Never and a deadline (helm waits for it)", j.Name, pod.RestartPolicy, j.Spec.ActiveDeadlineSeconds)
	}
}

// certCN is the common name of the certificate a pod finds at path, from the Secret
// mounted there.
func certCN(t *testing.T, r rendered, pod corev1.PodSpec, path string, made memSecrets) string {
	t.Helper()
	data := mountedFile(t, pod, path, made)
	cert, err := pki.ParseCert(data)
	if err != nil {
		t.Fatalf("%s in the pod: %v", path, err)
	}
	return cert.Subject.CommonName
}

// mountedFile is what a pod reads at path: the key of the Secret mounted over it.
func mountedFile(t *testing.T, pod corev1.PodSpec, path string, made memSecrets) []byte {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		for _, m := range c.VolumeMounts {
			key, ok := strings.CutPrefix(path, m.MountPath+"/")
			if !ok || vols[m.Name].Secret == nil {
				continue
			}
			d, ok := made[vols[m.Name].Secret.SecretName][key]
			if !ok {
				t.Fatalf("%s: Secret %s has no key %q", path, vols[m.Name].Secret.SecretName, key)
			}
			return d
		}
	}
	t.Fatalf("%s: no Secret is mounted there", path)
	return nil
}

// mount writes what a pod's container sees under root: every Secret it mounts (from
// made) and every ConfigMap (from the render, its absolute paths under /etc/fibfleet
// moved under root as the whole tree is). A Secret nothing makes fails.
func mount(t *testing.T, root string, r rendered, pod corev1.PodSpec, c corev1.Container, made memSecrets) {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(root, m.MountPath)
		files := map[string][]byte{}
		switch v := vols[m.Name]; {
		case v.Secret != nil:
			data, ok := made[v.Secret.SecretName]
			if !ok {
				t.Errorf("volume %s mounts Secret %s, which neither the setup job nor the operator (per the values) makes", m.Name, v.Secret.SecretName)
			}
			files = data
		case v.ConfigMap != nil:
			cm := r.configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Fatalf("volume %s mounts ConfigMap %s, which is not rendered", m.Name, v.ConfigMap.Name)
			}
			for k, body := range cm.Data {
				files[k] = []byte(strings.ReplaceAll(body, "/etc/fibfleet/", root+"/etc/fibfleet/"))
			}
		default:
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for k, b := range files {
			if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// configFiles are the files a router's configuration names.
type configFiles struct {
	Pprof   *bool `json:"pprof"`
	HTTPTLS struct {
		Cert     string `json:"cert"`
		Key      string `json:"key"`
		ClientCA string `json:"client_ca"`
	} `json:"http_tls"`
	BGP struct {
		Neighbors []struct {
			PasswordFile string `json:"password_file"`
		} `json:"neighbors"`
	} `json:"bgp"`
	Cluster struct {
		Etcd struct {
			Endpoints    []string `json:"endpoints"`
			CA           string   `json:"ca"`
			Cert         string   `json:"cert"`
			Key          string   `json:"key"`
			PasswordFile string   `json:"password_file"`
			Insecure     bool     `json:"insecure"`
		} `json:"etcd"`
		Gossip struct {
			KeyFile string `json:"key_file"`
		} `json:"gossip"`
	} `json:"cluster"`
}

func (c configFiles) paths() []string {
	out := []string{c.HTTPTLS.Cert, c.HTTPTLS.Key, c.HTTPTLS.ClientCA, c.Cluster.Etcd.CA, c.Cluster.Etcd.Cert, c.Cluster.Etcd.Key,
		c.Cluster.Etcd.PasswordFile, c.Cluster.Gossip.KeyFile}
	for _, n := range c.BGP.Neighbors {
		out = append(out, n.PasswordFile)
	}
	return slices.DeleteFunc(out, func(p string) bool { return p == "" })
}

// checkConfig mounts what a router's pod mounts (the ConfigMap, the setup job's
// Secrets and the operator's) and checks that every file its configuration names,
// and every file the environment gives ctl, is there; then it has the node binary
// itself read and validate each router's configuration with the container's
// arguments, as the pod would (the password files read from their Secrets).
func checkConfig(t *testing.T, r rendered, v chartValues, made memSecrets, node string) {
	ds := r.daemonSets[0]
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	cm := r.configMaps[pod.Volumes[0].ConfigMap.Name]
	if cm == nil {
		t.Fatal("the DaemonSet's ConfigMap is not rendered")
	}
	if _, ok := cm.Data["fleet.yaml"]; !ok {
		t.Fatal("ConfigMap has no fleet.yaml (read by nodes not listed under nodes)")
	}
	root := t.TempDir()
	mount(t, root, r, pod, c, made)
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	}
	for k, body := range cm.Data {
		var cfg configFiles
		if err := yaml.Unmarshal([]byte(body), &cfg); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for _, p := range cfg.paths() {
			if !exists(p) {
				t.Errorf("%s names %s, which no mounted Secret puts there", k, p)
			}
		}
		if strings.Contains(body, "passwordSecret") || strings.Contains(body, "password:") {
			t.Errorf("%s carries a password or a passwordSecret; it should name password files alone", k)
		}
		want := etcdEndpoints(v)
		if !slices.Equal(cfg.Cluster.Etcd.Endpoints, want) {
			t.Errorf("%s: etcd endpoints %v, want %v", k, cfg.Cluster.Etcd.Endpoints, want)
		}
		if tls := v.Etcd.Bundled.Enabled || v.Etcd.External.TLSSecret != ""; tls != (cfg.Cluster.Etcd.Cert != "") {
			t.Errorf("%s: etcd client certificate %q, want one: %v", k, cfg.Cluster.Etcd.Cert, tls)
		}
		if cfg.Cluster.Etcd.Insecure != (!v.Etcd.Bundled.Enabled && v.Etcd.External.Insecure) {
			t.Errorf("%s: etcd insecure %v", k, cfg.Cluster.Etcd.Insecure)
		}
		if (cfg.HTTPTLS.Cert != "") != (v.HTTPTLS.SecretName != "") || (cfg.HTTPTLS.ClientCA != "") != (v.HTTPTLS.SecretName != "" && v.HTTPTLS.ClientAuth) {
			t.Errorf("%s: http_tls %+v with httpTLS %+v", k, cfg.HTTPTLS, v.HTTPTLS)
		}
		// fleet.yaml turns pprof off; a router's file overlays it and may only leave
		// it so.
		if (k == "fleet.yaml" && cfg.Pprof == nil) || (cfg.Pprof != nil && *cfg.Pprof) {
			t.Errorf("%s: pprof on, on the host's IP", k)
		}
		if cfg.Cluster.Gossip.KeyFile != "/etc/fibfleet/gossip/key" {
			t.Errorf("%s: gossip key file %q, want the mounted Secret's /etc/fibfleet/gossip/key", k, cfg.Cluster.Gossip.KeyFile)
		}
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "FIBFLEET_") && strings.HasPrefix(e.Value, "/") && !exists(e.Value) {
			t.Errorf("env %s=%s: no mounted Secret puts it there", e.Name, e.Value)
		}
	}
	names := []string{"a-router-not-listed"}
	for n := range v.Nodes {
		names = append(names, n)
		if _, ok := cm.Data["node."+n+".yaml"]; !ok {
			t.Errorf("no node.%s.yaml for the node listed in values", n)
		}
	}
	dir := filepath.Join(root, "/etc/fibfleet/config")
	for _, n := range names {
		// The container's arguments, as the kubelet expands them on that node.
		args := []string{"-check", "-probe=false"} // the nodes' interfaces are not on this machine
		for _, a := range c.Args {
			a = strings.NewReplacer("$(NODE_NAME)", n, "$(HOST_IP)", "192.0.2.10", "/etc/fibfleet/config", dir).Replace(a)
			args = append(args, a)
		}
		out := run(t, node, args...)
		read := filepath.Join(dir, "fleet.yaml")
		if n != names[0] {
			read += " overlaid by " + filepath.Join(dir, "node."+n+".yaml")
		}
		if !bytes.Contains(out, []byte("config valid ("+read+")")) {
			t.Errorf("node %s: the node read %q, want %s", n, out, read)
		}
		// The node listens where the pod says it does (probes, scrapes, peers).
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, want := range []string{fmt.Sprintf("http 192.0.2.10:%d,", ports["metrics"]), fmt.Sprintf("bgp port %d,", ports["bgp"]), fmt.Sprintf("gossip 192.0.2.10:%d\n", ports["gossip-udp"])} {
			if !bytes.Contains(out, []byte(want)) || ports["gossip-udp"] != ports["gossip-tcp"] {
				t.Errorf("node %s: %q does not say %q (the container's ports: %v)", n, out, want, ports)
			}
		}
	}
}

// etcdEndpoints are the client URLs the nodes should use: the bundled members'
// stable names over TLS (release edge, namespace routers), or the external
// endpoints.
func etcdEndpoints(v chartValues) []string {
	if !v.Etcd.Bundled.Enabled {
		return v.Etcd.External.Endpoints
	}
	var out []string
	for i := range v.Etcd.Bundled.Replicas {
		out = append(out, fmt.Sprintf("https://edge-fibfleet-etcd-%d.edge-fibfleet-etcd-headless.routers.svc:2379", i))
	}
	return out
}

// checkEtcd: the bundled etcd's StatefulSet, closed to anyone without a certificate
// of the fleet's CA (clients and peers), its certificate (as the setup job makes it)
// valid for every name its members advertise, its probes on the plain-HTTP health
// port.
func checkEtcd(t *testing.T, r rendered, v chartValues, made memSecrets) {
	if !v.Etcd.Bundled.Enabled {
		if len(r.statefulSets) != 0 {
			t.Errorf("%d StatefulSets with an external etcd, want none", len(r.statefulSets))
		}
		return
	}
	if len(r.statefulSets) != 1 {
		t.Fatalf("%d StatefulSets, want the bundled etcd", len(r.statefulSets))
	}
	ss := r.statefulSets[0]
	if ss.Spec.Replicas == nil || int(*ss.Spec.Replicas) != v.Etcd.Bundled.Replicas {
		t.Errorf("etcd replicas %v, want %d", ss.Spec.Replicas, v.Etcd.Bundled.Replicas)
	}
	if svc := r.services[ss.Spec.ServiceName]; svc == nil || svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("etcd's governing Service %q: not rendered, not headless or hiding members that are not ready yet", ss.Spec.ServiceName)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	var initial string
	for _, a := range c.Command {
		if s, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
			initial = s
		}
	}
	if n := len(strings.Split(initial, ",")); initial == "" || n != v.Etcd.Bundled.Replicas {
		t.Errorf("--initial-cluster=%s: %d members, want %d", initial, n, v.Etcd.Bundled.Replicas)
	}
	psc := ss.Spec.Template.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("etcd runs as root or on a writable root filesystem")
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 || c.VolumeMounts[0].Name != ss.Spec.VolumeClaimTemplates[0].Name {
		t.Error("etcd's data is not on its volume claim")
	}
	flags := map[string]string{}
	for _, a := range c.Command[1:] {
		k, val, _ := strings.Cut(a, "=")
		flags[k] = val
	}
	for _, f := range []string{"--client-cert-auth", "--peer-client-cert-auth"} {
		if flags[f] != "true" {
			t.Errorf("%s=%q: etcd takes clients without a certificate", f, flags[f])
		}
	}
	for _, f := range []string{"--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls", "--initial-advertise-peer-urls", "--initial-cluster"} {
		for _, u := range strings.Split(flags[f], ",") {
			if _, url, _ := strings.Cut(u, "="); !strings.HasPrefix(url, "https://") && !strings.HasPrefix(u, "https://") {
				t.Errorf("%s: %s is not TLS", f, u)
			}
		}
	}
	pod := ss.Spec.Template.Spec
	cert, err := pki.ParseCert(mountedFile(t, pod, flags["--cert-file"], made))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--trusted-ca-file", "--peer-trusted-ca-file"} {
		if ca := mountedFile(t, pod, flags[f], made); !bytes.Equal(ca, mountedFile(t, pod, flags["--cert-file"][:strings.LastIndex(flags["--cert-file"], "/")]+"/ca.crt", made)) {
			t.Errorf("%s is not the CA beside etcd's certificate", f)
		}
	}
	if flags["--peer-cert-file"] != flags["--cert-file"] || flags["--peer-key-file"] != flags["--key-file"] {
		t.Error("etcd's peers use another certificate than its clients see")
	}
	// The fleet's client certificates are of the same CA: the peer port takes the
	// members' own alone.
	if flags["--peer-cert-allowed-cn"] == "" || flags["--peer-cert-allowed-cn"] != cert.Subject.CommonName {
		t.Errorf("--peer-cert-allowed-cn=%q, want the members' certificate's %q: any client certificate of the CA reaches the peer port", flags["--peer-cert-allowed-cn"], cert.Subject.CommonName)
	}
	mountedFile(t, pod, flags["--key-file"], made)
	for i := range v.Etcd.Bundled.Replicas {
		member := fmt.Sprintf("%s-%d", ss.Name, i)
		host := strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(flags["--advertise-client-urls"], "$(POD_NAME)", member), "https://"), ":2379")
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("member %s advertises %s: %v", member, host, err)
		}
	}
	// The probes read /livez and /readyz on the metrics port (plain HTTP, no key).
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, pr := range map[string]*corev1.Probe{"/livez": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != name || pr.HTTPGet.Scheme == corev1.URISchemeHTTPS ||
			fmt.Sprintf("http://0.0.0.0:%d", ports[pr.HTTPGet.Port.String()]) != flags["--listen-metrics-urls"] {
			t.Errorf("etcd probe %s: %+v, want GET %s on --listen-metrics-urls %s", name, pr, name, flags["--listen-metrics-urls"])
		}
	}
}

func checkMonitoring(t *testing.T, r rendered, v chartValues) {
	ds := r.daemonSets[0]
	var metrics *corev1.Service
	for _, s := range r.services {
		if s.Spec.Selector != nil && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
			metrics = s
		}
	}
	if metrics == nil || !metrics.Spec.PublishNotReadyAddresses || metrics.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Fatalf("metrics Service %+v: missing, hiding loading nodes, or not on the metrics port", metrics)
	}
	if !v.ServiceMonitor.Enabled {
		if len(r.serviceMonitors) != 0 {
			t.Error("a ServiceMonitor rendered while disabled")
		}
	} else {
		if len(r.serviceMonitors) != 1 {
			t.Fatalf("%d ServiceMonitors, want 1", len(r.serviceMonitors))
		}
		sm := r.serviceMonitors[0]
		s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || !s.Matches(labels.Set(metrics.Labels)) {
			t.Errorf("ServiceMonitor selector %v does not select the metrics Service (labels %v)", sm.Spec.Selector, metrics.Labels)
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != metrics.Spec.Ports[0].Name {
			t.Errorf("ServiceMonitor endpoints %+v do not scrape the Service's port %q", sm.Spec.Endpoints, metrics.Spec.Ports[0].Name)
		}
		var nodeLabel bool
		for _, rl := range sm.Spec.Endpoints[0].RelabelConfigs {
			nodeLabel = nodeLabel || rl.TargetLabel == "node"
		}
		if !nodeLabel {
			t.Error("the ServiceMonitor does not set the node label the dashboard groups by")
		}
	}
	cm := r.configMaps["edge-fibfleet-dashboard"]
	if v.GrafanaDashboard.Enabled != (cm != nil) {
		t.Fatalf("dashboard ConfigMap rendered: %v, want %v", cm != nil, v.GrafanaDashboard.Enabled)
	}
	if cm != nil {
		want, _ := Files.ReadFile(DashboardPath)
		if strings.TrimSpace(cm.Data["fibfleet.json"]) != strings.TrimSpace(string(want)) {
			t.Error("the dashboard ConfigMap differs from the dashboard file")
		}
	}
}

// checkNames applies the API server's rules that strict decoding does not: object
// names (DNS-1123, Services DNS-1035), label keys and values, container port, env
// and volume names, ConfigMap and Secret keys.
func checkNames(t *testing.T, r rendered) {
	check := func(what string, errs []string) {
		if len(errs) > 0 {
			t.Errorf("%s: %s", what, strings.Join(errs, "; "))
		}
	}
	meta := func(kind string, m metav1.ObjectMeta, nameRule func(string) []string) {
		check(kind+" name "+m.Name, nameRule(m.Name))
		for k, v := range m.Labels {
			check(kind+" "+m.Name+" label key "+k, validation.IsQualifiedName(k))
			check(kind+" "+m.Name+" label "+k+"="+v, validation.IsValidLabelValue(v))
		}
	}
	pod := func(owner string, spec corev1.PodTemplateSpec) {
		for k, v := range spec.Labels {
			check(owner+" pod label "+k+"="+v, append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...))
		}
		for _, v := range spec.Spec.Volumes {
			check(owner+" volume "+v.Name, validation.IsDNS1123Label(v.Name))
		}
		for _, c := range spec.Spec.Containers {
			check(owner+" container "+c.Name, validation.IsDNS1123Label(c.Name))
			for _, p := range c.Ports {
				check(owner+" port "+p.Name, validation.IsValidPortName(p.Name))
			}
			for _, e := range c.Env {
				check(owner+" env "+e.Name, validation.IsEnvVarName(e.Name))
			}
		}
	}
	for _, o := range r.configMaps {
		meta("ConfigMap", o.ObjectMeta, validation.IsDNS1123Subdomain)
		for k := range o.Data {
			check("ConfigMap "+o.Name+" key "+k, validation.IsConfigMapKey(k))
		}
	}
	for _, o := range r.secrets {
		meta("Secret", o.ObjectMeta, validation.IsDNS1123Subdomain)
		for k := range o.Data {
			check("Secret "+o.Name+" key "+k, validation.IsConfigMapKey(k))
		}
	}
	for _, o := range r.services {
		meta("Service", o.ObjectMeta, validation.IsDNS1035Label)
		for _, p := range o.Spec.Ports {
			check("Service "+o.Name+" port "+p.Name, validation.IsValidPortName(p.Name))
		}
	}
	for _, o := range r.serviceAccounts {
		meta("ServiceAccount", o.ObjectMeta, validation.IsDNS1123Subdomain)
	}
	for _, o := range r.daemonSets {
		meta("DaemonSet", o.ObjectMeta, validation.IsDNS1123Subdomain)
		pod("DaemonSet "+o.Name, o.Spec.Template)
	}
	for _, o := range r.statefulSets {
		// A StatefulSet's pods are named <name>-<ordinal> and labelled with it.
		meta("StatefulSet", o.ObjectMeta, validation.IsDNS1123Label)
		pod("StatefulSet "+o.Name, o.Spec.Template)
	}
	for _, o := range r.pdbs {
		meta("PodDisruptionBudget", o.ObjectMeta, validation.IsDNS1123Subdomain)
	}
	for _, o := range r.serviceMonitors {
		meta("ServiceMonitor", o.ObjectMeta, validation.IsDNS1123Subdomain)
	}
}

// TestChartRefusesBadValues: the schema and the templates refuse wrong values with
// a message naming them, at install time rather than in a crash-looping pod: among
// them every field the chart sets itself, and an etcd on plain HTTP not said to be
// insecure.
func TestChartRefusesBadValues(t *testing.T) {
	helm := tools(t).helm
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"daemonset.maxUnavailabel=1"}, "maxUnavailabel"},
		{[]string{"config.xdp_mode=fast"}, "xdp_mode"},
		{[]string{"config.cache.target_hit_rate=2"}, "target_hit_rate"},
		{[]string{"etcd.bundled.replicas=2"}, "replicas"},
		{[]string{"etcd.bundled.enabled=false"}, "etcd.external.endpoints"},
		{[]string{"etcd.bundled.enabled=false", "etcd.external.endpoints={http://10.0.0.1:2379}"}, "etcd.external.insecure"},
		{[]string{"gossip.key=MDEyMzQ1Njc4OWFiY2RlZg=="}, "key"},
		{[]string{"nodes.edge-1.bgp.neighbors[0].address=192.0.2.1"}, "asn"},
		{[]string{"config.node_name=r1"}, "node_name"},
		{[]string{"config.cluster.etcd.insecure=true"}, "etcd"},
		{[]string{"config.http_tls.cert=/x"}, "http_tls"},
		{[]string{"config.bgp.neighbors[0].address=192.0.2.1", "config.bgp.neighbors[0].asn=64500", "config.bgp.neighbors[0].password_file=/p"}, "password_file"},
		{[]string{"config.bgp.neighbors[0].address=192.0.2.1", "config.bgp.neighbors[0].asn=64500", "config.bgp.neighbors[0].passwordSecret.key=k"}, "name"},
		{[]string{"daemonset.memory.tables=-1"}, "tables"},
	} {
		var args []string
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helm, append([]string{"template", "edge", chartDir}, args...)...).CombinedOutput()
		if err == nil {
			t.Errorf("--set %v rendered; want a refusal", c.set)
			continue
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("--set %v: %q does not mention %s", c.set, out, c.want)
		}
	}
	// On the router's own loopback, plain HTTP is the node's to take (it does).
	run(t, helm, "template", "edge", chartDir, "--set", "etcd.bundled.enabled=false", "--set", "etcd.external.endpoints={http://127.0.0.1:2379}")
	// Said in as many words, a plain-HTTP etcd renders, and the nodes are told.
	out := run(t, helm, "template", "edge", chartDir, "--set", "etcd.bundled.enabled=false", "--set", "etcd.external.endpoints={http://10.0.0.1:2379}",
		"--set", "etcd.external.insecure=true")
	if r := decode(t, out); !strings.Contains(r.configMaps["edge-fibfleet"].Data["fleet.yaml"], "insecure: true") {
		t.Error("etcd.external.insecure did not reach the nodes' configuration")
	}
}

// TestChartRendersNoKeys: whatever renders the chart (helm template, Argo CD, Flux),
// two renders are the same, carry no key material and no Secret, and name the same
// gossip Secret: the setup job makes the keys once, in the cluster.
func TestChartRendersNoKeys(t *testing.T) {
	helm := tools(t).helm
	for name, set := range valueSets(t) {
		a := run(t, helm, append([]string{"template", "edge", chartDir}, set...)...)
		b := run(t, helm, append([]string{"template", "edge", chartDir}, set...)...)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two renders differ", name)
		}
		r := decode(t, a)
		if len(r.secrets) != 0 {
			t.Errorf("%s: the render holds Secrets %v", name, slices.Collect(maps.Keys(r.secrets)))
		}
		for _, bad := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE"} {
			if bytes.Contains(a, []byte(bad)) {
				t.Errorf("%s: the render carries %q", name, bad)
			}
		}
		vol := ""
		for _, v := range r.daemonSets[0].Spec.Template.Spec.Volumes {
			if v.Name == "gossip-key" && v.Secret != nil {
				vol = v.Secret.SecretName
			}
		}
		if want := gossipSecret(r, values(t, set)); vol == "" || vol != want {
			t.Errorf("%s: the nodes mount gossip Secret %q, want %q (existingSecret, or what the setup job makes)", name, vol, want)
		}
	}
}

// TestDockerfile parses the Dockerfile as BuildKit does and checks its stages: a Go
// build of the node and ctl, copied into a small final image that runs the node.
func TestDockerfile(t *testing.T) {
	stages, metaArgs := dockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, final)", len(stages))
	}
	build, final := stages[0], stages[1]
	if build.Name != "build" || !strings.HasPrefix(build.BaseName, "golang:") {
		t.Errorf("first stage %q from %q, want build from golang", build.Name, build.BaseName)
	}
	var goVersion string
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			if kv.Key == "GO_VERSION" && kv.Value != nil {
				goVersion = *kv.Value
			}
		}
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod); m == nil || goVersion != string(m[1]) {
		t.Errorf("GO_VERSION %q, want go.mod's go %s", goVersion, m[1])
	}
	// go mod download runs on go.mod alone: every module go.mod replaces with a
	// directory must have its go.mod copied in before it.
	var copiedBefore []string
	for _, cmd := range build.Commands {
		if c, ok := cmd.(*instructions.CopyCommand); ok {
			copiedBefore = append(copiedBefore, c.SourcePaths...)
		}
		if r, ok := cmd.(*instructions.RunCommand); ok && strings.Contains(strings.Join(r.CmdLine, " "), "go mod download") {
			break
		}
	}
	for _, m := range regexp.MustCompile(`(?m)=>\s*\./(\S+)\s*$`).FindAllSubmatch(mod, -1) {
		if want := string(m[1]) + "/go.mod"; !slices.Contains(copiedBefore, want) {
			t.Errorf("the build stage downloads modules before copying %s (go.mod replaces a module with ./%s)", want, m[1])
		}
	}
	built := goBuild(build)
	for _, want := range []string{"./cmd/node", "./cmd/ctl", "./cmd/kubesetup", "CGO_ENABLED=0", "-o /out/"} {
		if !strings.Contains(built, want) {
			t.Errorf("build stage's go build %q lacks %s", built, want)
		}
	}
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") {
		t.Errorf("final stage from %q, want a distroless static base (no shell, no packages)", final.BaseName)
	}
	var copied []string
	var entry []string
	for _, cmd := range final.Commands {
		switch c := cmd.(type) {
		case *instructions.CopyCommand:
			if c.From != build.Name {
				t.Errorf("COPY --from=%q, want the build stage", c.From)
			}
			copied = append(copied, c.SourcePaths...)
		case *instructions.EntrypointCommand:
			entry = c.CmdLine
		}
	}
	if !slices.Equal(copied, []string{"/out/node", "/out/ctl", "/out/kubesetup"}) {
		t.Errorf("final stage copies %v, want the node, ctl and kubesetup (the chart's hook jobs) from /out", copied)
	}
	if !slices.Equal(entry, []string{"/usr/local/bin/node"}) || !execForm(final) {
		t.Errorf("entrypoint %v, want the node in exec form", entry)
	}
}

// dockerfile parses the Dockerfile as BuildKit does: its stages and the ARGs before
// the first FROM. A parser warning fails the test.
func dockerfile(t *testing.T) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	raw, err := Files.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile line %d: %s", w.Location.Start.Line, w.Short)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile instructions: %v", err)
	}
	return stages, metaArgs
}

// goBuild is the stage's RUN line that runs go build ("" if none).
func goBuild(s instructions.Stage) string {
	for _, cmd := range s.Commands {
		if r, ok := cmd.(*instructions.RunCommand); ok && strings.Contains(strings.Join(r.CmdLine, " "), "go build") {
			return strings.Join(r.CmdLine, " ")
		}
	}
	return ""
}

// execForm reports whether a stage's ENTRYPOINT is in exec form (distroless has no
// shell).
func execForm(s instructions.Stage) bool {
	for _, cmd := range s.Commands {
		if e, ok := cmd.(*instructions.EntrypointCommand); ok {
			return !e.PrependShell
		}
	}
	return false
}

// TestDashboardQueries: every expression of the dashboard parses as PromQL and
// selects fibfleet series (TestFleet checks a running node exports each of them).
func TestDashboardQueries(t *testing.T) {
	qs, err := DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 20 {
		t.Fatalf("%d queries, want the dashboard's (at least 20)", len(qs))
	}
	for _, q := range qs {
		for _, s := range q.Selectors {
			if !strings.HasPrefix(s.Metric, "fibfleet_") {
				t.Errorf("panel %q selects %q, not a fibfleet metric", q.Panel, s.Metric)
			}
		}
	}
	if _, err := parseQuery("bad", "rate(fibfleet_xdp_packets_total[5m]"); err == nil {
		t.Error("an unbalanced expression parsed")
	}
}

// TestChartREADME: the chart's README describes every value of values.yaml (itself
// or a map holding it), and describes no value that does not exist.
func TestChartREADME(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(raw, &vals); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(readme, -1) {
		documented[strings.TrimSuffix(string(m[1]), ".*")] = true
	}
	paths := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		paths[prefix] = true
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, c := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), c)
			}
			return
		}
		for p := prefix; ; {
			if documented[p] {
				return
			}
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				t.Errorf("value %s is not described in the chart's README", prefix)
				return
			}
			p = p[:i]
		}
	}
	for k, v := range vals {
		walk(k, v)
	}
	for d := range documented {
		if !paths[d] {
			t.Errorf("the README describes %s, which values.yaml does not have", d)
		}
	}
}

// TestDockerfileBuild runs the Dockerfile's go build as the build stage would (its
// command line, TARGETOS and TARGETARCH set, into a temporary /out) and checks what
// the final image gets: a static node, ctl and kubesetup (the distroless static base
// has no C library), built without cgo, trimmed, each with the version stamped and
// saying it.
func TestDockerfileBuild(t *testing.T) {
	stages, _ := dockerfile(t)
	line := goBuild(stages[0])
	if line == "" {
		t.Fatal("no go build in the build stage")
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(line, "/out/", out+"/"))
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "TARGETOS=linux", "TARGETARCH="+runtime.GOARCH, "VERSION=v0.0.0-dockerfile-test")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, b)
	}
	for _, bin := range []string{"node", "ctl", "kubesetup"} {
		p := filepath.Join(out, bin)
		f, err := elf.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked: the distroless static image cannot run it", bin)
			}
		}
		f.Close()
		info, err := buildinfo.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
			t.Errorf("%s built with %v; want CGO_ENABLED=0 and -trimpath", bin, settings)
		}
		// -trimpath keeps -ldflags out of the build info: ask each binary.
		versionArgs := map[string][]string{"node": {"-version"}, "ctl": {"version"}, "kubesetup": {"version"}}[bin]
		if b, err := exec.Command(p, versionArgs...).CombinedOutput(); err != nil || !bytes.Contains(b, []byte("v0.0.0-dockerfile-test")) {
			t.Errorf("%s %v: %q, %v; want the version the build stamped", bin, versionArgs, b, err)
		}
	}
	if b, err := exec.Command(filepath.Join(out, "node"), "-check", "-probe=false", "-node-name", "edge-1", "-interfaces", "eth0", "-bgp-asn", "65000", "-bgp-router-id", "192.0.2.1").CombinedOutput(); err != nil || !strings.Contains(string(b), "config valid") {
		t.Errorf("the image's node -check: %v\n%s", err, b)
	}
	if b, err := exec.Command(filepath.Join(out, "ctl"), "--help").CombinedOutput(); err != nil || !strings.Contains(string(b), "cache") {
		t.Errorf("the image's ctl --help: %v\n%s", err, b)
	}
}
