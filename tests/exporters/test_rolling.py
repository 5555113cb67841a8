"""Rolling defect rates: windows, weights, Wilson bounds, bounded memory, scrape-time gauges."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry

from exporters.rolling import RollingCollector, RollingStats
from exporters.stats import Z_95, wilson_interval
from monitor.model import ScoreStatus
from tests.exporters.results import result, score

WINDOWS = (("5m", 300.0), ("1h", 3600.0))


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _feed(rolling: RollingStats, metric: str, defects: int, passes: int, weight: float = 1.0) -> None:
    for _ in range(defects):
        rolling.consume_result(result(score(metric, 1.0, defect=True), weight=weight))
    for _ in range(passes):
        rolling.consume_result(result(score(metric, 5.0, defect=False), weight=weight))


def test_rate_interval_and_mean_per_window() -> None:
    clock = Clock()
    rolling = RollingStats(WINDOWS, clock=clock)
    _feed(rolling, "groundedness", defects=3, passes=7)
    clock.t += 600  # out of the 5m window, still in the 1h one
    _feed(rolling, "groundedness", defects=1, passes=9)
    s = rolling.summary()["groundedness"]
    five, hour = s["5m"], s["1h"]
    assert (five.evaluations, five.defects) == (10, 1)
    assert five.defect_rate == pytest.approx(0.1)
    assert (five.lower, five.upper) == pytest.approx(wilson_interval(1, 10, Z_95))
    assert five.mean_score == pytest.approx((1.0 + 9 * 5.0) / 10)
    assert (hour.evaluations, hour.defects) == (20, 4)
    assert hour.defect_rate == pytest.approx(0.2)
    clock.t += 3600
    gone = rolling.summary()["groundedness"]["1h"]
    assert gone.evaluations == 0 and math.isnan(gone.defect_rate) and math.isnan(gone.lower)


def test_weights_estimate_the_population_and_size_the_interval_by_what_was_seen() -> None:
    clock = Clock()
    rolling = RollingStats(WINDOWS, clock=clock)
    _feed(rolling, "violence", defects=2, passes=0, weight=1.0)   # always-evaluated turns
    _feed(rolling, "violence", defects=0, passes=2, weight=9.0)   # 1-in-9 sampled turns
    s = rolling.summary()["violence"]["5m"]
    assert s.defect_rate == pytest.approx(2 / 20)
    kish = 20.0 ** 2 / (2 * 1 + 2 * 81)
    assert s.effective_n == pytest.approx(kish)
    assert (s.lower, s.upper) == pytest.approx(wilson_interval(2, 20, Z_95, sample_size=kish))


def test_errors_and_skips_are_counted_but_not_rated() -> None:
    rolling = RollingStats(WINDOWS, clock=Clock())
    rolling.consume_result(result(score("coherence", None, status="error"), score("f1_score", None, status="skipped"),
                                  score("coherence", 4.0, defect=False)))
    s = rolling.summary()
    assert (s["coherence"]["5m"].errors, s["coherence"]["5m"].evaluations, s["coherence"]["5m"].defect_rate) == (1, 1, 0)
    assert s["f1_score"]["1h"].skipped == 1 and math.isnan(s["f1_score"]["1h"].defect_rate)


def test_refusals_are_counted_apart_not_rated_and_reach_the_summary_document() -> None:
    from monitor.admin.summary import window_document

    rolling = RollingStats(WINDOWS, clock=Clock())
    rolling.consume_result(result(score("violence", None, status=ScoreStatus.REFUSED, scale=(0.0, 7.0)),
                                  score("violence", 1.0, defect=False, scale=(0.0, 7.0))))
    w = rolling.summary()["violence"]["5m"]
    assert (w.refused, w.evaluations, w.skipped, w.errors, w.defect_rate) == (1, 1, 0, 0, 0.0)
    assert window_document(w)["refused"] == 1


def test_memory_is_fixed_by_windows_and_keys_not_by_traffic() -> None:
    clock = Clock()
    rolling = RollingStats(WINDOWS, clock=clock, max_keys=3)
    for i in range(5000):
        clock.t += 7.3
        rolling.consume_result(result(score("groundedness", 3.0, defect=False)))
    assert rolling.tracked_keys == 1 and rolling.slots_per_key == 3600 / rolling.slot_seconds == 360
    for m in ("a", "b", "c", "d"):
        rolling.consume_result(result(score(m, 1.0, defect=True)))
    assert rolling.tracked_keys == 3 and rolling.keys_refused == 2
    # 1h / 7.3 s ≈ 493 turns, within one slot of the window edge
    assert abs(rolling.summary()["groundedness"]["1h"].evaluations - 3600 / 7.3) <= 2


def test_replay_refills_after_restart_and_skips_old_rows() -> None:
    clock = Clock()
    rolling = RollingStats(WINDOWS, clock=clock)
    now = clock.t
    used = rolling.replay([(now - 7200, "sexual", "app", "defect", 1.0, 6.0),
                           (now - 1200, "sexual", "app", "defect", 1.0, 6.0),
                           (now - 10, "sexual", "app", "pass", 1.0, 0.0)])
    assert used == 2
    s = rolling.summary()["sexual"]
    assert (s["5m"].evaluations, s["1h"].evaluations, s["1h"].defects) == (1, 2, 1)


def test_trend_covers_the_longest_window_oldest_first() -> None:
    clock = Clock(3600.0 * 1000)
    rolling = RollingStats(WINDOWS, clock=clock)
    start = clock.t
    for minute in range(60):
        clock.t = start + minute * 60
        _feed(rolling, "relevance", defects=1 if minute >= 30 else 0, passes=1)
    trend = rolling.trend("relevance", points=60)
    assert len(trend) == 60
    assert [p.start for p in trend] == sorted(p.start for p in trend)
    assert sum(p.evaluations for p in trend) == 60 + 30
    assert trend[0].defect_rate == 0.0 and trend[-1].defect_rate == pytest.approx(0.5)


def test_gauges_at_scrape_time() -> None:
    clock = Clock()
    rolling = RollingStats(WINDOWS, clock=clock)
    registry = CollectorRegistry()
    registry.register(RollingCollector(rolling))
    _feed(rolling, "hate_unfairness", defects=1, passes=3)
    labels = {"metric": "hate_unfairness", "service": "rag-app", "window": "5m"}
    assert registry.get_sample_value("rag_monitor_defect_rate", labels) == pytest.approx(0.25)
    low, high = wilson_interval(1, 4, Z_95)
    assert registry.get_sample_value("rag_monitor_defect_rate_lower", labels) == pytest.approx(low)
    assert registry.get_sample_value("rag_monitor_defect_rate_upper", labels) == pytest.approx(high)
    assert registry.get_sample_value("rag_monitor_window_evaluations", labels) == 4
    clock.t += 301
    assert math.isnan(registry.get_sample_value("rag_monitor_defect_rate", labels))
    assert registry.get_sample_value("rag_monitor_window_evaluations", labels) == 0
