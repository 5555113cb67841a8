"""The dashboard's trickier expressions compute the right numbers (Prometheus's own engine).

Each case feeds synthetic series to ``promtool test rules`` and evaluates one panel query of the
shipped JSON, variables substituted: the population defect rate across replicas, the judge error
ratio, the minimum-evaluations guard and the "none = 0" fallback of usually-absent counters.
Whether every query returns data from a live sidecar is checked end to end elsewhere.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.dashboard import default_variables, load_dashboard, panel_queries, substitute

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None,
                                reason="promtool comes with Debian's prometheus package (.ci/run installs it)")

EVAL_AT = "10m"
STEP = "15s"
ALIVE = {'rag_monitor_pending_traces{instance="a"}': "0x40"}


def expression(title: str, ref: str = "A") -> str:
    board = load_dashboard()
    values = default_variables(board) | {"window": "5m", "min_evaluations": "10", "__rate_interval": "1m"}
    (expr,) = [e for t, r, e in panel_queries(board) if t == title and r == ref]
    return substitute(expr, values)


def evaluate(tmp_path: Path, series: dict[str, str], expr: str, expected: dict[str, float]) -> None:
    """Asserts ``expr`` at EVAL_AT over ``series`` (values in promtool's ``0+1x40`` notation, one per
    STEP) is exactly ``expected`` (labels → value, rounded to 1e-3)."""
    case = {
        "rule_files": [],
        "evaluation_interval": STEP,
        "tests": [{
            "interval": STEP,
            "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "promql_expr_test": [{
                "expr": f"round({expr}, 0.001)",
                "eval_time": EVAL_AT,
                "exp_samples": [{"labels": labels, "value": value} for labels, value in expected.items()],
            }],
        }],
    }
    path = tmp_path / "case.yml"
    path.write_text(yaml.safe_dump(case))
    done = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def weights(metric: str, instance: str, outcome: str, per_step: float) -> tuple[str, str]:
    labels = f'metric="{metric}", service="app", instance="{instance}", outcome="{outcome}"'
    return f"rag_monitor_evaluation_weight_total{{{labels}}}", f"0+{per_step}x40"


def counts(metric: str, instance: str, outcome: str, per_step: float) -> tuple[str, str]:
    labels = f'metric="{metric}", service="app", instance="{instance}", outcome="{outcome}"'
    return f"rag_monitor_evaluations_total{{{labels}}}", f"0+{per_step}x40"


def test_population_defect_rate_weights_and_sums_replicas(tmp_path: Path) -> None:
    series = dict([
        # Replica a samples 1 in 4 (weight 4), replica b keeps everything: 1*4 / (1*4 + 3*4 + 4) = 0.2.
        weights("groundedness", "a", "defect", 4), weights("groundedness", "a", "pass", 12),
        counts("groundedness", "a", "defect", 1), counts("groundedness", "a", "pass", 3),
        weights("groundedness", "b", "pass", 4), counts("groundedness", "b", "pass", 4),
        # Never a defect: 0, not absent.
        weights("relevance", "a", "pass", 2), counts("relevance", "a", "pass", 2),
        # 5 evaluations in the 5m window: below min_evaluations=10, hidden.
        weights("fluency", "a", "defect", 0.25), counts("fluency", "a", "defect", 0.25),
    ])
    evaluate(tmp_path, series, expression("Population defect rate by metric (all replicas, $window)"),
             {'{metric="groundedness"}': 0.2, '{metric="relevance"}': 0.0})
    evaluate(tmp_path, series, expression("Highest defect rate"), {'{metric="groundedness"}': 0.2})


def test_judge_error_ratio_counts_rejected_replies_and_not_local_refusals(tmp_path: Path) -> None:
    series = {
        'rag_monitor_judge_requests_total{instance="a", outcome="ok"}': "0+90x40",
        'rag_monitor_judge_requests_total{instance="a", outcome="timeout"}': "0+10x40",
        'rag_monitor_judge_requests_total{instance="a", outcome="circuit_open"}': "0+100x40",
        'rag_monitor_judge_replies_rejected_total{instance="a", outcome="out_of_range"}': "0+9x40",
        **ALIVE,
    }
    # (10 timeouts + 9 rejected replies) / 100 calls sent; the 100 refused calls are their own series.
    evaluate(tmp_path, series, expression("Judge error ratio", "A"), {"{}": 0.19})
    evaluate(tmp_path, series, expression("Judge error ratio", "B"), {"{}": 0.5})
    healthy = {'rag_monitor_judge_requests_total{instance="a", outcome="ok"}': "0+90x40", **ALIVE}
    evaluate(tmp_path, healthy, expression("Judge error ratio", "A"), {"{}": 0.0})


def test_refused_judge_calls_are_not_judge_errors(tmp_path: Path) -> None:
    series = {
        'rag_monitor_judge_requests_total{instance="a", outcome="ok"}': "0+50x40",
        'rag_monitor_judge_requests_total{instance="a", outcome="refused"}': "0+40x40",
        'rag_monitor_judge_requests_total{instance="a", outcome="timeout"}': "0+10x40",
        **ALIVE,
    }
    # 10 timeouts / 100 calls sent: the 40 refusals were sent (denominator) but are not errors.
    evaluate(tmp_path, series, expression("Judge error ratio", "A"), {"{}": 0.1})
    evaluate(tmp_path, series, expression("Judge errors"), {"{}": 0.1})


def test_possibly_harmful_not_scored_share_is_weighted_beside_the_defect_rate(tmp_path: Path) -> None:
    series = dict([
        # violence: 3 pass, 1 defect, 1 refused per step, all at weight 2: refused share 1/5.
        weights("violence", "a", "pass", 6), counts("violence", "a", "pass", 3),
        weights("violence", "a", "defect", 2), counts("violence", "a", "defect", 1),
        weights("violence", "a", "unscored_refused", 2), counts("violence", "a", "unscored_refused", 1),
        # sexual: never refused: 0, not absent.
        weights("sexual", "a", "pass", 6), counts("sexual", "a", "pass", 3),
    ])
    title = "Possibly harmful, not scored: refused by the judge or its content filter (all replicas, $window)"
    evaluate(tmp_path, series, expression(title), {'{metric="violence"}': 0.2, '{metric="sexual"}': 0.0})
    # The defect rate beside it is unchanged by refusals: 1 defect / (3 pass + 1 defect).
    evaluate(tmp_path, series, expression("Population defect rate by metric (all replicas, $window)"),
             {'{metric="violence"}': 0.25, '{metric="sexual"}': 0.0})


def test_rolling_band_is_hidden_below_the_minimum_evaluations(tmp_path: Path) -> None:
    def gauges(metric: str, n: int) -> dict[str, str]:
        labels = f'metric="{metric}", service="app", window="5m", instance="a"'
        return {f"rag_monitor_defect_rate_lower{{{labels}}}": "0.125x40",
                f"rag_monitor_window_evaluations{{{labels}}}": f"{n}x40"}

    series = gauges("groundedness", 40) | gauges("coherence", 3)
    title = "Defect rate with 95% band: $metric (per replica, $window)"
    evaluate(tmp_path, series, expression(title, "B"),
             {'{metric="groundedness", service="app", window="5m", instance="a"}': 0.125})


def test_absent_counters_read_none_at_zero_only_while_the_sidecar_is_scraped(tmp_path: Path) -> None:
    expr = expression("Dropped and rejected/s", "A")
    evaluate(tmp_path, ALIVE, expr, {'{reason="none"}': 0.0})
    dropped = {'rag_monitor_spans_dropped_total{instance="a", reason="queue_full"}': "0+15x40", **ALIVE}
    evaluate(tmp_path, dropped, expr, {'{reason="queue_full"}': 1.0})
    evaluate(tmp_path, {'unrelated{instance="a"}': "0x40"}, expr, {})


def release(name: str, instance: str, metric: str, value: str, candidate: str = "v2") -> tuple[str, str]:
    labels = f'service="app", metric="{metric}", baseline="v1", candidate="{candidate}", instance="{instance}"'
    return f"{name}{{{labels}}}", value


def test_release_difference_joins_replicas_by_max_and_counts_regressed_releases(tmp_path: Path) -> None:
    lower = "rag_monitor_release_defect_rate_difference_lower"
    series = dict([
        # Two replicas export the same comparison; one lags a scrape behind: max, one series.
        release(lower, "a", "relevance", "0.02x40"), release(lower, "b", "relevance", "0.01x40"),
        release(lower, "a", "groundedness", "-0.03x40"),
        release(lower, "a", "f1_score", "0x40"),
    ])
    title = "Release vs the one before: defect-rate difference with its anytime-valid band"
    pair = '{service="app", metric="%s", baseline="v1", candidate="v2"}'
    evaluate(tmp_path, series, expression(title, "B"),
             {pair % "relevance": 0.02, pair % "groundedness": -0.03, pair % "f1_score": 0.0})
    # Only a lower bound strictly above 0 counts as regressed.
    evaluate(tmp_path, {**series, **ALIVE}, expression("Releases worse than the one before"), {"{}": 1.0})
    no_regression = dict([release(lower, "a", "relevance", "-0.01x40")])
    evaluate(tmp_path, {**no_regression, **ALIVE}, expression("Releases worse than the one before"), {"{}": 0.0})


def test_active_regressions_count_each_detector_once_across_replicas(tmp_path: Path) -> None:
    def active(instance: str, metric: str, statistic: str, value: str) -> tuple[str, str]:
        labels = f'service="app", metric="{metric}", statistic="{statistic}", instance="{instance}"'
        return f"rag_monitor_regression_active{{{labels}}}", value

    series = dict([
        active("a", "relevance", "defect_rate", "1x40"), active("b", "relevance", "defect_rate", "1x40"),
        active("a", "relevance", "score", "0x40"),
        active("a", "groundedness", "score", "1x40"),
    ])
    evaluate(tmp_path, {**series, **ALIVE}, expression("Active regressions"), {"{}": 2.0})
    quiet = dict([active("a", "relevance", "score", "0x40")])
    evaluate(tmp_path, {**quiet, **ALIVE}, expression("Active regressions"), {"{}": 0.0})
