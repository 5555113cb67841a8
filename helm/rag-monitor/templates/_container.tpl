{{/*
The rag-monitor container, its volumes and pod metadata. The Deployment (standalone) uses them
directly; in sidecar mode a parent chart includes the public "rag-monitor.sidecar.*" templates
(bottom of this file) with `index .Subcharts "rag-monitor"` as the context.
*/}}

{{- define "rag-monitor.secretEnv" -}}
{{- if ne .Values.mode "sidecar" }}
{{- range $key := list "RAG_MONITOR_RECEIVERS__HTTP__BEARER_TOKEN" "RAG_MONITOR_RECEIVERS__GRPC__BEARER_TOKEN" }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "rag-monitor.receiverSecretName" $ }}
      key: {{ $.Values.receiverAuth.secretKey }}
{{- end }}
{{- end }}
{{- with .Values.adminAuth.existingSecret }}
- name: RAG_MONITOR_ADMIN__BEARER_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.adminAuth.secretKey }}
{{- end }}
{{- with .Values.reviewAuth.existingSecret }}
- name: RAG_MONITOR_ADMIN__REVIEW_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.reviewAuth.secretKey }}
{{- end }}
{{- with .Values.judgeApiKey.secretName }}
- name: RAG_MONITOR_JUDGE__API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.judgeApiKey.secretKey }}
{{- end }}
{{- with .Values.fleet.redis.existingSecret }}
- name: RAG_MONITOR_FLEET__REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.fleet.redis.secretKey }}
{{- end }}
{{- with .Values.store.existingSecret }}
- name: RAG_MONITOR_EXPORTERS__STORE__URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.store.secretKey }}
{{- end }}
{{- with .Values.store.passwordSecret }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.store.passwordKey }}
{{- end }}
{{- end -}}

{{- define "rag-monitor.probe" -}}
{{- $p := index . 0 -}}
{{- $port := index . 1 -}}
httpGet:
  path: {{ $p.path }}
  port: {{ $port }}
initialDelaySeconds: {{ $p.initialDelaySeconds }}
periodSeconds: {{ $p.periodSeconds }}
timeoutSeconds: {{ $p.timeoutSeconds }}
failureThreshold: {{ $p.failureThreshold }}
{{- end -}}

{{/* One list item: the container. */}}
{{- define "rag-monitor.container" -}}
{{- include "rag-monitor.validate" . -}}
{{- $sidecar := eq .Values.mode "sidecar" -}}
{{- $metricsPort := int .Values.ports.metrics -}}
- name: rag-monitor
  image: {{ include "rag-monitor.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if and $sidecar .Values.sidecar.native }}
  # Native sidecar (an init container that keeps running): up before the app, down after it.
  restartPolicy: Always
  {{- end }}
  command: ["rag-monitor"]
  args: ["serve", "-c", "{{ include "rag-monitor.configDir" . }}/config.yaml"]
  ports:
    {{- if not $sidecar }}
    - name: otlp-grpc
      containerPort: {{ .Values.ports.otlpGrpc }}
      protocol: TCP
    - name: otlp-http
      containerPort: {{ .Values.ports.otlpHttp }}
      protocol: TCP
    - name: metrics
      containerPort: {{ $metricsPort }}
      protocol: TCP
    {{- else }}
    # Receivers listen on the pod's loopback: only the metrics port is reachable from outside.
    - name: rag-mon-metrics
      containerPort: {{ $metricsPort }}
      protocol: TCP
    {{- end }}
  env:
    # The root filesystem is read-only: no bytecode cache writes.
    - name: PYTHONDONTWRITEBYTECODE
      value: "1"
    {{- with include "rag-monitor.secretEnv" . | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with .Values.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  livenessProbe:
    {{- include "rag-monitor.probe" (list .Values.probes.liveness $metricsPort) | nindent 4 }}
  readinessProbe:
    {{- include "rag-monitor.probe" (list .Values.probes.readiness $metricsPort) | nindent 4 }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: rag-monitor-config
      mountPath: {{ include "rag-monitor.configDir" . }}
      readOnly: true
    - name: rag-monitor-data
      mountPath: {{ include "rag-monitor.dataDir" . }}
    - name: rag-monitor-tmp
      mountPath: /tmp
    {{- if .Values.fleet.redis.passwordSecret }}
    - name: rag-monitor-redis-password
      mountPath: {{ include "rag-monitor.redisPasswordDir" . }}
      readOnly: true
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* List items: the volumes the container mounts. */}}
{{- define "rag-monitor.volumes" -}}
- name: rag-monitor-config
  configMap:
    name: {{ include "rag-monitor.fullname" . }}
- name: rag-monitor-data
  emptyDir:
    {{- with .Values.dataVolume.sizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
- name: rag-monitor-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with .Values.fleet.redis.passwordSecret }}
- name: rag-monitor-redis-password
  secret:
    secretName: {{ . }}
    items:
      - key: {{ $.Values.fleet.redis.passwordKey }}
        path: password
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod annotations: a config change rolls the pods. */}}
{{- define "rag-monitor.podAnnotations" -}}
checksum/rag-monitor-config: {{ include "rag-monitor.configYaml" . | sha256sum }}
{{- end -}}

{{/* ===== Public API for sidecar mode (see README "Sidecar mode") ===== */}}

{{/* Under the pod's `containers:` (or `initContainers:` with sidecar.native: true). */}}
{{- define "rag-monitor.sidecar.container" -}}
{{- if ne .Values.mode "sidecar" -}}
{{- fail "rag-monitor.sidecar.container needs the rag-monitor dependency's values to set mode: sidecar" -}}
{{- end -}}
{{- include "rag-monitor.container" . -}}
{{- end -}}

{{/* Under the pod's `volumes:`. */}}
{{- define "rag-monitor.sidecar.volumes" -}}
{{- include "rag-monitor.volumes" . -}}
{{- end -}}

{{/* Under the pod template's `metadata.labels:` (the PodMonitor selects on it). */}}
{{- define "rag-monitor.sidecar.podLabels" -}}
rag-monitor.io/sidecar: {{ include "rag-monitor.fullname" . }}
{{- end -}}

{{/* Under the pod template's `metadata.annotations:`. */}}
{{- define "rag-monitor.sidecar.podAnnotations" -}}
{{ include "rag-monitor.podAnnotations" . }}
{{- end -}}
