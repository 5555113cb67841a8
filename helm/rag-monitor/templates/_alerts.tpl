{{/*
The alert rules, written once: the PrometheusRule renders them and hack/gen_rules.py writes the
same groups (default values) to alerts/rag-monitor-rules.yaml for Prometheus without the
operator. docs/runbooks.md has one section per alert (the runbook_url anchors).

Counters are summed across replicas by `alerts.groupBy` (one rag-monitor deployment) before any
ratio is taken; every alert on a ratio has a guard on the number of evaluations, calls or spans
behind it, so a handful of samples never pages anyone. The release and regression alerts read
statistics rag-monitor computes itself (an anytime-valid interval, a sequential detector whose
alarm level bounds false alarms), which every replica of a fleet exports alike: they are joined
by max, not summed. Output: a YAML list of rule groups.
*/}}

{{/* A label-matcher block from (list $ctx "m1" "m2" ...): `{m1,m2,<seriesSelector>}`, or "". */}}
{{- define "rag-monitor.alerts.sel" -}}
{{- $ctx := first . -}}
{{- $all := list -}}
{{- range rest . }}{{ if . }}{{ $all = append $all . }}{{ end }}{{ end -}}
{{- with $ctx.Values.alerts.seriesSelector }}{{ $all = append $all . }}{{ end -}}
{{- if $all }}{{ printf "{%s}" (join "," $all) }}{{ end -}}
{{- end -}}

