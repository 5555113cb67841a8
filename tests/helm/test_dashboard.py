"""Structure of the Grafana dashboard the chart ships (helm/rag-monitor/dashboards/).

The real-Prometheus check (every expression returns data) lives with the end-to-end tests; here
the JSON is checked against the generator, Grafana's layout rules, the variables it declares
and the Prometheus contract of DESIGN.md §5, with every expression parsed by a PromQL parser.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
from types import ModuleType
from typing import Any

import promql_parser
import pytest

from tests.support.dashboard import (
    DASHBOARD_PATH,
    default_variables,
    iter_panels,
    load_dashboard,
    panel_queries,
    regex_selection,
    substitute,
    variable_names,
    variables_referenced,
)

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SCOPE = ("instance", "job")  # added by the Prometheus scrape
EVALUATION = ("metric", "service", "route", "model", *SCOPE)  # route/model: allow-listed examples
ROLLING = ("metric", "service", "window", *SCOPE)
RELEASE = ("service", "metric", "baseline", "candidate", *SCOPE)
DETECTOR = ("service", "metric", "statistic", *SCOPE)

# Every series the sidecar exposes on /metrics, with the labels a query may select on.
CONTRACT: dict[str, tuple[str, ...]] = {
    "rag_monitor_evaluations_total": (*EVALUATION, "outcome"),
    "rag_monitor_evaluation_weight_total": (*EVALUATION, "outcome"),
    "rag_monitor_score_bucket": (*EVALUATION, "le"),
    "rag_monitor_score_sum": EVALUATION,
    "rag_monitor_score_count": EVALUATION,
    "rag_monitor_defect_rate": ROLLING,
    "rag_monitor_defect_rate_lower": ROLLING,
    "rag_monitor_defect_rate_upper": ROLLING,
    "rag_monitor_window_evaluations": ROLLING,
    "rag_monitor_release_defect_rate_difference": RELEASE,
    "rag_monitor_release_defect_rate_difference_lower": RELEASE,
    "rag_monitor_release_defect_rate_difference_upper": RELEASE,
    "rag_monitor_release_evaluations": ("service", "metric", "version", *SCOPE),
    "rag_monitor_regression_evidence": DETECTOR,
    "rag_monitor_regression_evidence_threshold": DETECTOR,
    "rag_monitor_regression_active": DETECTOR,
    "rag_monitor_jailbreak_group_defect_rate": ("group", "window", *SCOPE),
    "rag_monitor_jailbreak_defect_rate_difference": ("window", *SCOPE),
    "rag_monitor_jailbreak_defect_rate_difference_lower": ("window", *SCOPE),
    "rag_monitor_jailbreak_defect_rate_difference_upper": ("window", *SCOPE),
    "rag_monitor_label_values_capped_total": ("label", *SCOPE),
    "rag_monitor_judge_requests_total": ("outcome", *SCOPE),
    "rag_monitor_judge_replies_rejected_total": ("outcome", *SCOPE),
    "rag_monitor_judge_attempts_failed_total": ("outcome", *SCOPE),
    "rag_monitor_judge_tokens_total": ("type", "metric", "call", *SCOPE),
    "rag_monitor_judge_request_duration_seconds_bucket": ("le", *SCOPE),
    "rag_monitor_judge_request_duration_seconds_sum": SCOPE,
    "rag_monitor_judge_request_duration_seconds_count": SCOPE,
    "rag_monitor_judge_circuit_open": SCOPE,
    "rag_monitor_judge_budget_shed_total": ("limiter", *SCOPE),
    "rag_monitor_judge_budget_wait_seconds_total": ("limiter", *SCOPE),
    "rag_monitor_spans_received_total": ("transport", *SCOPE),
    "rag_monitor_spans_dropped_total": ("reason", *SCOPE),
    "rag_monitor_logs_received_total": ("transport", *SCOPE),
    "rag_monitor_logs_dropped_total": ("reason", *SCOPE),
    "rag_monitor_requests_rejected_total": ("transport", "reason", *SCOPE),
    "rag_monitor_turns_assembled_total": ("convention", *SCOPE),
    "rag_monitor_traces_without_turn_total": ("reason", *SCOPE),
    "rag_monitor_traces_evicted_total": ("reason", *SCOPE),
    "rag_monitor_conversations_closed_total": ("reason", *SCOPE),
    "rag_monitor_forward_total": ("outcome", *SCOPE),
    "rag_monitor_queue_dropped_total": ("queue", *SCOPE),
    "rag_monitor_queue_depth": ("queue", *SCOPE),
    "rag_monitor_queue_capacity": ("queue", *SCOPE),
    "rag_monitor_pending_traces": SCOPE,
    "rag_monitor_pending_spans": SCOPE,
    "rag_monitor_open_conversations": SCOPE,
    "rag_monitor_sampling_decisions_total": ("policy", "decision", *SCOPE),
    "rag_monitor_sampling_probability": ("policy", *SCOPE),
    "rag_monitor_sampling_cache_evicted_total": SCOPE,
}
LABEL_VARIABLES = ("service", "route", "model", "metric")


@pytest.fixture(scope="module")
def board() -> dict[str, Any]:
    return load_dashboard()


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    path = DASHBOARD_PATH.with_name("build_dashboard.py")
    spec = importlib.util.spec_from_file_location("build_dashboard", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(board: dict[str, Any]) -> list[tuple[str, str, str]]:
    values = default_variables(board)
    return [(title, ref, substitute(expr, values)) for title, ref, expr in panel_queries(board)]


def selectors(expr: str) -> list[promql_parser.VectorSelector]:
    found: list[promql_parser.VectorSelector] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in iter_panels(board) if p["type"] != "row"]


def test_checked_in_json_is_the_generators_output(generator: ModuleType) -> None:
    # Edits go through build_dashboard.py; run it to refresh rag-monitor.json.
    assert DASHBOARD_PATH.read_text() == generator.render()


def test_schema_of_a_current_grafana(board: dict[str, Any]) -> None:
    assert board["schemaVersion"] >= 39
    assert board["uid"] == "rag-monitor" and board["title"]
    assert "id" not in board or board["id"] is None  # provisioning assigns ids


def test_panel_ids_are_unique(board: dict[str, Any]) -> None:
    ids = [p["id"] for p in iter_panels(board)]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert len(ids) == len(set(ids))


def test_panel_titles_are_unique(board: dict[str, Any]) -> None:
    # Failures of the query tests name panels by title: one title, one panel.
    titles = [p["title"] for p in iter_panels(board)]
    assert len(titles) == len(set(titles))


def test_every_panel_and_target_uses_the_datasource_variable(board: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for panel in iter_panels(board):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"] == DATASOURCE, (panel["title"], target["refId"])
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]


def test_grid_positions_fit_24_columns_and_do_not_overlap(board: dict[str, Any]) -> None:
    def cells(panel: dict[str, Any]) -> set[tuple[int, int]]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1, panel["title"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        return {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}

    # Panels inside a collapsed row are laid out when it opens: check them among themselves.
    groups = [board["panels"]] + [p["panels"] for p in board["panels"] if p["type"] == "row" and p.get("panels")]
    for group in groups:
        for a, b in itertools.combinations(group, 2):
            assert not cells(a) & cells(b), f"{a['title']!r} overlaps {b['title']!r}"


def test_rows_head_their_sections_across_the_full_width(board: dict[str, Any]) -> None:
    rows = [p for p in board["panels"] if p["type"] == "row"]
    assert [r["title"] for r in rows] == ["Overview", "Releases and regressions", "Defect rate", "Scores",
                                          "Evaluations", "Judge (LLM)", "Pipeline health"]
    assert all(r["gridPos"]["w"] == 24 and r["gridPos"]["x"] == 0 for r in rows)


def test_every_variable_referenced_exists(board: dict[str, Any]) -> None:
    declared = {v["name"] for v in board["templating"]["list"]}
    used = {name for name in variables_referenced(board) if not name.startswith("__")}
    assert used <= declared, used - declared
    assert {"datasource", "trace_datasource", *LABEL_VARIABLES, "window"} <= used


def test_label_variables_are_multi_select_with_a_catch_all(board: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in board["templating"]["list"]}
    for name in LABEL_VARIABLES:
        v = variables[name]
        assert v["type"] == "query" and v["multi"] and v["includeAll"] and v["allValue"] == ".*", name
        assert re.fullmatch(rf"label_values\(rag_monitor_evaluations_total(\{{[^}}]*\}})?, {name}\)", v["query"])
    assert variables["metric"]["query"].endswith(", metric)")


def test_label_variables_are_matched_as_regexes(board: dict[str, Any]) -> None:
    # `=` with `.*` would match nothing, and `=~".*"` is what lets All match series without the label.
    for title, ref, expr in panel_queries(board):
        for label, op, name in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"\$\{?(\w+)', expr):
            if name in (*LABEL_VARIABLES, "instance"):
                assert op == "=~" and label == name, (title, ref, label, op)


def test_every_expression_parses(board: dict[str, Any]) -> None:
    queries = plain(board)
    assert len(queries) >= 40
    for title, ref, expr in queries:
        try:
            promql_parser.parse(expr)
        except ValueError as e:
            pytest.fail(f"{title} {ref}: {e}\n{expr}")


def test_expressions_use_only_contract_series_and_their_labels(board: dict[str, Any]) -> None:
    used: set[str] = set()
    for title, ref, expr in plain(board):
        for selector in selectors(expr):
            assert selector.name in CONTRACT, (title, ref, selector.name)
            used.add(selector.name)
            for matcher in selector.matchers.matchers:
                assert matcher.name in CONTRACT[selector.name], (title, ref, selector.name, matcher.name)
    # Every family DESIGN §5 and the issue list is on the dashboard somewhere.
    assert set(CONTRACT) - used <= {"rag_monitor_judge_request_duration_seconds_sum",
                                    "rag_monitor_judge_request_duration_seconds_count"}


def test_substitution_leaves_no_variable_behind(board: dict[str, Any]) -> None:
    for title, ref, expr in plain(board):
        assert "$" not in expr and "[[" not in expr, (title, ref, expr)


def test_every_panel_has_a_title_description_and_unit(board: dict[str, Any]) -> None:
    for panel in panels(board):
        assert panel["title"] and len(panel["description"]) > 20, panel["title"]
        if panel["type"] != "heatmap":  # the heatmap's axis is the score scale itself
            assert panel["fieldConfig"]["defaults"]["unit"], panel["title"]


def test_defect_rate_band_and_population_rate(board: dict[str, Any]) -> None:
    by_title = {p["title"]: p for p in panels(board)}
    band = next(p for t, p in by_title.items() if t.startswith("Defect rate with 95% band"))
    exprs = " ".join(t["expr"] for t in band["targets"])
    for series in ("rag_monitor_defect_rate{", "rag_monitor_defect_rate_lower{", "rag_monitor_defect_rate_upper{",
                   "rag_monitor_window_evaluations{"):
        assert series in exprs
    assert band["repeat"] == "metric"
    population = by_title["Population defect rate by metric (all replicas, $window)"]["targets"][0]["expr"]
    assert 'rag_monitor_evaluation_weight_total{outcome="defect"' in population
    assert 'rag_monitor_evaluation_weight_total{outcome=~"pass|defect"' in population


def test_release_and_detector_panels_join_replicas_by_max(board: dict[str, Any]) -> None:
    by_title = {p["title"]: p for p in panels(board)}
    diff = by_title["Release vs the one before: defect-rate difference with its anytime-valid band"]
    exprs = [t["expr"] for t in diff["targets"]]
    for suffix in ("", "_lower", "_upper"):
        assert any(e.startswith(f"max by (service, metric, baseline, candidate) "
                                f"(rag_monitor_release_defect_rate_difference{suffix}{{") for e in exprs), suffix
    # A difference goes below 0: no floor at 0, and the alert's default margin drawn as a line.
    assert "min" not in diff["fieldConfig"]["defaults"]
    assert diff["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] == "line"
    assert [s["value"] for s in diff["fieldConfig"]["defaults"]["thresholds"]["steps"]] == [None, 0]
    detector = by_title["Change detector: evidence against 'nothing changed' vs its alarm level"]
    evidence, level = sorted(t["expr"] for t in detector["targets"])
    assert evidence.startswith("max by (service, metric, statistic) (rag_monitor_regression_evidence{")
    assert level.startswith("max by (statistic) (rag_monitor_regression_evidence_threshold{")
    for panel in (diff, detector, by_title["Evaluations per release"]):
        for target in panel["targets"]:
            assert "sum" not in target["expr"], (panel["title"], target["expr"])


def test_score_heatmap_reads_the_histogram_with_exemplars_linked_to_traces(board: dict[str, Any]) -> None:
    heatmaps = [p for p in panels(board) if p["type"] == "heatmap"]
    assert heatmaps
    exemplar_panels = [p for p in panels(board) if any(t.get("exemplar") for t in p["targets"])]
    assert set(map(id, heatmaps)) <= set(map(id, exemplar_panels))
    for panel in heatmaps:
        (target,) = panel["targets"]
        assert target["format"] == "heatmap" and panel["options"]["calculate"] is False
        assert re.match(r"sum by \(le\) \(increase\(rag_monitor_score_bucket\{", target["expr"])
    for panel in exemplar_panels:
        (override,) = [o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == "trace_id"]
        (links,) = [prop["value"] for prop in override["properties"] if prop["id"] == "links"]
        assert "${__value.raw}" in links[0]["url"] and "${trace_datasource}" in links[0]["url"]


def test_panel_queries_reaches_into_collapsed_rows() -> None:
    target = {"refId": "A", "expr": "up", "datasource": DATASOURCE}
    board = {"panels": [
        {"type": "stat", "title": "top", "targets": [target]},
        {"type": "row", "title": "r", "collapsed": True, "panels": [
            {"type": "timeseries", "title": "inner", "targets": [{**target, "refId": "B"}, {"refId": "C"}]}]},
    ]}
    assert panel_queries(board) == [("top", "A", "up"), ("inner", "B", "up")]


@pytest.mark.parametrize(("expr", "expected"), [
    ('rate(x{a=~"$a"}[$__rate_interval])', 'rate(x{a=~"1"}[1m])'),
    ('x{a=~"${a}", b=~"${b:regex}"}', 'x{a=~"1", b=~"(p|q)"}'),
    ('x{a=~"[[a]]"} offset $__interval_ms', 'x{a=~"1"} offset 15000'),
    ('increase(x[$__range]) > $__interval', 'increase(x[1h]) > 15s'),
    ('x{a="$a_b"}', 'x{a="ab"}'),
])
def test_substitute_renders_every_spelling(expr: str, expected: str) -> None:
    assert substitute(expr, {"a": "1", "b": "(p|q)", "a_b": "ab"}) == expected


def test_substitute_names_an_unknown_variable() -> None:
    with pytest.raises(KeyError, match="nope"):
        substitute('x{a=~"$nope"}', {})
    assert variable_names('${x:regex} $y [[z]] ${__value.raw}') == {"x", "y", "z", "__value"}


def test_default_variables_open_at_all_and_the_saved_choices(board: dict[str, Any]) -> None:
    values = default_variables(board)
    assert {values[name] for name in (*LABEL_VARIABLES, "instance")} == {".*"}
    assert values["window"] == "1h" and values["min_evaluations"].isdigit()
    assert "datasource" not in values


def test_regex_selection_escapes_like_grafana() -> None:
    assert regex_selection(["gpt-4o"]) == "gpt-4o"
    assert regex_selection(["a.b", "c"]) == r"(a\\.b|c)"
