package k8s

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
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

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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

// tools builds helm (go install from the module proxy) and the node binary (from
// this tree, to check the configuration files the chart renders) into a temporary
// directory.
func tools(t *testing.T) (helm, node string) {
	t.Helper()
	buildOnce.Do(func() {
		if toolDir, buildErr = os.MkdirTemp("", "fibfleet-k8s-tools-"); buildErr != nil {
			return
		}
		t.Logf("building %s and the node (the first helm build takes minutes)", helmModule)
		cmd := exec.Command("go", "install", helmModule)
		cmd.Env = append(os.Environ(), "GOBIN="+toolDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go install %s: %w\n%s", helmModule, err, out)
			return
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(toolDir, "node"), "github.com/fibfleet/fibfleet/cmd/node").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/node: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(toolDir, "helm"), filepath.Join(toolDir, "node")
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
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode splits helm template's output and decodes every document strictly (an
// unknown or misplaced field, a duplicate key or a wrong type fails) into the type
// of its apiVersion and kind; a kind the chart should not render fails too.
func decode(t *testing.T, out []byte) rendered {
	t.Helper()
	r := rendered{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, serviceAccounts: map[string]*corev1.ServiceAccount{}}
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

// valueSets are the default values and every example values file.
func valueSets(t *testing.T) map[string][]string {
	sets := map[string][]string{"default": nil}
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example values files (%v)", err)
	}
	for _, f := range files {
		sets[strings.TrimSuffix(filepath.Base(f), ".yaml")] = []string{"-f", f}
	}
	return sets
}

// TestChart lints and renders the chart with the default values and each example,
// decodes what it renders strictly into the Kubernetes API types, checks the node
// DaemonSet's security context, volumes and probes and how the objects refer to each
// other, and has the node binary validate every configuration file it renders.
func TestChart(t *testing.T) {
	helm, node := tools(t)
	for name, args := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			run(t, helm, append([]string{"lint", "--strict", chartDir}, args...)...)
			out := run(t, helm, append([]string{"template", "edge", chartDir, "--namespace", "routers"}, args...)...)
			r := decode(t, out)
			vals := values(t, args)
			checkDaemonSet(t, r, vals)
			checkConfig(t, r, vals, node)
			checkEtcd(t, r, vals)
			checkMonitoring(t, r, vals)
			checkNames(t, r)
		})
	}
}