{{/* labels: + annotations: of a rule from (dict "ctx" $ "a" <alert values> "name" "..." "summary" "..."
"description" "..." ["metric" "..."]). */}}
{{- define "rag-monitor.alerts.meta" -}}
labels:
  severity: {{ .a.severity }}
  {{- with .metric }}
  # Rules that differ only by metric need it statically too (promtool flags them as duplicates).
  metric: {{ . }}
  {{- end }}
  {{- with .ctx.Values.alerts.additionalLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  summary: {{ .summary | quote }}
  description: {{ .description | quote }}
  runbook_url: {{ printf "%s#%s" .ctx.Values.alerts.runbookBaseUrl (lower .name) | quote }}
{{- end -}}

{{- define "rag-monitor.alerts.evaluationGroup" -}}
{{- $ctx := . -}}
{{- $al := .Values.alerts -}}
{{- $by := join ", " (concat $al.groupBy (list "service" "metric") $al.evaluationLabels) -}}
{{- $scored := "outcome=~\"pass|defect\"" -}}
{{- if $al.safetyDefectRate.enabled }}
{{- $a := $al.safetyDefectRate }}
{{- range $metric, $threshold := $a.thresholds }}
{{- $m := printf "metric=%q" $metric }}
- alert: RagMonitorSafetyDefectRateHigh
  expr: |-
    (
      sum by ({{ $by }}) (rate(rag_monitor_evaluation_weight_total{{ include "rag-monitor.alerts.sel" (list $ctx $m "outcome=\"defect\"") }}[{{ $a.window }}]))
      /
      sum by ({{ $by }}) (rate(rag_monitor_evaluation_weight_total{{ include "rag-monitor.alerts.sel" (list $ctx $m $scored) }}[{{ $a.window }}]))
    ) > {{ $threshold }}
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_evaluations_total{{ include "rag-monitor.alerts.sel" (list $ctx $m $scored) }}[{{ $a.window }}])) >= {{ $a.minEvaluations }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorSafetyDefectRateHigh" "metric" $metric
       "summary" (printf "{{ $labels.service }}: %s defect rate {{ $value | humanizePercentage }} over %s" $metric $a.window)
       "description" (printf "The population (weighted) defect rate of the safety metric %s for service {{ $labels.service }} has been above %v over the last %s (at least %v scored evaluations across replicas)." $metric $threshold $a.window $a.minEvaluations)) | nindent 2 }}
{{- end }}
{{- end }}
{{- $detBy := join ", " (concat $al.groupBy (list "service" "metric")) -}}
{{- if $al.releaseRegression.enabled }}
{{- $a := $al.releaseRegression }}
{{- $relBy := join ", " (concat $al.groupBy (list "service" "metric" "baseline" "candidate")) }}
{{- $candBy := join ", " (concat $al.groupBy (list "service" "metric" "candidate")) }}
{{- /* Every replica exports the same comparison (fleet-wide data), so max, not sum, joins them. */}}
- alert: RagMonitorReleaseRegressed
  expr: |-
    max by ({{ $relBy }}) (rag_monitor_release_defect_rate_difference_lower{{ include "rag-monitor.alerts.sel" (list $ctx) }}) > {{ $a.margin }}
    and on ({{ $candBy }})
    max by ({{ $candBy }}) (label_replace(rag_monitor_release_evaluations{{ include "rag-monitor.alerts.sel" (list $ctx) }}, "candidate", "$1", "version", "(.*)")) >= {{ $a.minEvaluations }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorReleaseRegressed"
       "summary" "{{ $labels.service }}: {{ $labels.metric }} defect rate of {{ $labels.candidate }} is at least {{ $value | humanizePercentage }} above {{ $labels.baseline }}"
       "description" (printf "The anytime-valid confidence sequence on the weighted %s defect rate of release {{ $labels.candidate }} minus release {{ $labels.baseline }} (service {{ $labels.service }}) has had its lower end above %v for %s, with at least %v evaluations of {{ $labels.candidate }}: the new release is worse, not by chance. /api/releases and the status page show both rates and the routes/models that carry the change." "{{ $labels.metric }}" $a.margin $a.for $a.minEvaluations)) | nindent 2 }}
{{- end }}
{{- if $al.qualityRegression.enabled }}
{{- $a := $al.qualityRegression }}
{{- $m := printf "metric=~%q" (join "|" $a.metrics) }}
{{- range $rule := list (list "RagMonitorQualityScoreRegressed" "score" "mean score fell" "mean score")
                        (list "RagMonitorQualityDefectRateRegressed" "defect_rate" "defect rate rose" "weighted defect rate") }}
{{- $stat := printf "statistic=%q" (index $rule 1) }}
{{- /* The detector decides (its alarm level bounds false alarms); the value shown is its evidence. */}}
- alert: {{ index $rule 0 }}
  expr: |-
    max by ({{ $detBy }}) (rag_monitor_regression_evidence{{ include "rag-monitor.alerts.sel" (list $ctx $m $stat) }})
    and on ({{ $detBy }})
    max by ({{ $detBy }}) (rag_monitor_regression_active{{ include "rag-monitor.alerts.sel" (list $ctx $m $stat) }}) == 1
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" (index $rule 0)
       "summary" (printf "{{ $labels.service }}: {{ $labels.metric }} %s (evidence 10^{{ $value | printf \"%%.1f\" }})" (index $rule 2))
       "description" (printf "rag-monitor's sequential change detector found that the %s of {{ $labels.metric }} for {{ $labels.service }} changed for the worse: its evidence passed the alarm level that bounds false alarms, and the regression has stayed active for %s. /api/regressions and the status page banner give since when, before and after with their interval, and the route, model or version that carries it." (index $rule 3) $a.for)) | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "rag-monitor.alerts.judgeGroup" -}}
{{- $ctx := . -}}
{{- $al := .Values.alerts -}}
{{- $by := join ", " $al.groupBy -}}
{{- $made := "outcome!~\"circuit_open|budget_exhausted\"" -}}
{{- if $al.judgeErrors.enabled }}
{{- $a := $al.judgeErrors }}
- alert: RagMonitorJudgeErrorRateHigh
  expr: |-
    sum by ({{ $by }}) (rate(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx (printf "outcome=~%q" (join "|" $a.outcomes))) }}[{{ $a.window }}]))
    /
    sum by ({{ $by }}) (rate(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx $made) }}[{{ $a.window }}]))
    > {{ $a.threshold }}
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx $made) }}[{{ $a.window }}])) >= {{ $a.minRequests }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorJudgeErrorRateHigh"
       "summary" "{{ $labels.job }}: {{ $value | humanizePercentage }} of judge calls fail"
       "description" (printf "More than %v of the judge calls made over the last %s ended in %s (at least %v calls across replicas): those turns get error outcomes, not scores." $a.threshold $a.window (join ", " $a.outcomes) $a.minRequests)) | nindent 2 }}
{{- end }}
{{- if $al.judgeBudgetExhausted.enabled }}
{{- $a := $al.judgeBudgetExhausted }}
- alert: RagMonitorJudgeBudgetExhausted
  expr: |-
    sum by ({{ $by }}) (rate(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx "outcome=\"budget_exhausted\"") }}[{{ $a.window }}]))
    /
    sum by ({{ $by }}) (rate(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}]))
    > {{ $a.threshold }}
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}])) >= {{ $a.minRequests }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorJudgeBudgetExhausted"
       "summary" "{{ $labels.job }}: {{ $value | humanizePercentage }} of judge calls refused for budget"
       "description" (printf "More than %v of the judge calls over the last %s were refused because the requests/tokens-per-minute budget had no room (at least %v calls across replicas): sampled turns go unevaluated." $a.threshold $a.window $a.minRequests)) | nindent 2 }}
{{- end }}
{{- if $al.judgeCircuitOpen.enabled }}
{{- $a := $al.judgeCircuitOpen }}
- alert: RagMonitorJudgeCircuitOpen
  expr: |-
    max by ({{ $by }}) (min_over_time(rag_monitor_judge_circuit_open{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}])) > 0
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_judge_requests_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}])) >= {{ $a.minRequests }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorJudgeCircuitOpen"
       "summary" "{{ $labels.job }}: judge circuit breaker open"
       "description" (printf "On at least one replica the judge circuit breaker has not closed for %s (and at least %v judge calls were attempted): judge metrics are not being computed." $a.window $a.minRequests)) | nindent 2 }}
{{- end }}
{{- if $al.judgeAgreement.enabled }}
{{- $a := $al.judgeAgreement }}
{{- $agBy := join ", " (concat $al.groupBy (list "metric" "judge_model")) }}
{{- /* Computed from the fleet's verdicts, so every replica exports the same figure: max joins them. */}}
- alert: RagMonitorJudgeAgreementLow
  expr: |-
    max by ({{ $agBy }}) (rag_monitor_judge_agreement_rate_upper{{ include "rag-monitor.alerts.sel" (list $ctx) }}) < {{ $a.floor }}
    and on ({{ $agBy }})
    max by ({{ $agBy }}) (rag_monitor_judge_agreement_reviews{{ include "rag-monitor.alerts.sel" (list $ctx) }}) >= {{ $a.minReviews }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorJudgeAgreementLow"
       "summary" "{{ $labels.metric }}: the judge {{ $labels.judge_model }} agrees with people at most {{ $value | humanizePercentage }} of the time"
       "description" (printf "The 95%% interval on the share of human-reviewed turns where the judge {{ $labels.judge_model }} put {{ $labels.metric }} on the same side of the defect rule as the person has had its upper end below %v for %s, with at least %v reviews: the judge's numbers for this metric are not to be trusted. /api/agreement gives the rate per judge model; compare the prompt_version and judge_model labels of the evaluation series for a change." $a.floor $a.for $a.minReviews)) | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "rag-monitor.alerts.pipelineGroup" -}}
{{- $ctx := . -}}
{{- $al := .Values.alerts -}}
{{- $by := join ", " $al.groupBy -}}
{{- if $al.spansDropped.enabled }}
{{- $a := $al.spansDropped }}
- alert: RagMonitorSpansDropped
  expr: |-
    sum by ({{ $by }}) (rate(rag_monitor_spans_dropped_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}]))
    /
    sum by ({{ $by }}) (rate(rag_monitor_spans_received_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}]))
    > {{ $a.threshold }}
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_spans_received_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}])) >= {{ $a.minSpans }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorSpansDropped"
       "summary" "{{ $labels.job }}: {{ $value | humanizePercentage }} of received spans dropped"
       "description" (printf "More than %v of the spans received over the last %s were dropped (see rag_monitor_spans_dropped_total by reason; at least %v spans received): turns are lost or incomplete." $a.threshold $a.window $a.minSpans)) | nindent 2 }}
{{- end }}
{{- if $al.noSpansReceived.enabled }}
{{- $a := $al.noSpansReceived }}
- alert: RagMonitorNoSpansReceived
  expr: |-
    (
      count by ({{ $by }}) (rag_monitor_pending_traces{{ include "rag-monitor.alerts.sel" (list $ctx) }})
      and on ({{ $by }})
      count by ({{ $by }}) (rag_monitor_pending_traces{{ include "rag-monitor.alerts.sel" (list $ctx) }} offset {{ $a.window }})
    )
    unless on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_spans_received_total{{ include "rag-monitor.alerts.sel" (list $ctx) }}[{{ $a.window }}])) > 0
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorNoSpansReceived"
       "summary" (printf "{{ $labels.job }}: no spans received for %s" $a.window)
       "description" (printf "rag-monitor has been up (scraped) for at least %s and received no span in that time: the app is idle, or its OTLP exporter no longer reaches rag-monitor." $a.window)) | nindent 2 }}
{{- end }}
{{- if $al.evaluationQueueSaturated.enabled }}
{{- $a := $al.evaluationQueueSaturated }}
- alert: RagMonitorEvaluationQueueSaturated
  expr: |-
    max by ({{ $by }}) (
      avg_over_time(rag_monitor_queue_depth{{ include "rag-monitor.alerts.sel" (list $ctx "queue=\"evaluation\"") }}[{{ $a.window }}])
      /
      max_over_time(rag_monitor_queue_capacity{{ include "rag-monitor.alerts.sel" (list $ctx "queue=\"evaluation\"") }}[{{ $a.window }}])
    ) >= {{ $a.fillRatio }}
    and on ({{ $by }})
    sum by ({{ $by }}) (increase(rag_monitor_sampling_decisions_total{{ include "rag-monitor.alerts.sel" (list $ctx "decision=\"sampled\"") }}[{{ $a.window }}])) >= {{ $a.minSampled }}
  for: {{ $a.for }}
  {{- include "rag-monitor.alerts.meta" (dict "ctx" $ctx "a" $a "name" "RagMonitorEvaluationQueueSaturated"
       "summary" "{{ $labels.job }}: evaluation queue {{ $value | humanizePercentage }} full"
       "description" (printf "On at least one replica the evaluation queue was on average at least %v full over the last %s (at least %v conversations sampled): sampled turns are being dropped (rag_monitor_queue_dropped_total{queue=\"evaluation\"})." $a.fillRatio $a.window $a.minSampled)) | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The groups, leaving out any with no enabled rule. */}}
{{- define "rag-monitor.alertGroups" -}}
{{- $groups := list
      (list "rag-monitor.evaluation" (include "rag-monitor.alerts.evaluationGroup" .))
      (list "rag-monitor.judge" (include "rag-monitor.alerts.judgeGroup" .))
      (list "rag-monitor.pipeline" (include "rag-monitor.alerts.pipelineGroup" .)) -}}
{{- $any := false -}}
{{- range $g := $groups }}
{{- with trim (index $g 1) }}
{{- $any = true }}
- name: {{ index $g 0 }}
  rules:
    {{- . | nindent 4 }}
{{- end }}
{{- end }}
{{- if not $any }}[]{{ end -}}
{{- end -}}
