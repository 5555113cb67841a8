{{/*
Names, labels, the rendered rag-monitor config and the checks the JSON schema cannot express.
Every helper takes a context with .Values, .Release and .Chart: the chart's own root context, or
a parent chart's `index .Subcharts "rag-monitor"` in sidecar mode.
*/}}

{{/* The literal default (not .Chart.Name): an alias such as `ragMonitor` would put capitals in
resource names. */}}
{{- define "rag-monitor.name" -}}
{{- default "rag-monitor" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rag-monitor.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rag-monitor.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "rag-monitor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rag-monitor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rag-monitor.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rag-monitor.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rag-monitor
{{- end -}}

{{- define "rag-monitor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rag-monitor.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "rag-monitor.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "rag-monitor.receiverSecretName" -}}
{{- default (printf "%s-receiver-token" (include "rag-monitor.fullname" .)) .Values.receiverAuth.existingSecret -}}
{{- end -}}

{{- define "rag-monitor.dataDir" -}}/var/lib/rag-monitor{{- end -}}
{{- define "rag-monitor.configDir" -}}/etc/rag-monitor{{- end -}}

{{/*
The config file: the user's `config` with the listen addresses the mode needs and the store on
the data volume. Receivers bind 0.0.0.0 only in standalone mode (behind a bearer token); the
admin server always binds 0.0.0.0 so Prometheus and the kubelet probes reach it.
*/}}
{{- define "rag-monitor.configYaml" -}}
{{- $cfg := deepCopy (default dict .Values.config) -}}
{{- $listen := ternary "127.0.0.1" "0.0.0.0" (eq .Values.mode "sidecar") -}}
{{- $forced := dict
      "receivers" (dict
        "http" (dict "host" $listen "port" (int .Values.ports.otlpHttp))
        "grpc" (dict "host" $listen "port" (int .Values.ports.otlpGrpc)))
      "admin" (dict "host" "0.0.0.0" "port" (int .Values.ports.metrics)) -}}
{{- $cfg = mergeOverwrite $cfg $forced -}}
{{- $exporters := default dict $cfg.exporters -}}
{{- $store := default dict $exporters.store -}}
{{- if not (hasKey $store "path") -}}
{{- $_ := set $store "path" (printf "%s/results.sqlite3" (include "rag-monitor.dataDir" .)) -}}
{{- $_ := set $exporters "store" $store -}}
{{- $_ := set $cfg "exporters" $exporters -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* What the schema cannot check; called by every template that depends on it. */}}
{{- define "rag-monitor.validate" -}}
{{- $deadline := 10.0 -}}
{{- if hasKey (default dict .Values.config) "shutdown_deadline_seconds" -}}
{{- $deadline = float64 .Values.config.shutdown_deadline_seconds -}}
{{- end -}}
{{- if le (float64 .Values.terminationGracePeriodSeconds) $deadline -}}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed config.shutdown_deadline_seconds (%v): Kubernetes would kill rag-monitor before it drains" .Values.terminationGracePeriodSeconds $deadline) -}}
{{- end -}}
{{- $pdb := .Values.podDisruptionBudget -}}
{{- if and (ne (toString $pdb.minAvailable) "") (ne (toString $pdb.maxUnavailable) "") -}}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" -}}
{{- end -}}
{{- if eq .Values.mode "sidecar" -}}
{{- if or .Values.autoscaling.enabled .Values.podDisruptionBudget.enabled .Values.service.headless -}}
{{- fail "autoscaling, podDisruptionBudget and service.headless apply to mode: standalone only (a sidecar scales with its app)" -}}
{{- end -}}
{{- end -}}
{{- $ports := list (int .Values.ports.otlpGrpc) (int .Values.ports.otlpHttp) (int .Values.ports.metrics) -}}
{{- if ne (len (uniq $ports)) 3 -}}
{{- fail "ports.otlpGrpc, ports.otlpHttp and ports.metrics must differ" -}}
{{- end -}}
{{- end -}}
