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
{{- define "rag-monitor.redisPasswordDir" -}}/var/run/secrets/rag-monitor/redis{{- end -}}

{{/* The headless Service of the replicas (service.headless, or always in gateway mode). */}}
{{- define "rag-monitor.headlessName" -}}
{{- printf "%s-headless" (include "rag-monitor.fullname" .) -}}
{{- end -}}

{{/* Fleet mode: the Redis URL comes from a Secret. */}}
{{- define "rag-monitor.fleetEnabled" -}}
{{- if .Values.fleet.redis.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
The config file: the user's `config` with the listen addresses the mode needs and the store on
the data volume (unless a store URL comes from a Secret: url and path exclude each other).
Receivers bind 0.0.0.0 only outside sidecar mode (behind a bearer token); the admin server always
binds 0.0.0.0 so Prometheus and the kubelet probes reach it. In fleet mode the fleet size assumed
at start (replicas_hint) defaults to the replica count (the HPA's maximum: the conservative share
of the budget), and the mounted Redis password file is named.
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
{{- if and (not .Values.store.existingSecret) (not (hasKey $store "path")) -}}
{{- $_ := set $store "path" (printf "%s/results.sqlite3" (include "rag-monitor.dataDir" .)) -}}
{{- $_ := set $exporters "store" $store -}}
{{- $_ := set $cfg "exporters" $exporters -}}
{{- end -}}
{{- if include "rag-monitor.fleetEnabled" . -}}
{{- $fleet := default dict $cfg.fleet -}}
{{- if and (ne .Values.mode "sidecar") (not (hasKey $fleet "replicas_hint")) -}}
{{- $hint := ternary .Values.autoscaling.maxReplicas .Values.replicaCount .Values.autoscaling.enabled -}}
{{- $_ := set $fleet "replicas_hint" (int $hint) -}}
{{- end -}}
{{- if .Values.fleet.redis.passwordSecret -}}
{{- $_ := set $fleet "redis_password_file" (printf "%s/password" (include "rag-monitor.redisPasswordDir" .)) -}}
{{- end -}}
{{- if $fleet -}}
{{- $_ := set $cfg "fleet" $fleet -}}
{{- end -}}
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
{{- $config := default dict .Values.config -}}
{{- $cfgFleet := default dict $config.fleet -}}
{{- $cfgStore := default dict (default dict $config.exporters).store -}}
{{- if and (eq .Values.mode "gateway") (not .Values.fleet.redis.existingSecret) -}}
{{- fail "mode: gateway needs fleet.redis.existingSecret: an existing Secret holding the Redis URL (key fleet.redis.secretKey). The replicas behind the gateway share sampling decisions and one judge budget on Redis; a fleet without Redis is not a fleet" -}}
{{- end -}}
{{- if and .Values.fleet.redis.passwordSecret (not .Values.fleet.redis.existingSecret) -}}
{{- fail "fleet.redis.passwordSecret needs fleet.redis.existingSecret (the Secret holding the Redis URL)" -}}
{{- end -}}
{{- if and (hasKey $cfgFleet "redis_password_file") (not .Values.fleet.redis.existingSecret) -}}
{{- fail "config.fleet.redis_password_file needs fleet.redis.existingSecret (the Secret holding the Redis URL)" -}}
{{- end -}}
{{- if and (hasKey $cfgFleet "redis_password_file") .Values.fleet.redis.passwordSecret -}}
{{- fail "set fleet.redis.passwordSecret or config.fleet.redis_password_file, not both" -}}
{{- end -}}
{{- if and .Values.store.existingSecret (hasKey $cfgStore "path") -}}
{{- fail "store.existingSecret gives the store a URL: remove config.exporters.store.path (url and path exclude each other)" -}}
{{- end -}}
{{- if and .Values.store.passwordSecret (not .Values.store.existingSecret) -}}
{{- fail "store.passwordSecret needs store.existingSecret (the Secret holding the store URL)" -}}
{{- end -}}
{{- if eq .Values.mode "sidecar" -}}
{{- if or .Values.autoscaling.enabled .Values.podDisruptionBudget.enabled .Values.service.headless -}}
{{- fail "autoscaling, podDisruptionBudget and service.headless apply to mode: standalone and gateway only (a sidecar scales with its app)" -}}
{{- end -}}
{{- end -}}
{{- $ports := list (int .Values.ports.otlpGrpc) (int .Values.ports.otlpHttp) (int .Values.ports.metrics) -}}
{{- if ne (len (uniq $ports)) 3 -}}
{{- fail "ports.otlpGrpc, ports.otlpHttp and ports.metrics must differ" -}}
{{- end -}}
{{- end -}}
