"""The e-detector: its false-alarm bound, detection, change point, clearing and attribution."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from monitor.regression.config import RegressionConfig
from monitor.regression.detector import ChangeDetector

_BUCKET = 300.0


def _feed(detector: ChangeDetector, rng: random.Random, start: float, hours: float, per_hour: float,
          rate: float, routes: dict[str, float] | None = None) -> float:
    """Poisson traffic from ``start``; returns the time reached. ``routes`` adds to ``rate``."""
    t = start
    end = start + hours * 3600.0
    while True:
        t += rng.expovariate(per_hour / 3600.0)
        if t >= end:
            return end
        route = rng.choice(["search", "answer", "summarise"])
        p = rate + (routes or {}).get(route, 0.0)
        weight = rng.choice([1.0, 2.0]) * rng.uniform(1.0, 1.25)
        detector.observe(t, weight, float(rng.random() < p), {"route": route})


def test_mean_steps_to_a_false_alarm_is_at_least_the_threshold() -> None:
    """ARL ≥ A: with a low alarm level (A = 30) alarms are frequent enough to measure.

    200 no-change paths at 60 evaluations an hour (5 per step); steps are non-empty buckets counted
    from arming. The bound holds for a known baseline; the estimated one (mean + 2 s.e.) keeps it.
    """
    config = RegressionConfig(detector_threshold=30.0, detector_min_reference_evaluations=200)
    run_lengths = []
    for seed in range(200):
        rng = random.Random(seed)
        detector = ChangeDetector(config, binary=True)
        t = _feed(detector, rng, 0.0, 6.0, 60.0, 0.05)  # 360 evaluations: armed by now
        detector.advance(t)
        assert detector.armed
        steps = 0
        while not detector.active and steps < 3000:
            t = _feed(detector, rng, t, _BUCKET / 3600.0, 60.0, 0.05)
            detector.advance(t)
            steps += 1
        run_lengths.append(steps)
    assert statistics.mean(run_lengths) >= 30.0


def test_an_increase_is_found_with_its_change_point_levels_and_drivers() -> None:
    rng = random.Random(3)
    detector = ChangeDetector(RegressionConfig(), binary=True)
    t = _feed(detector, rng, 0.0, 48.0, 600.0, 0.05)
    change = t
    while not detector.active and t < change + 12 * 3600.0:
        t = _feed(detector, rng, t, 0.25, 600.0, 0.05, routes={"summarise": 0.3})
        detector.advance(t)
    assert detector.active
    report = detector.report("chat", "groundedness", "defect_rate", limit=3)
    assert report is not None and report.active
    assert report.since is not None and abs(report.since - change) <= 3600.0
    assert report.before == pytest.approx(0.05, abs=0.01)
    assert report.after == pytest.approx(0.15, abs=0.04)  # a third of traffic at +0.3
    assert report.lower is not None and report.upper is not None and 0.0 < report.lower < 0.1 < report.upper
    assert report.evidence >= report.threshold == pytest.approx(4.0)
    assert report.drivers[0].label == "route" and report.drivers[0].value == "summarise"
    assert report.drivers[0].share > 0.8


def test_an_alarm_clears_after_the_hold_and_the_new_level_is_accepted() -> None:
    config = RegressionConfig(detector_hold_seconds=3600.0)
    rng = random.Random(4)
    detector = ChangeDetector(config, binary=True)
    t = _feed(detector, rng, 0.0, 48.0, 600.0, 0.05)
    while not detector.active:
        t = _feed(detector, rng, t, 0.25, 600.0, 0.15)
        detector.advance(t)
    alarmed = t
    while detector.active:
        t = _feed(detector, rng, t, 0.25, 600.0, 0.15)
        detector.advance(t)
    assert 3600.0 <= t - alarmed <= 3600.0 + 0.5 * 3600.0
    # The same (accepted) level for another day raises nothing.
    for _ in range(96):
        t = _feed(detector, rng, t, 0.25, 600.0, 0.15)
        detector.advance(t)
        assert not detector.active
    report = detector.report("chat", "groundedness", "defect_rate", limit=3)
    assert report is not None and report.evidence < report.threshold


def test_a_score_drop_is_reported_in_score_terms() -> None:
    rng = random.Random(5)
    detector = ChangeDetector(RegressionConfig(), binary=False)
    t = 0.0

    def feed(hours: float, mean: float) -> None:
        nonlocal t
        end = t + hours * 3600.0
        while t < end:
            t += rng.expovariate(600.0 / 3600.0)
            score = min(1.0, max(0.0, rng.gauss(mean, 0.15)))
            detector.observe(t, 1.0, 1.0 - score, {"model": "m"})
        detector.advance(t)

    feed(24.0, 0.8)
    while not detector.active and t < 48 * 3600.0:
        feed(0.25, 0.7)
    report = detector.report("chat", "relevance", "score", limit=3)
    assert report is not None and report.active
    assert report.before is not None and report.after is not None
    assert report.before == pytest.approx(0.8, abs=0.02) and report.after == pytest.approx(0.7, abs=0.03)
    assert report.upper is not None and report.upper < 0.0  # after − before: a drop


def test_nothing_is_reported_before_the_reference_fills() -> None:
    detector = ChangeDetector(RegressionConfig(detector_min_reference_evaluations=100), binary=True)
    for i in range(50):
        detector.observe(i * 60.0, 1.0, 1.0, {})
    detector.advance(3600.0 * 2)
    assert not detector.armed
    assert detector.report("s", "m", "defect_rate", 3) is None


def test_quiet_buckets_are_not_steps() -> None:
    """A night without traffic adds nothing to the evidence (the statistic counts steps)."""
    rng = random.Random(6)
    detector = ChangeDetector(RegressionConfig(), binary=True)
    t = _feed(detector, rng, 0.0, 24.0, 60.0, 0.05)
    detector.advance(t)
    before = detector.log_evidence
    detector.advance(t + 7 * 86_400.0)
    assert detector.log_evidence == before
    assert math.isfinite(before)
