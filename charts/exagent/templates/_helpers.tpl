{{/*
Names are fixed, as in config/: the CRDs, the webhook configurations and the
ClusterRoles people are bound to are cluster-scoped, so there is one exagent
per cluster whatever the release is called.
*/}}

{{/* Labels of every object: config/default's, plus Helm's own. */}}
{{- define "exagent.labels" -}}
app.kubernetes.io/name: exagent
app.kubernetes.io/part-of: exagent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels of the manager's own objects (Deployment, ConfigMap, metrics). */}}
{{- define "exagent.managerLabels" -}}
{{ include "exagent.labels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* The manager's pods: what the Deployment, Services and PDB select. */}}
{{- define "exagent.selectorLabels" -}}
app.kubernetes.io/component: manager
app.kubernetes.io/name: exagent
{{- end }}

{{/*
exagent.shards: the shards (values.schema.json checks their names) as a
YAML list, for `include … | fromYamlArray`; empty, one manager serves all.
Each shard elects its leader (Lease exagent-manager-SHARD.exagent.io) —
leader-only work is per shard — so shards require leader election rather
than turning it on behind a value that says off.
*/}}
{{- define "exagent.shards" -}}
{{- if and .Values.shards (not .Values.leaderElection.enabled) -}}
{{- fail (printf "shards [%s] need leaderElection.enabled true: each shard elects its own leader (Lease exagent-manager-SHARD.exagent.io), and leader-only work is per shard" (join "," .Values.shards)) -}}
{{- end -}}
{{- toYaml (.Values.shards | default list) -}}
{{- end }}

{{/* The manager image: repository@digest, or repository:tag (default appVersion). */}}
{{- define "exagent.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else if eq .Values.image.tag "latest" -}}
{{- fail "image.tag latest: a restart or a new node could run another version than the rest; leave it empty for the chart's appVersion, or pin a release (or image.digest)" -}}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
exagent.objects: the objects of one of files/config's copies (a YAML stream)
as a list, for `include … | fromYamlArray`.
*/}}
{{- define "exagent.objects" -}}
{{- $root := index . 0 -}}
{{- $objs := list -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($root.Files.Get (index . 1)) -1 -}}
{{- $o := fromYaml $doc -}}
{{- if and $o $o.kind -}}
{{- $objs = append $objs $o -}}
{{- end -}}
{{- end -}}
{{- toYaml $objs -}}
{{- end }}

{{/* The webhook Service, as kustomize names it. */}}
{{- define "exagent.webhookService" -}}exagent-webhook-service{{- end }}

{{/* Whether cert-manager provides the certificates. */}}
{{- define "exagent.certManager" -}}
{{- $src := .Values.webhook.certificates.source -}}
{{- if eq $src "certManager" -}}true
{{- else if ne $src "secret" -}}
{{- fail (printf "webhook.certificates.source %q: must be certManager or secret" $src) -}}
{{- end -}}
{{- end }}
