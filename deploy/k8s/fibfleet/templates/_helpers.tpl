{{/* The chart's name, and the release's resources' base name (63 characters at most). */}}
{{- define "fibfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fibfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fibfleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "fibfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selects the DaemonSet's pods (component node) or the bundled etcd's (component etcd). */}}
{{- define "fibfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fibfleet.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "fibfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fibfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "fibfleet.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The Secrets the setup job (kubesetup, a pre-install and pre-upgrade hook) makes once
and keeps; no template renders them, so no key material passes through a render.
*/}}
{{- define "fibfleet.gossipSecret" -}}
{{- default (printf "%s-gossip-key" (include "fibfleet.fullname" . | trunc 52 | trimSuffix "-")) .Values.gossip.existingSecret }}
{{- end }}

{{/* The gossip Secret chart 0.1 rendered: a new key is seeded from it. */}}
{{- define "fibfleet.oldGossipSecret" -}}
{{- printf "%s-gossip" (include "fibfleet.fullname" .) }}
{{- end }}

{{- define "fibfleet.caSecret" -}}
{{- printf "%s-ca" (include "fibfleet.fullname" . | trunc 60 | trimSuffix "-") }}
{{- end }}

{{/* A certificate's Secret, by what it is for: etcd-server, etcd-root, etcd-node, etcd-ctl. */}}
{{- define "fibfleet.certSecret" -}}
{{- printf "%s-%s" (include "fibfleet.fullname" .root | trunc (int (sub 62 (len .for))) | trimSuffix "-") .for }}
{{- end }}

{{/* The etcd users of the bundled etcd: the client certificates' common names. */}}
{{- define "fibfleet.etcdUsers" -}}
{{- dict "root" "root" "node" "fibfleet-node" "ctl" "fibfleet-ctl" | toJson }}
{{- end }}

{{/* Whether the setup job has anything to make: the bundled etcd's certificates, or the gossip key. */}}
{{- define "fibfleet.setup" -}}
{{- if or .Values.etcd.bundled.enabled (not .Values.gossip.existingSecret) }}true{{ end }}
{{- end }}

{{- define "fibfleet.etcdName" -}}
{{- printf "%s-etcd" (include "fibfleet.fullname" .) | trunc 54 | trimSuffix "-" }}
{{- end }}

{{/* The bundled etcd's member names (pods of its StatefulSet) as DNS names. */}}
{{- define "fibfleet.etcdMembers" -}}
{{- $name := include "fibfleet.etcdName" . }}
{{- $hosts := list }}
{{- range $i := until (int .Values.etcd.bundled.replicas) }}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- $hosts | toJson }}
{{- end }}

{{/*
The names the bundled etcd's certificate is for: each member under the namespace's
service domain, with and without the cluster domain (clients use the short ones;
members check each other's certificates against the addresses those resolve to), a
wildcard for members added later, and the loopback (kubectl port-forward).
*/}}
{{- define "fibfleet.etcdServerNames" -}}
{{- $name := include "fibfleet.etcdName" . }}
{{- $svc := printf "%s-headless.%s.svc" $name .Release.Namespace }}
{{- $names := list }}
{{- range $m := include "fibfleet.etcdMembers" . | fromJsonArray }}
{{- $names = append $names $m }}
{{- $names = append $names (printf "%s.%s" $m $.Values.clusterDomain) }}
{{- end }}
{{- $names = concat $names (list (printf "*.%s" $svc) (printf "*.%s.%s" $svc .Values.clusterDomain) $svc "localhost" "127.0.0.1" "::1") }}
{{- $names | toJson }}
{{- end }}

{{/* The etcd client URLs the nodes use: the bundled members' stable names, or the external endpoints. */}}
{{- define "fibfleet.etcdEndpoints" -}}
{{- if .Values.etcd.bundled.enabled }}
{{- $urls := list }}
{{- range $m := include "fibfleet.etcdMembers" . | fromJsonArray }}
{{- $urls = append $urls (printf "https://%s:2379" $m) }}
{{- end }}
{{- join "," $urls }}
{{- else }}
{{- join "," .Values.etcd.external.endpoints }}
{{- end }}
{{- end }}

{{/*
Where the node pod mounts what its configuration names: the etcd client files, the
node API's certificate, the neighbours' password Secrets.
*/}}
{{- define "fibfleet.etcdTLSDir" -}}/etc/fibfleet/etcd-tls{{- end }}
{{- define "fibfleet.etcdCtlDir" -}}/etc/fibfleet/etcd-ctl{{- end }}
{{- define "fibfleet.httpTLSDir" -}}/etc/fibfleet/http-tls{{- end }}
{{- define "fibfleet.secretsDir" -}}/etc/fibfleet/secrets{{- end }}

{{/* Whether the node and ctl reach etcd with a client certificate. */}}
{{- define "fibfleet.etcdTLS" -}}
{{- if or .Values.etcd.bundled.enabled .Values.etcd.external.tlsSecret }}true{{ end }}
{{- end }}

