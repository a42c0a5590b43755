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

{{- define "fibfleet.gossipSecret" -}}
{{- default (printf "%s-gossip" (include "fibfleet.fullname" .)) .Values.gossip.existingSecret }}
{{- end }}

{{- define "fibfleet.etcdName" -}}
{{- printf "%s-etcd" (include "fibfleet.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The etcd client URLs the nodes use: the bundled members' stable names, or the external endpoints. */}}
{{- define "fibfleet.etcdEndpoints" -}}
{{- if .Values.etcd.bundled.enabled }}
{{- $name := include "fibfleet.etcdName" . }}
{{- $urls := list }}
{{- range $i := until (int .Values.etcd.bundled.replicas) }}
{{- $urls = append $urls (printf "http://%s-%d.%s-headless.%s.svc:2379" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- join "," $urls }}
{{- else }}
{{- join "," .Values.etcd.external.endpoints }}
{{- end }}
{{- end }}

{{/*
The settings the chart owns, merged over each node's file: the fleet's name, its
etcd (with the mounted TLS and password files), the mounted gossip key.
*/}}
{{- define "fibfleet.chartConfig" -}}
{{- $etcd := dict "endpoints" (splitList "," (include "fibfleet.etcdEndpoints" .)) }}
{{- if and (not .Values.etcd.bundled.enabled) .Values.etcd.external.tlsSecret }}
{{- $_ := set $etcd "ca" "/etc/fibfleet/etcd-tls/ca.crt" }}
{{- $_ := set $etcd "cert" "/etc/fibfleet/etcd-tls/tls.crt" }}
{{- $_ := set $etcd "key" "/etc/fibfleet/etcd-tls/tls.key" }}
{{- end }}
{{- if and (not .Values.etcd.bundled.enabled) .Values.etcd.external.username }}
{{- $_ := set $etcd "username" .Values.etcd.external.username }}
{{- $_ := set $etcd "password_file" "/etc/fibfleet/etcd-auth/password" }}
{{- end }}
{{- $gossip := dict "key_file" "/etc/fibfleet/gossip/key" "port" .Values.ports.gossip }}
{{- dict "cluster" (dict "name" .Values.clusterName "etcd" $etcd "gossip" $gossip) | toYaml }}
{{- end }}
