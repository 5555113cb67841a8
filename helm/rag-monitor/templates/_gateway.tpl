{{/*
Gateway mode: an OpenTelemetry Collector (contrib) in front of the replicas. Its pods carry their
own app.kubernetes.io/name ("<name>-gateway"), so the replicas' Deployment and Services never
select them.
*/}}

{{- define "rag-monitor.gateway.fullname" -}}
{{- printf "%s-gateway" (include "rag-monitor.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{- define "rag-monitor.gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-gateway" (include "rag-monitor.name" . | trunc 55 | trimSuffix "-") }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "rag-monitor.gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rag-monitor.gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.gateway.collector.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rag-monitor
{{- end -}}

{{- define "rag-monitor.gateway.image" -}}
{{- $img := .Values.gateway.collector.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository $img.tag -}}
{{- end -}}
{{- end -}}

{{- define "rag-monitor.gateway.healthPort" -}}13133{{- end -}}
{{- define "rag-monitor.gateway.metricsPort" -}}8888{{- end -}}
{{- define "rag-monitor.gateway.configDir" -}}/etc/otelcol{{- end -}}

{{/*
The Collector's config: OTLP in (behind the receiver token when requireToken), traces and logs
out through the loadbalancing exporter keyed by trace id, whose k8s resolver watches the
replicas' headless Service; every replica gets the receivers' bearer token. Then
gateway.collector.config merged over it.
*/}}
{{- define "rag-monitor.gateway.configYaml" -}}
{{- $c := .Values.gateway.collector -}}
{{- $token := "${env:OTLP_BEARER_TOKEN}" -}}
{{- $listen := "${env:MY_POD_IP}" -}}
{{- $grpc := dict "endpoint" (printf "%s:%d" $listen (int .Values.ports.otlpGrpc)) -}}
{{- $http := dict "endpoint" (printf "%s:%d" $listen (int .Values.ports.otlpHttp)) -}}
{{- $extensions := dict "health_check" (dict "endpoint" (printf "%s:%s" $listen (include "rag-monitor.gateway.healthPort" .))) -}}
{{- $extensionNames := list "health_check" -}}
{{- if $c.requireToken -}}
{{- $_ := set $extensions "bearertokenauth" (dict "scheme" "Bearer" "token" $token) -}}
{{- $extensionNames = append $extensionNames "bearertokenauth" -}}
{{- $_ := set $grpc "auth" (dict "authenticator" "bearertokenauth") -}}
{{- $_ := set $http "auth" (dict "authenticator" "bearertokenauth") -}}
{{- end -}}
{{- $pipeline := dict "receivers" (list "otlp") "processors" (list "memory_limiter" "batch") "exporters" (list "loadbalancing") -}}
{{- $cfg := dict
      "extensions" $extensions
      "receivers" (dict "otlp" (dict "protocols" (dict "grpc" $grpc "http" $http)))
      "processors" (dict
        "memory_limiter" (dict "check_interval" "1s" "limit_percentage" 80 "spike_limit_percentage" 20)
        "batch" dict)
      "exporters" (dict
        "loadbalancing" (dict
          "routing_key" "traceID"
          "protocol" (dict "otlp" (dict
            "tls" (dict "insecure" true)
            "headers" (dict "authorization" (printf "Bearer %s" $token))))
          "resolver" (dict "k8s" (dict
            "service" (printf "%s.%s" (include "rag-monitor.headlessName" .) .Release.Namespace)
            "ports" (list (int .Values.ports.otlpGrpc))))))
      "service" (dict
        "extensions" $extensionNames
        "telemetry" (dict "metrics" (dict "readers" (list (dict "pull" (dict "exporter" (dict "prometheus" (dict
          "host" $listen "port" (int (include "rag-monitor.gateway.metricsPort" .)))))))))
        "pipelines" (dict "traces" $pipeline "logs" (deepCopy $pipeline))) -}}
{{- $cfg = mergeOverwrite $cfg (deepCopy (default dict $c.config)) -}}
{{- toYaml $cfg -}}
{{- end -}}