{{/*
The external etcd's plain-HTTP endpoints off the router: refused unless
etcd.external.insecure says so (the node and ctl refuse them too).
*/}}
{{- define "fibfleet.checkEtcd" -}}
{{- if and (not .Values.etcd.bundled.enabled) (not .Values.etcd.external.endpoints) }}
{{- fail "etcd: enable etcd.bundled or give etcd.external.endpoints (the fleet keeps its cache policy and flush epochs there)" }}
{{- end }}
{{- if and (not .Values.etcd.bundled.enabled) (not .Values.etcd.external.insecure) }}
{{- range .Values.etcd.external.endpoints }}
{{- if and (hasPrefix "http://" .) (not (regexMatch "^http://(127\\.[0-9.]+|localhost|\\[::1\\])(:[0-9]+)?(/.*)?$" .)) }}
{{- fail (printf "etcd.external.endpoints: %s is plain HTTP: anyone who reaches it can change the fleet's policy, drains and blackholes; give https:// endpoints with etcd.external.tlsSecret, or set etcd.external.insecure: true" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The Secrets the neighbours' TCP-MD5 passwords come from (passwordSecret.name in
config and in every router's settings), each once, sorted: the DaemonSet mounts each.
*/}}
{{- define "fibfleet.passwordSecrets" -}}
{{- $cfgs := list .Values.config }}
{{- range $_, $c := .Values.nodes }}{{ $cfgs = append $cfgs $c }}{{ end }}
{{- $names := list }}
{{- range $c := $cfgs }}
{{- if and $c $c.bgp $c.bgp.neighbors }}
{{- range $n := $c.bgp.neighbors }}
{{- with $n.passwordSecret }}{{ $names = append $names .name }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- $names | uniq | sortAlpha | toJson }}
{{- end }}

{{/* A password Secret's volume name: stable, and a DNS label whatever the Secret's name. */}}
{{- define "fibfleet.passwordVolume" -}}
{{- printf "md5-%s" (sha256sum . | trunc 12) }}
{{- end }}

{{/*
The settings the chart owns, merged over each node's file: the fleet's name, its
etcd (with the mounted TLS and password files), the mounted gossip key, the node
API's TLS.
*/}}
{{- define "fibfleet.chartConfig" -}}
{{- $etcd := dict "endpoints" (splitList "," (include "fibfleet.etcdEndpoints" .)) }}
{{- if include "fibfleet.etcdTLS" . }}
{{- $dir := include "fibfleet.etcdTLSDir" . }}
{{- $_ := set $etcd "ca" (printf "%s/ca.crt" $dir) }}
{{- $_ := set $etcd "cert" (printf "%s/tls.crt" $dir) }}
{{- $_ := set $etcd "key" (printf "%s/tls.key" $dir) }}
{{- end }}
{{- if and (not .Values.etcd.bundled.enabled) .Values.etcd.external.username }}
{{- $_ := set $etcd "username" .Values.etcd.external.username }}
{{- $_ := set $etcd "password_file" "/etc/fibfleet/etcd-auth/password" }}
{{- end }}
{{- if and (not .Values.etcd.bundled.enabled) .Values.etcd.external.insecure }}
{{- $_ := set $etcd "insecure" true }}
{{- end }}
{{- $gossip := dict "key_file" "/etc/fibfleet/gossip/key" "port" .Values.ports.gossip }}
{{- $out := dict "cluster" (dict "name" .Values.clusterName "etcd" $etcd "gossip" $gossip) }}
{{- with .Values.httpTLS.secretName }}
{{- $dir := include "fibfleet.httpTLSDir" $ }}
{{- $tls := dict "cert" (printf "%s/tls.crt" $dir) "key" (printf "%s/tls.key" $dir) }}
{{- if $.Values.httpTLS.clientAuth }}
{{- $_ := set $tls "client_ca" (printf "%s/ca.crt" $dir) }}
{{- end }}
{{- $_ := set $out "http_tls" $tls }}
{{- end }}
{{- $out | toYaml }}
{{- end }}

{{/*
One router's configuration file: its settings (root: the chart's context, config:
the values' settings) with each neighbour's passwordSecret turned into the
password_file where the DaemonSet mounts that Secret, and the chart's settings over
them.
*/}}
{{- define "fibfleet.nodeFile" -}}
{{- $cfg := deepCopy (default dict .config) }}
{{- if and $cfg.bgp $cfg.bgp.neighbors }}
{{- range $n := $cfg.bgp.neighbors }}
{{- with $n.passwordSecret }}
{{- $_ := set $n "password_file" (printf "%s/%s/%s" (include "fibfleet.secretsDir" $.root) .name (default "password" .key)) }}
{{- end }}
{{- $_ := unset $n "passwordSecret" }}
{{- end }}
{{- end }}
{{- mergeOverwrite $cfg (include "fibfleet.chartConfig" .root | fromYaml) | toYaml }}
{{- end }}

{{/*
The node's memory request and limit (MiB), from what it holds, by the peaks measured
on a full table with real attributes (docs/BENCHMARKS.md, "The control plane at
FRR's memory", 2026-12-07, in MiB): one table about 1,060, each further table
about 450 more (two 1,430-1,600, four 2,300-2,490), a mesh peer sent the table
170-200 more (a fleet node with one upstream and two mesh peers 1,380-1,460), a
node fed by the mesh alone 1,100-1,230; here 768 MiB + 512 MiB per table received
(each full-table upstream's, and each mesh peer's that has an upstream) + 256 MiB
per mesh peer sent to, 4-30% over those peaks (the least for a node fed by the
mesh alone), more over the lower peaks measured after that day's garbage cuts. The limit is half as much again: the collector's headroom varies
from load to load.
*/}}
{{- define "fibfleet.memoryRequest" -}}
{{- $m := .Values.daemonset.memory }}
{{- add 768 (mul 512 (int $m.tables)) (mul 256 (int $m.meshPeers)) }}
{{- end }}

{{/* The setup jobs' pod settings: non-root, where setup.nodeSelector says. */}}
{{- define "fibfleet.jobPod" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.setup.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.setup.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The setup jobs' container settings. */}}
{{- define "fibfleet.jobContainer" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
resources:
  {{- toYaml .Values.setup.resources | nindent 2 }}
{{- end }}
