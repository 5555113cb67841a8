"""The alert rules: the plain rules file is what the chart renders, `promtool check rules` passes
for every scenario, the `promtool test rules` unit tests pass, and each "silent below its guard"
or "silent below its threshold" test is silent *because of* that guard or threshold: with it
loosened, exactly those tests fail."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from exporters import spec
from monitor.telemetry import declared_counters
from tests.support.helm import CHART_DIR, merge_values, render_chart

RULES = CHART_DIR / "alerts" / "rag-monitor-rules.yaml"
UNIT_TESTS = sorted((CHART_DIR / "alerts" / "tests").glob("*.yaml"))
RUNBOOKS = CHART_DIR / "docs" / "runbooks.md"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`; .ci/run installs it)")

# Loosened to the minimum, every "guard:" unit test must fire (and so fail).
LOOSE_GUARDS = {"alerts": {
    "safetyDefectRate": {"minEvaluations": 1},
    "releaseRegression": {"minEvaluations": 1},
    "judgeErrors": {"minRequests": 1},
    "judgeBudgetExhausted": {"minRequests": 1},
    "judgeCircuitOpen": {"minRequests": 1},
    "judgeAgreement": {"minReviews": 1},
    "spansDropped": {"minSpans": 1},
    "evaluationQueueSaturated": {"minSampled": 1},
}}
# Loosened thresholds and margins: every "threshold:" unit test must fire.
LOOSE_THRESHOLDS = {"alerts": {
    "safetyDefectRate": {"thresholds": {"violence": 0.001}},
    "releaseRegression": {"margin": -0.05},
    "judgeErrors": {"threshold": 0.01},
    "judgeBudgetExhausted": {"threshold": 0.01},
    "judgeAgreement": {"floor": 0.8},
    "spansDropped": {"threshold": 0.001},
    "evaluationQueueSaturated": {"fillRatio": 0.4},
}}
# The time-based regression alerts follow rag-monitor's sequential detector, whose alarm level
# (sidecar configuration) bounds false alarms at any number of evaluations.
DETECTOR_ALERTS = {"RagMonitorQualityScoreRegressed", "RagMonitorQualityDefectRateRegressed"}
# Alerts without a guard on a count: NoSpansReceived needs rag-monitor up for the whole window.
WITHOUT_COUNT_GUARD = {"RagMonitorNoSpansReceived", *DETECTOR_ALERTS}
# Alerts whose guard counts from a gauge: the candidate release's evaluations, not an increase.
GAUGE_GUARD = {"RagMonitorReleaseRegressed", "RagMonitorJudgeAgreementLow"}
# Alerts without a numeric threshold in the chart: their silent case is a "silent:" test.
WITHOUT_THRESHOLD = {"RagMonitorNoSpansReceived", "RagMonitorJudgeCircuitOpen", *DETECTOR_ALERTS}


def _gen_rules() -> ModuleType:
    module_spec = importlib.util.spec_from_file_location("gen_rules", CHART_DIR / "hack" / "gen_rules.py")
    assert module_spec and module_spec.loader
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _rules(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [rule for group in groups for rule in group["rules"]]


def _default_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return groups


def _promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL
    return subprocess.run([PROMTOOL, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def _unit_tests() -> list[tuple[str, dict[str, Any]]]:
    return [(path.name, test) for path in UNIT_TESTS
            for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]]


def test_plain_rules_file_is_what_the_chart_renders() -> None:
    assert RULES.read_text(encoding="utf-8") == _gen_rules().render(), (
        "alerts/rag-monitor-rules.yaml is stale: run .venv/bin/python helm/rag-monitor/hack/gen_rules.py")


def test_every_alert_has_for_severity_runbook_and_a_guard() -> None:
    anchors = {"#" + m.lower() for m in re.findall(r"^## (RagMonitor\w+)$", RUNBOOKS.read_text(encoding="utf-8"), re.M)}
    rules = _rules(_default_groups())
    assert len({r["alert"] for r in rules}) == 11
    for rule in rules:
        name = rule["alert"]
        assert rule["for"] not in ("0s", "0m"), name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        url = rule["annotations"]["runbook_url"]
        assert url.startswith("https://") and url[url.index("#"):] in anchors, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        if name in GAUGE_GUARD:
            assert re.search(r"and on \([^)]*\)\s*\n\s*max by \([^)]*\) \((label_replace\(rag_monitor_release_evaluations"
                             r"|rag_monitor_judge_agreement_reviews)", rule["expr"]), name
        elif name not in WITHOUT_COUNT_GUARD:
            assert re.search(r"and on \([^)]*\)\s*\n\s*sum by \([^)]*\) \(increase\(", rule["expr"]), name
        if name not in WITHOUT_COUNT_GUARD:
            assert re.search(r"\) >= \d+\s*$", rule["expr"]), name


def test_rules_use_only_series_rag_monitor_exports() -> None:
    exported: set[str] = set()
    import monitor.app  # noqa: F401  (imports every stage, so every counter is declared)

    for table in (declared_counters(), spec.SCRAPE_TIME, spec.EVALUATION, spec.ROLLING, spec.JUDGE, spec.SAMPLING,
                  spec.RELEASES, spec.AGREEMENT):
        for inst in table:
            exported.add(inst.name)
            if inst.kind == "histogram":
                exported |= {inst.name + suffix for suffix in ("_bucket", "_sum", "_count")}
    used = {m for rule in _rules(_default_groups()) for m in re.findall(r"\brag_monitor_[a-z_]+", rule["expr"])}
    assert used and used <= exported, used - exported


def test_counters_are_summed_across_replicas_by_deployment_and_service() -> None:
    for rule in _rules(_default_groups()):
        for by in re.findall(r"(?:sum|max|count) by \(([^)]*)\)", rule["expr"]):
            labels = [label.strip() for label in by.split(",")]
            assert labels[:2] == ["namespace", "job"], rule["alert"]
            assert "instance" not in labels and "pod" not in labels, rule["alert"]
        if rule["alert"].startswith("RagMonitorSafety"):
            assert "sum by (namespace, job, service, metric)" in rule["expr"]
        if rule["alert"] in DETECTOR_ALERTS:
            # Statistics every replica computes alike (or per replica, for its own traffic): max.
            assert "max by (namespace, job, service, metric) (rag_monitor_regression_active" in rule["expr"]
            assert "sum by" not in rule["expr"]
        if rule["alert"] == "RagMonitorReleaseRegressed":
            assert ("max by (namespace, job, service, metric, baseline, candidate) "
                    "(rag_monitor_release_defect_rate_difference_lower) > 0") in rule["expr"]
            assert "sum by" not in rule["expr"]
        if rule["alert"] == "RagMonitorJudgeAgreementLow":
            # The figure of the fleet's verdicts, alike on every replica: max, per metric and judge model.
            assert ("max by (namespace, job, metric, judge_model) (rag_monitor_judge_agreement_rate_upper) < 0.7"
                    in rule["expr"])
            assert "sum by" not in rule["expr"]


def test_every_alert_has_unit_tests_for_firing_and_for_staying_silent() -> None:
    kinds: dict[str, set[str]] = {}
    for _, test in _unit_tests():
        kind = test["name"].split(":", 1)[0]
        assert kind in ("fires", "guard", "threshold", "silent"), test["name"]
        for case in test["alert_rule_test"]:
            kinds.setdefault(case["alertname"], set()).add(kind)
            if kind != "fires":
                assert case["exp_alerts"] == [], test["name"]
    for rule in _rules(_default_groups()):
        name = rule["alert"]
        assert "fires" in kinds.get(name, set()), name
        assert ("guard" in kinds[name]) == (name not in WITHOUT_COUNT_GUARD), name
        assert ("threshold" in kinds[name]) == (name not in WITHOUT_THRESHOLD), name


@needs_promtool
@pytest.mark.parametrize("scenario", ["default", *sorted(p.name for p in (CHART_DIR / "ci").glob("*.yaml"))])
def test_promtool_check_rules_passes_for_every_scenario(scenario: str, tmp_path: Path) -> None:
    if scenario == "default":
        path = RULES
    else:
        values_file = CHART_DIR / "ci" / scenario
        manifests = render_chart(merge_values(yaml.safe_load(values_file.read_text()), {
            "prometheusRule": {"enabled": True}, "dashboards": {"enabled": False}}))
        (rule,) = [m for m in manifests if m["kind"] == "PrometheusRule"]
        path = tmp_path / "rules.yaml"
        path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    result = _promtool("check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_promtool
def test_promtool_check_rules_catches_a_broken_expression(tmp_path: Path) -> None:
    groups = _default_groups()
    groups[0]["rules"][0]["expr"] = "sum by (job) (rate(rag_monitor_spans_received_total[5m])"
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    assert _promtool("check", "rules", path).returncode != 0


@needs_promtool
@pytest.mark.parametrize("unit_test", UNIT_TESTS, ids=lambda p: p.name)
def test_promtool_unit_tests_pass(unit_test: Path) -> None:
    result = _promtool("test", "rules", unit_test)
    assert result.returncode == 0, result.stdout + result.stderr


def _failing_tests(values: dict[str, Any], unit_test: Path, tmp_path: Path) -> set[str]:
    """Run one unit-test file against the rules rendered with ``values``; the failing test names."""
    groups = _gen_rules().rule_groups(values)
    (tmp_path / "rag-monitor-rules.yaml").write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    (tmp_path / "tests").mkdir()
    shutil.copy(unit_test, tmp_path / "tests" / unit_test.name)
    result = _promtool("test", "rules", tmp_path / "tests" / unit_test.name)
    failed = set(re.findall(r"^\s+name: (.*),\s*$", result.stdout + result.stderr, re.M))
    assert (result.returncode != 0) == bool(failed), result.stdout + result.stderr
    return failed


@needs_promtool
@pytest.mark.parametrize("unit_test", UNIT_TESTS, ids=lambda p: p.name)
@pytest.mark.parametrize(("loosened", "kind"), [(LOOSE_GUARDS, "guard"), (LOOSE_THRESHOLDS, "threshold")],
                         ids=["guards", "thresholds"])
def test_silent_cases_are_silent_because_of_their_guard_or_threshold(
        unit_test: Path, loosened: dict[str, Any], kind: str, tmp_path: Path) -> None:
    names = {test["name"] for test in yaml.safe_load(unit_test.read_text(encoding="utf-8"))["tests"]}
    failed = _failing_tests(loosened, unit_test, tmp_path)
    # "fires:" tests may fail too: their descriptions quote the loosened numbers.
    assert {n for n in failed if not n.startswith("fires:")} == {n for n in names if n.startswith(kind + ":")}


_MARGIN_CASE = """
rule_files: [../rag-monitor-rules.yaml]
evaluation_interval: 1m
tests:
  - name: "margin 0.05: a lower bound of 0.07 fires, 0.03 does not"
    interval: 1m
    input_series:
      - series: 'rag_monitor_release_defect_rate_difference_lower{namespace="n",job="j",service="s",metric="above",baseline="v1",candidate="v2"}'
        values: '0.07x30'
      - series: 'rag_monitor_release_defect_rate_difference_lower{namespace="n",job="j",service="s",metric="within",baseline="v1",candidate="v2"}'
        values: '0.03x30'
      - series: 'rag_monitor_release_evaluations{namespace="n",job="j",service="s",metric="above",version="v2"}'
        values: '500x30'
      - series: 'rag_monitor_release_evaluations{namespace="n",job="j",service="s",metric="within",version="v2"}'
        values: '500x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: RagMonitorReleaseRegressed
        exp_alerts:
          - exp_labels: {severity: warning, namespace: n, job: j, service: s, metric: above, baseline: v1, candidate: v2}
            exp_annotations:
              summary: "s: above defect rate of v2 is at least 7% above v1"
              description: "The anytime-valid confidence sequence on the weighted above defect rate of release v2 minus release v1 (service s) has had its lower end above 0.05 for 5m, with at least 30 evaluations of v2: the new release is worse, not by chance. /api/releases and the status page show both rates and the routes/models that carry the change."
              runbook_url: https://github.com/rag-monitor/rag-monitor/blob/main/helm/rag-monitor/docs/runbooks.md#ragmonitorreleaseregressed
"""


def _run_case(values: dict[str, Any], case: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    groups = _gen_rules().rule_groups(values)
    (tmp_path / "rag-monitor-rules.yaml").write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "case.yaml").write_text(case, encoding="utf-8")
    return _promtool("test", "rules", tmp_path / "tests" / "case.yaml")


@needs_promtool
def test_release_alert_compares_the_lower_bound_with_the_margin_value(tmp_path: Path) -> None:
    result = _run_case({"alerts": {"releaseRegression": {"margin": 0.05}}}, _MARGIN_CASE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # The same series against the default margin (0): "within" fires too, so the case fails.
    result = _run_case({}, _MARGIN_CASE, tmp_path)
    assert result.returncode != 0 and 'metric="within"' in result.stdout + result.stderr, result.stdout
