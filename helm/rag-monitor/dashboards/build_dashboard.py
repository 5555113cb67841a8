"""Builds the rag-monitor Grafana dashboard: ``rag-monitor.json`` beside this file is its output.

    python helm/rag-monitor/dashboards/build_dashboard.py           # rewrite rag-monitor.json
    python helm/rag-monitor/dashboards/build_dashboard.py --check   # exit 1 when it is stale

Edit this file, never the JSON: a test fails when the checked-in JSON differs from the output.
Built with Grafana's own dashboards-as-code library, ``grafana-foundation-sdk`` (the Grafana 11.6
line, schemaVersion 41). Every selector goes through the helpers below, so a panel cannot forget
a dashboard variable, and counters that stay absent until their first event (drops, rejections,
caps) fall back to a labelled zero while the sidecar is scraped: on call, "none = 0" reads as
"healthy", whereas an empty panel reads as "broken scrape".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from grafana_foundation_sdk.builders import bargauge, dashboard as dash, heatmap, prometheus, stat, timeseries
from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard as model
from grafana_foundation_sdk.models.heatmap import HeatmapColorMode, HeatmapColorScale
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

__all__ = ["build", "render", "OUTPUT"]

OUTPUT = Path(__file__).with_name("rag-monitor.json")
DS = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
RI = "$__rate_interval"
INST = 'instance=~"$instance"'
# Evaluation series carry the service and the allow-listed labels; `=~".*"` (the All value) also
# matches series without the label, so route/model work when they are not allow-listed.
EVAL = f'service=~"$service", route=~"$route", model=~"$model", metric=~"$metric", {INST}'
ROLLING = f'service=~"$service", metric=~"$metric", window="$window", {INST}'
# A scrape-time gauge every replica exposes: present exactly while the sidecar is scraped.
ALIVE = f"sum(rag_monitor_pending_traces{{{INST}}})"
EVALS, WEIGHTS = "rag_monitor_evaluations_total", "rag_monitor_evaluation_weight_total"
JUDGE = "rag_monitor_judge_requests_total"
JUDGE_REFUSED = 'outcome=~"circuit_open|budget_exhausted"'
TRACE_LINK = ('/explore?schemaVersion=1&panes={"trace":{"datasource":"${trace_datasource}","queries":'
              '[{"refId":"A","datasource":{"type":"tempo","uid":"${trace_datasource}"},"queryType":"traceql",'
              '"query":"${__value.raw}"}],"range":{"from":"${__from}","to":"${__to}"}}}')


def rate(name: str, matchers: str, by: str = "", window: str = RI) -> str:
    grouping = f" by ({by}) " if by else ""
    return f"sum{grouping}(rate({name}{{{matchers}}}[{window}]))"


def or_none(expr: str, label: str = "") -> str:
    """``expr``, or a zero labelled ``label="none"`` while the sidecar is scraped but ``expr`` is empty."""
    zero = f"0 * {ALIVE}"
    if label:
        zero = f'label_replace({zero}, "{label}", "none", "{label}", "")'
    # Parenthesised whole: `or` binds looser than arithmetic, and callers add and divide these.
    return f"(({expr}) or on() {zero})"


def population_rate() -> str:
    """Per metric, Horvitz-Thompson: defect weight / (pass + defect weight) over all replicas in $window."""
    defect = rate(WEIGHTS, f'outcome="defect", {EVAL}', "metric", "$window")
    scored = rate(WEIGHTS, f'outcome=~"pass|defect", {EVAL}', "metric", "$window")
    count = f'sum by (metric) (increase({EVALS}{{outcome=~"pass|defect", {EVAL}}}[$window]))'
    # A metric without any defect yet shows 0; too few evaluations show nothing rather than noise.
    return f"({defect} or {scored} * 0) / {scored} and on (metric) {count} >= $min_evaluations"


def refused_share() -> str:
    """Per metric, weighted: unscored_refused / (pass + defect + unscored_refused) over all replicas
    in $window: the judge refused or a content filter blocked the call (possibly harmful, not scored)."""
    refused = rate(WEIGHTS, f'outcome="unscored_refused", {EVAL}', "metric", "$window")
    judged = rate(WEIGHTS, f'outcome=~"pass|defect|unscored_refused", {EVAL}', "metric", "$window")
    count = f'sum by (metric) (increase({EVALS}{{outcome=~"pass|defect|unscored_refused", {EVAL}}}[$window]))'
    return f"({refused} or {judged} * 0) / {judged} and on (metric) {count} >= $min_evaluations"


def ratio_of(part: str, whole: str) -> str:
    return f"{or_none(part)} / {whole}"


def query(expr: str, legend: str = "", ref: str = "A", *, fmt: PromQueryFormat | None = None,
          exemplar: bool = False) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).ref_id(ref).datasource(DS).legend_format(legend or "__auto")
    if fmt is not None:
        q = q.format(fmt)
    return q.exemplar(True) if exemplar else q


def targets(*pairs: tuple[str, str]) -> list[prometheus.Dataquery]:
    return [query(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(pairs)]


def with_trace_links(panel: timeseries.Panel | heatmap.Panel) -> timeseries.Panel | heatmap.Panel:
    """Exemplars carry ``trace_id``: a link on that field opens the trace in ``$trace_datasource``."""
    link = dash.DashboardLink("Open trace ${__value.raw}").url(TRACE_LINK).target_blank(True).build()
    return panel.override_by_name("trace_id", [model.DynamicConfigValue(id_val="links", value=[link])])


def series(title: str, description: str, unit: str, queries: Sequence[prometheus.Dataquery], *,
           w: int = 8, h: int = 8, stacked: bool = False, max_value: float | None = None,
           min_value: float | None = 0) -> timeseries.Panel:
    panel = (timeseries.Panel().title(title).description(description).datasource(DS).unit(unit)
             .targets(list(queries)).span(w).height(h).line_width(1).fill_opacity(10)
             .legend(cb.VizLegendOptions().display_mode(common.LegendDisplayMode.LIST)
                     .placement(common.LegendPlacement.BOTTOM).show_legend(True))
             .tooltip(cb.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING)))
    if stacked:
        panel = panel.stacking(cb.StackingConfig().mode(common.StackingMode.NORMAL)).fill_opacity(40)
    if max_value is not None:
        panel = panel.max(max_value)
    if min_value is not None:
        panel = panel.min(min_value)
    return panel


def thresholds(*steps: tuple[float | None, str]) -> dash.ThresholdsConfig:
    return dash.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(
        [model.Threshold(value=v, color=c) for v, c in steps])


def single(title: str, description: str, unit: str, expr: str, steps: Sequence[tuple[float | None, str]],
           legend: str = "", mappings: Sequence[model.ValueMapping] = ()) -> stat.Panel:
    panel = (stat.Panel().title(title).description(description).datasource(DS).unit(unit)
             .with_target(query(expr, legend)).span(3).height(4).thresholds(thresholds(*steps))
             .color_mode(common.BigValueColorMode.BACKGROUND).graph_mode(common.BigValueGraphMode.AREA)
             .text_mode(common.BigValueTextMode.VALUE_AND_NAME if legend else common.BigValueTextMode.VALUE)
             .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    return panel.mappings(list(mappings)) if mappings else panel


GOOD_LOW = ((None, "green"), (0.01, "orange"), (0.05, "red"))
CIRCUIT = model.ValueMap(options={
    "0": model.ValueMappingResult(text="closed", color="green", index=0),
    "0.5": model.ValueMappingResult(text="half-open", color="orange", index=1),
    "1": model.ValueMappingResult(text="open", color="red", index=2)})


def overview() -> list[Builder[model.Panel]]:
    return [
        single("Evaluations/s", "Metric evaluations finished per second over the selection, all outcomes. "
               "0 while traffic flows means sampling or the evaluation queue is stuck: see Pipeline health.",
               "ops", rate(EVALS, EVAL), ((None, "blue"),)),
        single("Highest defect rate", "The metric with the highest population defect rate over $window "
               "(all replicas, weighted by 1/sampling probability). Hidden below $min_evaluations "
               "evaluations. Colours are a guide only: compare with the metric's usual level below.",
               "percentunit", f"topk(1, {population_rate()})", ((None, "green"), (0.1, "orange"),
                                                                        (0.25, "red")), legend="{{metric}}"),
        single("Evaluation errors", "Share of evaluations that ended in error (judge failure, bad judge "
               "reply, internal error): these turns have no score. Check the Judge row first.",
               "percentunit", ratio_of(rate(EVALS, f'outcome="error", {EVAL}'), rate(EVALS, EVAL)), GOOD_LOW),
        single("Judge errors", "Share of judge calls sent that failed or returned an invalid reply "
               "(timeouts, 5xx, rate limits, parse errors). Calls refused locally by the circuit "
               "breaker or budget, and the judge's own refusals and content filters (outcome refused), "
               "are not counted here.", "percentunit", judge_error_ratio(), GOOD_LOW),
        single("Judge latency p90", "90th percentile duration of judge calls including retries.", "s",
               f"histogram_quantile(0.9, {rate('rag_monitor_judge_request_duration_seconds_bucket', INST, 'le')})",
               ((None, "green"), (10, "orange"), (30, "red"))),
        single("Spans dropped", "Share of received spans dropped on purpose (buffers full, malformed, "
               "shutting down). Dropped spans are never evaluated.", "percentunit",
               ratio_of(rate("rag_monitor_spans_dropped_total", INST),
                        rate("rag_monitor_spans_received_total", INST)), GOOD_LOW),
        single("Fullest queue", "Depth / capacity of the fullest bounded queue on any replica. At 100% new "
               "items are dropped and counted.", "percentunit",
               f"max(rag_monitor_queue_depth{{{INST}}} / rag_monitor_queue_capacity{{{INST}}})",
               ((None, "green"), (0.5, "orange"), (0.9, "red"))),
        single("Judge circuit", "Worst judge circuit breaker state over the replicas. Open: judge calls are "
               "refused and judge metrics report errors until it half-opens and a probe succeeds.", "none",
               f"max(rag_monitor_judge_circuit_open{{{INST}}})", ((None, "green"), (0.5, "orange"), (1, "red")),
               mappings=[CIRCUIT]),
    ]


def judge_error_ratio() -> str:
    # refused (the judge refused or a content filter blocked) is an answer about the text, not an error.
    failed = rate(JUDGE, f'outcome!~"ok|refused|circuit_open|budget_exhausted", {INST}')
    rejected = rate("rag_monitor_judge_replies_rejected_total", INST)
    sent = rate(JUDGE, f'outcome!~"circuit_open|budget_exhausted", {INST}')
    return f"({or_none(failed)} + {or_none(rejected)}) / {sent}"


def defect_rate() -> list[Builder[model.Panel]]:
    band = series(
        "Defect rate with 95% band: $metric (per replica, $window)",
        "Rolling defect rate of $metric over the $window window as each replica computes it (solid), with "
        "its 95% Wilson interval (dashed). A real change moves the band, not just the line: worry when "
        "the lower bound rises above the usual rate. Not split by route/model. Hidden below "
        "$min_evaluations evaluations in the window.", "percentunit", targets(
            (f"rag_monitor_defect_rate{{{ROLLING}}} and rag_monitor_window_evaluations{{{ROLLING}}} "
             ">= $min_evaluations", "{{service}} {{instance}}"),
            (f"rag_monitor_defect_rate_lower{{{ROLLING}}} and rag_monitor_window_evaluations{{{ROLLING}}} "
             ">= $min_evaluations", "{{service}} {{instance}} lower 95%"),
            (f"rag_monitor_defect_rate_upper{{{ROLLING}}} and rag_monitor_window_evaluations{{{ROLLING}}} "
             ">= $min_evaluations", "{{service}} {{instance}} upper 95%")),
        max_value=1).line_width(2).fill_opacity(0).override_by_regexp(".* (lower|upper) 95%$", [
            model.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [6, 4]}),
            model.DynamicConfigValue(id_val="custom.lineWidth", value=1)])
    return [
        series("Population defect rate by metric (all replicas, $window)",
               "Share of turns that fail each metric, estimated for ALL traffic: evaluations are weighted "
               "by 1/sampling probability and summed across replicas, over a sliding $window. Use this "
               "for 'how bad is it'; the per-replica bands below say whether a change is significant.",
               "percentunit", [query(population_rate(), "{{metric}}")], w=16, h=9, max_value=1),
        bargauge.Panel().title("Population defect rate now").description(
            "Latest value of the panel on the left, highest first.").datasource(DS).unit("percentunit")
        .with_target(query(f"sort_desc({population_rate()})", "{{metric}}")).span(8).height(9)
        .min(0).max(1).thresholds(thresholds((None, "green"), (0.1, "orange"), (0.25, "red")))
        .display_mode(common.BarGaugeDisplayMode.GRADIENT).orientation(common.VizOrientation.HORIZONTAL)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False)),
        series("Possibly harmful, not scored: refused by the judge or its content filter (all replicas, $window)",
               "Share of each metric's judged turns whose judge call was refused or blocked by the provider's "
               "content filter (outcome unscored_refused), weighted like the defect rate beside it. Not in the "
               "defect rate: a refusal is neither a pass nor a defect, and such turns are often the harmful "
               "ones, so read the two together. evaluation.refused_severity counts them as a defect at a "
               "chosen severity instead (docs/judge-prompts.md).", "percentunit",
               [query(refused_share(), "{{metric}}")], w=24, h=7, max_value=1),
        jailbreak_gap(),
        band.repeat("metric").repeat_direction("h").max_per_row(3),
    ]


def jailbreak_gap() -> timeseries.Panel:
    sel = f'window="$window", {INST}'
    return series(
        "Content risk: jailbreak attempts vs the rest (per replica, $window)",
        "Content-risk defect rate (safety severities and offensive language) of the turns the local detector "
        "flagged as jailbreak attempts, next to the rest; their gap (flagged minus rest, "
        "rag_monitor_jailbreak_defect_rate_difference) is the Azure seed's comparison made online, with its 95% "
        "Newcombe interval (dashed). A gap whose lower bound stays above 0 means attempts get through.", "percentunit", targets(
            (f"rag_monitor_jailbreak_group_defect_rate{{{sel}}}", "{{group}} {{instance}}"),
            (f"rag_monitor_jailbreak_defect_rate_difference{{{sel}}}", "gap {{instance}}"),
            (f"rag_monitor_jailbreak_defect_rate_difference_lower{{{sel}}}", "gap {{instance}} lower 95%"),
            (f"rag_monitor_jailbreak_defect_rate_difference_upper{{{sel}}}", "gap {{instance}} upper 95%")),
        w=24, h=8, max_value=1).override_by_regexp(".* (lower|upper) 95%$", [
            model.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [6, 4]})])


# Release comparisons and the change detector: every replica exports the same values (fleet-wide
# data), so replicas are joined by max, never summed.
REL = f'service=~"$service", metric=~"$metric", {INST}'
PAIR = "service, metric, baseline, candidate"
DASHED = [model.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [6, 4]}),
          model.DynamicConfigValue(id_val="custom.lineWidth", value=1)]


def releases() -> list[Builder[model.Panel]]:
    diff = "rag_monitor_release_defect_rate_difference"
    pair = "{{service}} {{metric}}: {{candidate}} vs {{baseline}}"
    difference = series(
        "Release vs the one before: defect-rate difference with its anytime-valid band",
        "Weighted defect rate of the newest release (candidate) minus the release before it (baseline), per "
        "metric, with the bounds of its anytime-valid confidence sequence (dashed): valid however often this "
        "panel is looked at. Canary: the same minutes of traffic while both versions serve; after a full "
        "rollout, the traffic just before and after the switch. A lower bound above the red line (0, the "
        "default margin of RagMonitorReleaseRegressed) means the candidate is worse, not by chance. Which "
        "route or model carries the change: /api/releases or the status page's release view.",
        "percentunit", targets(
            (f"max by ({PAIR}) ({diff}{{{REL}}})", pair),
            (f"max by ({PAIR}) ({diff}_lower{{{REL}}})", f"{pair} lower"),
            (f"max by ({PAIR}) ({diff}_upper{{{REL}}})", f"{pair} upper")),
        w=16, h=9, min_value=None).line_width(2).fill_opacity(0).override_by_regexp(" (lower|upper)$", DASHED)
    difference = difference.thresholds(thresholds((None, "transparent"), (0, "red"))).thresholds_style(
        cb.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.LINE))
    detector = series(
        "Change detector: evidence against 'nothing changed' vs its alarm level",
        "log10 of the sequential change detector's evidence that a metric's mean score fell or its weighted "
        "defect rate rose (one line per service, metric and statistic), and the alarm level (dashed): at or "
        "above it the regression is active and RagMonitorQualityScoreRegressed / "
        "RagMonitorQualityDefectRateRegressed fire after their for:. The level bounds false alarms on "
        "unchanged traffic; 3 means the data are a thousand times likelier under a change. Since when, before "
        "and after: /api/regressions and the status page banner.", "none", targets(
            ("max by (service, metric, statistic) "
             f"(rag_monitor_regression_evidence{{{REL}}})", "{{service}} {{metric}} {{statistic}}"),
            (f"max by (statistic) (rag_monitor_regression_evidence_threshold{{{REL}}})",
             "alarm level {{statistic}}")),
        w=16, h=8, min_value=None).override_by_regexp("^alarm level", DASHED)
    return [
        difference,
        series("Evaluations per release",
               "Scored evaluations of each version of the app (service.version, the last five per service) "
               "behind the comparison beside it, per metric. A version absent here sends no service.version "
               "or is not evaluated: see docs/guides/releases.md.", "short",
               [query(f"max by (service, metric, version) (rag_monitor_release_evaluations{{{REL}}})",
                      "{{service}} {{version}} {{metric}}")], w=8, h=9),
        detector,
        single("Active regressions", "Service/metric/statistic triples whose change detector reports a "
               "regression now (the page's incident banners). 0 while the sidecar is scraped and nothing is "
               "active.", "none",
               or_none("count(max by (service, metric, statistic) "
                       f"(rag_monitor_regression_active{{{REL}}}) == 1)"),
               ((None, "green"), (1, "red"))).span(4).height(8),
        single("Releases worse than the one before", "Metrics whose candidate release has the lower bound of "
               "its defect-rate difference above 0 now (RagMonitorReleaseRegressed fires after its for:).",
               "none", or_none(f"count(max by ({PAIR}) ({diff}_lower{{{REL}}}) > 0)"),
               ((None, "green"), (1, "red"))).span(4).height(8),
    ]


def scores() -> list[Builder[model.Panel]]:
    dist = (heatmap.Panel().title("Score distribution: $metric").description(
        "How many scores of $metric fell in each bucket of its native scale (0-1, 1-5 rubric, 0-7 "
        "severity) per interval; stronger colour = more turns. A shift of mass toward bad scores is a regression. "
        "Dots are exemplars: hover one and use 'Open trace' to see the turn that scored there.")
        .datasource(DS).span(8).height(9).repeat("metric").repeat_direction("h").max_per_row(3)
        .with_target(query(f"sum by (le) (increase(rag_monitor_score_bucket{{{EVAL}}}[{RI}]))", "{{le}}",
                           fmt=PromQueryFormat.HEATMAP, exemplar=True))
        .calculate(False).rows_frame(heatmap.RowsHeatmapOptions().layout(common.HeatmapCellLayout.LE))
        .y_axis(heatmap.YAxisConfig().unit("none").decimals(1)).cell_values(heatmap.CellValues().unit("short"))
        .color(heatmap.HeatmapColorOptions().mode(HeatmapColorMode.SCHEME).scheme("Blues").steps(64)
               .scale(HeatmapColorScale.EXPONENTIAL).exponent(0.5).fill("dark-blue"))
        .exemplars_color("rgba(255,0,255,0.7)").show_legend().unit("short"))
    mean = (f"sum by (metric) (rate(rag_monitor_score_sum{{{EVAL}}}[{RI}])) / "
            f"sum by (metric) (rate(rag_monitor_score_count{{{EVAL}}}[{RI}]))")
    return [
        series("Mean score by metric", "Average score per metric on its native scale (higher is better for "
               "quality metrics; for safety severities and jailbreak lower is better).", "none",
               [query(mean, "{{metric}}")], w=12),
        series("Scored evaluations/s by metric", "Evaluations that produced a score, per metric. A metric "
               "missing here is skipped or erroring: see Evaluations.", "ops",
               [query(rate("rag_monitor_score_count", EVAL, "metric"), "{{metric}}")], w=12),
        with_trace_links(dist),
    ]


def evaluations() -> list[Builder[model.Panel]]:
    every = rate(EVALS, EVAL, "metric")
    errors = rate(EVALS, f'outcome="error", {EVAL}', "metric")
    skipped = rate(EVALS, f'outcome="skipped", {EVAL}', "metric")
    return [
        series("Evaluations/s by outcome", "pass / defect: scored; error: no score (judge or internal "
               "failure); skipped: the turn lacked an input the metric needs (e.g. no ground truth); "
               "unscored_refused: the judge refused or a content filter blocked the call.", "ops",
               [query(rate(EVALS, EVAL, "outcome"), "{{outcome}}")], stacked=True),
        series("Evaluations/s by metric", "All outcomes, per metric.", "ops", [query(every, "{{metric}}")],
               stacked=True),
        series("Error and skip share by metric", "Share of each metric's evaluations that errored or were "
               "skipped. Errors usually come from the judge; a high skip share means the app does not send "
               "an input the metric needs.", "percentunit", targets(
                   (f"({errors} or {every} * 0) / {every}", "{{metric}} error"),
                   (f"({skipped} or {every} * 0) / {every}", "{{metric}} skipped")), max_value=1),
    ]


def judge() -> list[Builder[model.Panel]]:
    bucket = rate("rag_monitor_judge_request_duration_seconds_bucket", INST, "le")
    latency = series("Judge latency", "Duration of judge calls including retries, all replicas. Rising "
                     "latency with rising timeouts means the judge endpoint is saturated.", "s", [
                         query(f"histogram_quantile({q}, {bucket})", f"p{round(q * 100)}", chr(ord("A") + i),
                               exemplar=True) for i, q in enumerate((0.5, 0.9, 0.99))])
    return [
        with_trace_links(latency),
        series("Judge calls/s by outcome", "ok, or why the call failed. circuit_open and budget_exhausted "
               "were refused locally without calling the judge; refused: the judge declined or its content "
               "filter blocked the text (not an error).", "ops",
               [query(rate(JUDGE, INST, "outcome"), "{{outcome}}")], stacked=True),
        series("Judge error ratio", "Failed or invalid replies / calls sent (errors); and calls refused "
               "locally / all calls (refused). Refusals mean the budget or breaker is protecting the judge.",
               "percentunit", targets(
                   (judge_error_ratio(), "errors"),
                   (ratio_of(rate(JUDGE, f"{JUDGE_REFUSED}, {INST}"), rate(JUDGE, INST)), "refused")),
               max_value=1),
        series("Judge tokens/s by type", "Prompt and completion tokens spent on the judge (cost driver).",
               "short", [query(rate("rag_monitor_judge_tokens_total", f'metric=~"$metric", {INST}', "type"),
                               "{{type}}")], stacked=True),
        series("Judge tokens/s by metric", "Which metrics spend the judge budget, and in which kind of call "
               "(single; combined_rubrics and tonic are shared calls, their tokens split evenly across the "
               "metrics they answer for).", "short",
               [query(rate("rag_monitor_judge_tokens_total", f'metric=~"$metric", {INST}', "metric, call"),
                      "{{metric}} ({{call}})")], stacked=True),
        series("Judge circuit breaker", "Per replica: 0 closed (normal), 0.5 half-open (probing), 1 open "
               "(judge calls refused).", "none", [query(f"max by (instance) (rag_monitor_judge_circuit_open{{{INST}}})",
                                                        "{{instance}}")], max_value=1)
        .line_interpolation(common.LineInterpolation.STEP_AFTER).mappings([CIRCUIT]),
        series("Failed judge attempts/s", "Every failed HTTP attempt, including those a retry recovered. "
               "Attempts failing while calls succeed = retries are absorbing a flaky judge.", "ops",
               [query(or_none(rate("rag_monitor_judge_attempts_failed_total", INST, "outcome"), "outcome"),
                      "{{outcome}}")]),
        series("Judge budget refusals/s", "Judge calls refused because a budget (tokens or requests per "
               "minute) had no room, by limiter.", "ops",
               [query(or_none(rate("rag_monitor_judge_budget_shed_total", INST, "limiter"), "limiter"),
                      "{{limiter}}")]),
        series("Judge budget wait", "Seconds spent waiting for budget per second, by limiter (about the "
               "number of calls waiting at any moment).", "short",
               [query(or_none(rate("rag_monitor_judge_budget_wait_seconds_total", INST, "limiter"), "limiter"),
                      "{{limiter}}")]),
    ]


def pipeline() -> list[Builder[model.Panel]]:
    decisions = "rag_monitor_sampling_decisions_total"
    sampled = rate(decisions, f'decision="sampled", {INST}', "policy")
    sampled_share = f"{sampled} / {rate(decisions, INST, 'policy')}"
    return [
        series("Telemetry received/s", "Spans and log records accepted over OTLP, by transport.", "ops", targets(
            (rate("rag_monitor_spans_received_total", INST, "transport"), "spans {{transport}}"),
            (or_none(rate("rag_monitor_logs_received_total", INST, "transport"), "transport"),
             "logs {{transport}}"))),
        series("Dropped and rejected/s", "Anything lost on purpose: spans/logs dropped by reason, items "
               "dropped by full queues, OTLP requests answered with an error. 'none' at 0 = nothing lost.",
               "ops", targets(
                   (or_none(rate("rag_monitor_spans_dropped_total", INST, "reason"), "reason"), "spans: {{reason}}"),
                   (or_none(rate("rag_monitor_logs_dropped_total", INST, "reason"), "reason"), "logs: {{reason}}"),
                   (or_none(rate("rag_monitor_queue_dropped_total", INST, "queue"), "queue"), "queue: {{queue}}"),
                   (or_none(rate("rag_monitor_requests_rejected_total", INST, "transport, reason"), "reason"),
                    "rejected: {{transport}} {{reason}}"))),
        series("Queue fill", "Depth / capacity of each bounded queue (worst replica). Near 100% the "
               "queue drops: evaluations cannot keep up (judge slow or budget too small).", "percentunit",
               [query(f"max by (queue) (rag_monitor_queue_depth{{{INST}}} / rag_monitor_queue_capacity{{{INST}}})",
                      "{{queue}}")], max_value=1),
        series("Turn assembly/s", "Turns built from complete traces, by instrumentation convention; traces "
               "that held no turn, and traces assembled early because a buffer limit was hit.", "ops", targets(
                   (rate("rag_monitor_turns_assembled_total", INST, "convention"), "turns {{convention}}"),
                   (or_none(rate("rag_monitor_traces_without_turn_total", INST, "reason"), "reason"),
                    "no turn: {{reason}}"),
                   (or_none(rate("rag_monitor_traces_evicted_total", INST, "reason"), "reason"),
                    "evicted: {{reason}}"))),
        series("Buffered now", "Per replica: traces waiting to complete, their spans, and open "
               "conversations. Steady growth = traces never complete (missing root span?).", "short", targets(
                   (f"sum by (instance) (rag_monitor_pending_traces{{{INST}}})", "traces {{instance}}"),
                   (f"sum by (instance) (rag_monitor_pending_spans{{{INST}}})", "spans {{instance}}"),
                   (f"sum by (instance) (rag_monitor_open_conversations{{{INST}}})", "conversations {{instance}}"))),
        series("Conversations closed and forwarding/s", "Conversations closed by reason; OTLP bodies "
               "forwarded to the downstream collector by outcome ('none' when forwarding is off).", "ops",
               targets(
                   (or_none(rate("rag_monitor_conversations_closed_total", INST, "reason"), "reason"),
                    "closed: {{reason}}"),
                   (or_none(rate("rag_monitor_forward_total", INST, "outcome"), "outcome"), "forward: {{outcome}}"))),
        series("Sampling probability", "Inclusion probability of adaptive policies per replica (gauge), "
               "and the share of conversations each policy actually sampled. Falling probability = "
               "traffic grew past the budget; estimates stay unbiased (weights), intervals get wider.",
               "percentunit", targets(
                   (f"max by (policy, instance) (rag_monitor_sampling_probability{{{INST}}})",
                    "p {{policy}} {{instance}}"),
                   (sampled_share, "sampled share {{policy}}")),
               max_value=1),
        series("Sampling decisions/s", "Per policy: sampled, not_sampled, and shed (dropped because the "
               "evaluation queue was full).", "ops",
               [query(rate("rag_monitor_sampling_decisions_total", INST, "policy, decision"),
                      "{{policy}} {{decision}}")], stacked=True),
        series("Caps and evictions/s", "Label values folded into 'other' because a label hit its "
               "cardinality cap (raise exporters.max_label_values or drop the label); sampling decisions "
               "evicted from the bounded cache before their conversation closed.", "ops", targets(
                   (or_none(rate("rag_monitor_label_values_capped_total", INST, "label"), "label"),
                    "capped: {{label}}"),
                   (rate("rag_monitor_sampling_cache_evicted_total", INST), "decision cache evictions"))),
    ]


def variables() -> list[Builder[model.VariableModel]]:
    def labels(name: str, label: str, query_text: str, description: str) -> dash.QueryVariable:
        return (dash.QueryVariable(name).label(label).description(description).datasource(DS).query(query_text)
                .multi(True).include_all(True).all_value(".*").refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
                .sort(model.VariableSort.ALPHABETICAL_ASC)
                .current(model.VariableOption(selected=True, text=["All"], value=["$__all"])))

    chained = f'{EVALS}{{service=~"$service"}}'
    return [
        dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus"),
        dash.DatasourceVariable("trace_datasource").label("Traces (Tempo)").type("tempo").description(
            "Where exemplar 'Open trace' links go."),
        labels("service", "Service", f"label_values({EVALS}, service)", "The monitored app (service.name)."),
        labels("route", "Route", f"label_values({chained}, route)", "Only when 'route' is allow-listed."),
        labels("model", "Model", f"label_values({chained}, model)", "Only when 'model' is allow-listed."),
        labels("metric", "Metric", f"label_values({chained}, metric)", "Evaluation metric id."),
        dash.QueryVariable("window").label("Window").description("Rolling window of the defect-rate gauges.")
        .datasource(DS).query(f'label_values(rag_monitor_defect_rate{{service=~"$service"}}, window)')
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(model.VariableSort.ALPHABETICAL_ASC)
        .current(model.VariableOption(selected=True, text="1h", value="1h")),
        dash.CustomVariable("min_evaluations").label("Min. evaluations").description(
            "Defect rates based on fewer evaluations are hidden (too noisy to act on).")
        .values("1,10,20,50,100").current(model.VariableOption(selected=True, text="10", value="10")),
        labels("instance", "Replica", "label_values(rag_monitor_pending_traces, instance)",
               "Sidecar replica (Prometheus instance)."),
    ]


def build() -> dict[str, object]:
    """The dashboard as JSON-ready data (the content of rag-monitor.json)."""
    board = (dash.Dashboard("rag-monitor: RAG quality and pipeline").uid("rag-monitor")
             .description("Online evaluation of a RAG app by the rag-monitor sidecar: defect rates with "
                          "confidence, release comparisons and regressions, score distributions, judge "
                          "health and pipeline health.")
             .tags(["rag-monitor", "rag", "llm"]).time("now-6h", "now").refresh("1m").editable()
             .tooltip(model.DashboardCursorSync.CROSSHAIR).variables(variables())
             .annotation(dash.AnnotationQuery().name("Annotations & Alerts").built_in(1).type("dashboard")
                         .datasource(model.DataSourceRef(type_val="grafana", uid="-- Grafana --"))
                         .enable(True).hide(True).icon_color("rgba(0, 211, 255, 1)")))
    panel_id = 0
    for title, panels in (("Overview", overview()), ("Releases and regressions", releases()),
                          ("Defect rate", defect_rate()), ("Scores", scores()),
                          ("Evaluations", evaluations()), ("Judge (LLM)", judge()),
                          ("Pipeline health", pipeline())):
        panel_id += 1
        board = board.with_row(dash.Row(title).id(panel_id).datasource(DS))
        for panel in panels:
            panel_id += 1
            board = board.with_panel(panel.id(panel_id))  # type: ignore[attr-defined]
    return json.loads(json.dumps(board.build(), cls=JSONEncoder))  # type: ignore[no-any-return]


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
