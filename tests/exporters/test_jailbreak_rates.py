"""The seed's jailbreak comparison, online: flagged vs other turns' content-risk defect rates."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from exporters.jailbreak_rates import JailbreakCollector, JailbreakComparison
from monitor.model import EvaluationResult, Score, Turn


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def result(flagged: bool, defect: bool | None, weight: float = 1.0, metric: str = "violence") -> EvaluationResult:
    turn = Turn("ab" * 16, "c", "q", "a", jailbreak_attempt=flagged)
    scores = [] if defect is None else [Score(metric, 6.0 if defect else 0.0, (0.0, 7.0), defect=defect)]
    return EvaluationResult(turn, tuple(scores) + (Score("coherence", 4.0, (1.0, 5.0), defect=False),), weight)


def test_rates_per_group_and_their_difference_with_intervals():
    comparison = JailbreakComparison([("5m", 300.0), ("1h", 3600.0)], clock=Clock())
    for _ in range(40):
        comparison.consume_result(result(True, True))
    for _ in range(60):
        comparison.consume_result(result(True, False))
    for _ in range(990):
        comparison.consume_result(result(False, False))
    for _ in range(10):
        comparison.consume_result(result(False, True))
    comparison.consume_result(result(False, None))  # no content-risk verdict: not counted
    (five, _hour) = comparison.comparison()
    assert (five.flagged.evaluations, five.rest.evaluations) == (100, 1000)
    assert math.isclose(five.flagged.defect_rate, 0.4) and math.isclose(five.rest.defect_rate, 0.01)
    assert math.isclose(five.difference, 0.39)
    assert five.lower < 0.39 < five.upper and five.lower > 0  # attempts do get through


def test_a_turn_counts_once_whatever_the_number_of_risk_metrics():
    comparison = JailbreakComparison([("5m", 300.0)], clock=Clock())
    turn = Turn("ab" * 16, "c", "q", "a", jailbreak_attempt=True)
    scores = (Score("violence", 5.0, (0.0, 7.0), defect=True), Score("sexual", 0.0, (0.0, 7.0), defect=False),
              Score("local_offensive_language", 0.9, (0.0, 1.0), defect=True))
    comparison.consume_result(EvaluationResult(turn, scores))
    (five,) = comparison.comparison()
    assert (five.flagged.evaluations, five.flagged.defects) == (1, 1)
    assert math.isnan(five.rest.defect_rate) and math.isnan(five.difference)


def test_gauges_export_both_groups_and_the_difference():
    registry = CollectorRegistry()
    comparison = JailbreakComparison([("5m", 300.0)], clock=Clock())
    registry.register(JailbreakCollector(comparison))
    comparison.consume_result(result(True, True))
    comparison.consume_result(result(False, False))
    get = registry.get_sample_value
    assert get("rag_monitor_jailbreak_group_defect_rate", {"group": "flagged", "window": "5m"}) == 1.0
    assert get("rag_monitor_jailbreak_group_defect_rate", {"group": "rest", "window": "5m"}) == 0.0
    assert get("rag_monitor_jailbreak_defect_rate_difference", {"window": "5m"}) == 1.0
    assert get("rag_monitor_jailbreak_group_evaluations", {"group": "rest", "window": "5m"}) == 1.0
    for suffix in ("", "_lower", "_upper"):  # the old name, deprecated: the same values for one release
        new_value = get(f"rag_monitor_jailbreak_defect_rate_difference{suffix}", {"window": "5m"})
        assert new_value is not None and get(f"rag_monitor_jailbreak_defect_rate{suffix}", {"window": "5m"}) == new_value


def test_the_deprecated_name_says_what_replaces_it():
    from exporters.spec import JAILBREAK

    helps = {i.name: i.help for i in JAILBREAK}
    assert "difference" in helps["rag_monitor_jailbreak_defect_rate_difference"]
    for suffix in ("", "_lower", "_upper"):
        assert helps[f"rag_monitor_jailbreak_defect_rate{suffix}"].startswith("Deprecated")
        assert f"rag_monitor_jailbreak_defect_rate_difference{suffix} " in helps[f"rag_monitor_jailbreak_defect_rate{suffix}"]


async def test_the_summary_api_serves_the_comparison():
    import aiohttp

    from tests.support.pipeline import running_sidecar

    async with running_sidecar() as (sc, _):
        sc.jailbreak.consume_result(result(True, True))
        sc.jailbreak.consume_result(result(False, False))
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{sc.admin.port}/api/summary") as r:
            doc = await r.json()
    five = doc["jailbreak"]["5m"]
    assert five["flagged"]["defect_rate"] == 1.0 and five["rest"]["defect_rate"] == 0.0
    assert five["difference"] == 1.0 and five["lower"] is not None