// chartValues is the part of the values the assertions need.
type chartValues struct {
	Nodes map[string]any `json:"nodes"`
	Etcd  struct {
		Bundled struct {
			Enabled  bool `json:"enabled"`
			Replicas int  `json:"replicas"`
		} `json:"bundled"`
		External struct {
			Endpoints      []string `json:"endpoints"`
			TLSSecret      string   `json:"tlsSecret"`
			Username       string   `json:"username"`
			PasswordSecret string   `json:"passwordSecret"`
		} `json:"external"`
	} `json:"etcd"`
	Gossip struct {
		ExistingSecret string `json:"existingSecret"`
	} `json:"gossip"`
	Daemonset struct {
		NodeSelector map[string]string `json:"nodeSelector"`
		Tolerations  []map[string]any  `json:"tolerations"`
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
	switch {
	case sec == nil:
		t.Error("no gossip-key Secret volume")
	case v.Gossip.ExistingSecret != "":
		if sec.SecretName != v.Gossip.ExistingSecret {
			t.Errorf("gossip key from Secret %q, want the existing %q", sec.SecretName, v.Gossip.ExistingSecret)
		}
	default:
		s := r.secrets[sec.SecretName]
		if s == nil {
			t.Fatalf("gossip key Secret %q not rendered", sec.SecretName)
		}
		// 16, 24 or 32 bytes, raw or in base64 (24, 32 or 44 characters).
		if n := len(s.Data["key"]); !slices.Contains([]int{16, 24, 32, 44}, n) {
			t.Errorf("gossip key of %d bytes", n)
		}
	}
	tlsVol, authVol := vols["etcd-tls"].Secret, vols["etcd-auth"].Secret
	if ext := v.Etcd.External; !v.Etcd.Bundled.Enabled && ext.TLSSecret != "" {
		if tlsVol == nil || tlsVol.SecretName != ext.TLSSecret || mounts["etcd-tls"].MountPath != "/etc/fibfleet/etcd-tls" {
			t.Errorf("etcd TLS Secret %q not mounted at /etc/fibfleet/etcd-tls (volume %+v)", ext.TLSSecret, tlsVol)
		}
		if ext.Username != "" && (authVol == nil || authVol.SecretName != ext.PasswordSecret) {
			t.Errorf("etcd password Secret %q not mounted (volume %+v)", ext.PasswordSecret, authVol)
		}
	} else if tlsVol != nil || authVol != nil {
		t.Error("etcd TLS or password volumes without an external etcd asking for them")
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
	for _, k := range []string{"FIBFLEET_ETCD_CA", "FIBFLEET_ETCD_CERT", "FIBFLEET_ETCD_KEY"} {
		if tls := !v.Etcd.Bundled.Enabled && v.Etcd.External.TLSSecret != ""; tls != strings.HasPrefix(plain[k], "/etc/fibfleet/etcd-tls/") {
			t.Errorf("%s=%q with an etcd TLS Secret: %v", k, plain[k], tls)
		}
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

// checkConfig has the node binary itself read and validate the configuration file
// of each router with the container's arguments, as the pod would, and checks what the chart
// owns in them: the fleet's etcd, the gossip key file where the Secret is mounted.
func checkConfig(t *testing.T, r rendered, v chartValues, node string) {
	ds := r.daemonSets[0]
	cm := r.configMaps[ds.Spec.Template.Spec.Volumes[0].ConfigMap.Name]
	if cm == nil {
		t.Fatal("the DaemonSet's ConfigMap is not rendered")
	}
	if _, ok := cm.Data["fleet.yaml"]; !ok {
		t.Fatal("ConfigMap has no fleet.yaml (read by nodes not listed under nodes)")
	}
	dir := t.TempDir()
	for k, body := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var c struct {
			Pprof   *bool `json:"pprof"`
			Cluster struct {
				Etcd struct {
					Endpoints []string `json:"endpoints"`
					CA        string   `json:"ca"`
				} `json:"etcd"`
				Gossip struct {
					KeyFile string `json:"key_file"`
				} `json:"gossip"`
			} `json:"cluster"`
		}
		if err := yaml.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		want := etcdEndpoints(v)
		if !slices.Equal(c.Cluster.Etcd.Endpoints, want) {
			t.Errorf("%s: etcd endpoints %v, want %v", k, c.Cluster.Etcd.Endpoints, want)
		}
		// fleet.yaml turns pprof off; a router's file overlays it and may only leave
		// it so.
		if (k == "fleet.yaml" && c.Pprof == nil) || (c.Pprof != nil && *c.Pprof) {
			t.Errorf("%s: pprof on, on the host's IP", k)
		}
		if c.Cluster.Gossip.KeyFile != "/etc/fibfleet/gossip/key" {
			t.Errorf("%s: gossip key file %q, want the mounted Secret's /etc/fibfleet/gossip/key", k, c.Cluster.Gossip.KeyFile)
		}
	}
	names := []string{"a-router-not-listed"}
	for n := range v.Nodes {
		names = append(names, n)
		if _, ok := cm.Data["node."+n+".yaml"]; !ok {
			t.Errorf("no node.%s.yaml for the node listed in values", n)
		}
	}
	for _, n := range names {
		// The container's arguments, as the kubelet expands them on that node.
		args := []string{"-check", "-probe=false"} // the nodes' interfaces are not on this machine
		for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
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
		for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
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
// stable names (release edge, namespace routers), or the external endpoints.
func etcdEndpoints(v chartValues) []string {
	if !v.Etcd.Bundled.Enabled {
		return v.Etcd.External.Endpoints
	}
	var out []string
	for i := range v.Etcd.Bundled.Replicas {
		out = append(out, fmt.Sprintf("http://edge-fibfleet-etcd-%d.edge-fibfleet-etcd-headless.routers.svc:2379", i))
	}
	return out
}

func checkEtcd(t *testing.T, r rendered, v chartValues) {
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
// a message naming them, at install time rather than in a crash-looping pod.
func TestChartRefusesBadValues(t *testing.T) {
	helm, _ := tools(t)
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"daemonset.maxUnavailabel=1"}, "maxUnavailabel"},
		{[]string{"config.xdp_mode=fast"}, "xdp_mode"},
		{[]string{"config.cache.target_hit_rate=2"}, "target_hit_rate"},
		{[]string{"etcd.bundled.replicas=2"}, "replicas"},
		{[]string{"etcd.bundled.enabled=false"}, "etcd.external.endpoints"},
		{[]string{"gossip.key=short"}, "gossip"},
		{[]string{"nodes.edge-1.bgp.neighbors[0].address=192.0.2.1"}, "asn"},
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
	for _, want := range []string{"./cmd/node", "./cmd/ctl", "CGO_ENABLED=0", "-o /out/"} {
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
	if !slices.Equal(copied, []string{"/out/node", "/out/ctl"}) {
		t.Errorf("final stage copies %v, want the node and ctl from /out", copied)
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
// the final image gets: a static node and ctl (the distroless static base has no C
// library), built without cgo, trimmed, the node with the version stamped.
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
	for _, bin := range []string{"node", "ctl"} {
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
		// -trimpath keeps -ldflags out of the build info: look for the stamp itself
		// (ctl has no version variable).
		if b, err := os.ReadFile(p); bin == "node" && (err != nil || !bytes.Contains(b, []byte("v0.0.0-dockerfile-test"))) {
			t.Errorf("%s does not carry the version the build stamped (%v)", bin, err)
		}
	}
	if b, err := exec.Command(filepath.Join(out, "node"), "-check", "-probe=false", "-node-name", "edge-1", "-interfaces", "eth0", "-bgp-asn", "65000", "-bgp-router-id", "192.0.2.1").CombinedOutput(); err != nil || !strings.Contains(string(b), "config valid") {
		t.Errorf("the image's node -check: %v\n%s", err, b)
	}
	if b, err := exec.Command(filepath.Join(out, "ctl"), "--help").CombinedOutput(); err != nil || !strings.Contains(string(b), "cache") {
		t.Errorf("the image's ctl --help: %v\n%s", err, b)
	}
}
