"""The issue's done-when figures, on a few seeded runs of the statistics harness.

benchmarks/regression_harness.py runs the same scenarios over more seeds for the tables in
docs/regressions.md. Seeds are fixed, so these are exact replays, not flaky samples.
"""

from __future__ import annotations

import statistics

import pytest

from tests.regression.harness import run_aa_week, run_release, run_shift


# 600/h seed 9: a week whose bound hovered near 0 for days (6 episodes before the intervals were
# intersected over time; one of the two false release alarms in the benchmark's 10 weeks at 600/h).
@pytest.mark.parametrize(("rate", "seeds"), [(20.0, (0, 1, 2)), (60.0, (0, 1)), (600.0, (0, 9))])
def test_at_most_one_false_alarm_per_week_of_no_change(rate: float, seeds: tuple[int, ...]) -> None:
    """A/A weeks with a same-quality release every day and a same-quality canary on day 3."""
    for seed in seeds:
        result = run_aa_week(rate, seed)
        assert result.release_episodes <= 1, result
        assert result.time_episodes <= 1, result
        assert result.score_episodes <= 1, result


def _median_hours(delays: list[float | None]) -> float:
    return statistics.median(float("inf") if d is None else d for d in delays)


def test_release_5_to_10_percent_within_an_hour_at_600_per_hour() -> None:
    runs = [run_release(600.0, 0.05, seed, horizon_hours=4.0) for seed in range(7)]
    assert _median_hours([r.release_delay_hours for r in runs]) <= 1.0
    assert all(r.release_false_before_change == 0 for r in runs)


def test_release_5_to_10_percent_within_8_hours_at_60_per_hour() -> None:
    runs = [run_release(60.0, 0.05, seed, horizon_hours=16.0) for seed in range(7)]
    assert _median_hours([r.release_delay_hours for r in runs]) <= 8.0


def test_canary_on_10_percent_of_600_per_hour_within_8_hours() -> None:
    runs = [run_release(600.0, 0.05, seed, canary_share=0.1, horizon_hours=12.0) for seed in range(5)]
    assert _median_hours([r.release_delay_hours for r in runs]) <= 8.0


def test_the_time_based_detector_finds_a_doubling_and_names_its_route() -> None:
    result, engine = run_shift(600.0, 0.10, seed=0, horizon_hours=12.0, warmup_days=1.0,
                               route="summarise")
    assert result.time_delay_hours is not None and result.time_delay_hours <= 6.0
    assert result.time_false_before_change == 0
    active = [r for r in engine.regressions() if r.active and r.statistic == "defect_rate"]
    assert active and active[0].drivers[0].value == "summarise"
