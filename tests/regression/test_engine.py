"""RegressionEngine: which versions are compared, how, and within which bounds."""

from __future__ import annotations

import random

import pytest

from monitor.regression import Observation, RegressionConfig, RegressionEngine, ReleaseComparison
from monitor.regression.attribution import LabelTable, drivers

_HOUR = 3600.0


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _engine(**overrides: object) -> tuple[RegressionEngine, _Clock]:
    clock = _Clock()
    return RegressionEngine(clock, RegressionConfig(**overrides)), clock  # type: ignore[arg-type]


def _traffic(engine: RegressionEngine, clock: _Clock, rng: random.Random, hours: float,
             per_hour: float, versions: dict[str, tuple[float, float]], metric: str = "groundedness",
             route_rates: dict[str, float] | None = None) -> None:
    """Poisson traffic; ``versions`` maps version -> (share, defect rate)."""
    end = clock.now + hours * _HOUR
    names = list(versions)
    while True:
        clock.now += rng.expovariate(per_hour / _HOUR)
        if clock.now >= end:
            clock.now = end
            return
        version = rng.choices(names, weights=[versions[n][0] for n in names])[0]
        route = rng.choice(["search", "answer"])
        p = versions[version][1] + (route_rates or {}).get(route, 0.0)
        defect = rng.random() < p
        engine.observe(Observation(at=clock.now, service="chat", metric=metric, version=version,
                                   weight=rng.choice([1.0, 2.0]), defect=defect,
                                   score=0.3 if defect else 0.9, labels={"route": route}))


def _only(engine: RegressionEngine) -> ReleaseComparison:
    comparisons = engine.releases()
    assert len(comparisons) == 1
    return comparisons[0]


def test_a_worse_release_gets_a_positive_lower_bound_and_an_unchanged_one_does_not() -> None:
    engine, clock = _engine()
    rng = random.Random(1)
    _traffic(engine, clock, rng, 24, 600, {"v1": (1.0, 0.05)})
    _traffic(engine, clock, rng, 3, 600, {"v2": (1.0, 0.12)})
    worse = _only(engine)
    assert (worse.baseline, worse.candidate, worse.mode) == ("v1", "v2", "adjacent")
    assert worse.lower is not None and worse.lower > 0 and worse.regressed
    assert worse.upper is not None and worse.lower < 0.07 < worse.upper
    assert worse.score_difference is not None and worse.score_difference < 0
    _traffic(engine, clock, rng, 6, 600, {"v3": (1.0, 0.12)})
    same = _only(engine)
    assert (same.baseline, same.candidate) == ("v2", "v3")
    assert same.lower is not None and same.lower <= 0 and not same.regressed
    counts = engine.metric_evaluations("chat")
    assert set(counts) == {"v1", "v2", "v3"} and 3000 < counts["v3"]["groundedness"] < 4200
    assert engine.metric_evaluations("nobody") == {}


def test_a_rollback_makes_the_returning_version_the_candidate() -> None:
    engine, clock = _engine()
    rng = random.Random(2)
    _traffic(engine, clock, rng, 4, 60, {"v1": (1.0, 0.05)})
    _traffic(engine, clock, rng, 4, 60, {"v2": (1.0, 0.30)})
    assert (_only(engine).baseline, _only(engine).candidate) == ("v1", "v2")
    _traffic(engine, clock, rng, 2, 60, {"v1": (1.0, 0.05)})
    back = _only(engine)
    assert (back.baseline, back.candidate, back.mode) == ("v2", "v1", "adjacent")
    # Only v1's evaluations since it came back are the candidate's: about 2 h at 60/h.
    assert 80 <= back.n_candidate <= 160
    assert back.upper is not None and back.upper < 0  # the rollback fixed it
    _traffic(engine, clock, rng, 2, 60, {"v3": (1.0, 0.05)})
    assert (_only(engine).baseline, _only(engine).candidate) == ("v1", "v3")


def test_quiet_spells_of_a_small_canary_are_not_rollbacks() -> None:
    engine, clock = _engine()
    rng = random.Random(3)
    _traffic(engine, clock, rng, 6, 20, {"v1": (1.0, 0.05)})
    _traffic(engine, clock, rng, 48, 20, {"v1": (0.9, 0.05), "v2": (0.1, 0.05)})
    comparison = _only(engine)
    assert (comparison.baseline, comparison.candidate, comparison.mode) == ("v1", "v2", "canary")
    # v2's history since its start counts: a restart at one of its hour-long quiet spells would
    # leave a few hours. (Canary evaluations in 5-minute buckets v1 did not answer are left out.)
    v2 = next(v for v in engine.versions("chat") if v.version == "v2")
    assert v2.evaluations > 60
    assert comparison.n_candidate >= 0.6 * v2.evaluations


def test_a_canary_is_compared_on_the_same_minutes_only() -> None:
    """Nights are worse for everyone; a canary that only runs by day must not look better."""
    engine, clock = _engine()
    rng = random.Random(4)
    _traffic(engine, clock, rng, 24, 600, {"v1": (1.0, 0.05)})
    for _ in range(4):
        _traffic(engine, clock, rng, 8, 600, {"v1": (0.8, 0.05), "v2": (0.2, 0.05)})  # day
        _traffic(engine, clock, rng, 16, 600, {"v1": (1.0, 0.25)})  # night: v1 only, worse
    comparison = _only(engine)
    assert comparison.mode == "canary"
    assert comparison.defect_rate_baseline == pytest.approx(0.05, abs=0.01)
    assert comparison.lower is not None and comparison.upper is not None
    assert comparison.lower <= 0 <= comparison.upper


def test_adjacent_baseline_is_the_latest_evaluations_before_the_switch() -> None:
    engine, clock = _engine(adjacent_baseline_evaluations=300)
    rng = random.Random(5)
    _traffic(engine, clock, rng, 10, 600, {"v1": (1.0, 0.40)})  # long ago: much worse
    _traffic(engine, clock, rng, 2, 600, {"v1": (1.0, 0.05)})  # just before the switch
    _traffic(engine, clock, rng, 2, 600, {"v2": (1.0, 0.05)})
    comparison = _only(engine)
    assert 300 <= comparison.n_baseline < 400  # whole 5-minute buckets up to the cap
    assert comparison.defect_rate_baseline == pytest.approx(0.05, abs=0.03)


def test_no_interval_before_the_minimum_evaluations() -> None:
    engine, clock = _engine(min_evaluations=50)
    rng = random.Random(6)
    _traffic(engine, clock, rng, 2, 60, {"v1": (1.0, 0.05)})
    _traffic(engine, clock, rng, 0.5, 60, {"v2": (1.0, 0.05)})
    comparison = _only(engine)
    assert comparison.n_candidate < 50
    assert comparison.lower is None and comparison.upper is None and not comparison.regressed
    assert comparison.defect_rate_candidate is not None


def test_state_is_bounded() -> None:
    engine, clock = _engine(versions_per_service=5, max_metrics_per_service=3, max_services=2,
                            release_buckets_per_version=10)
    for i in range(12):
        clock.now += 600.0
        engine.observe(Observation(at=clock.now, service="chat", metric="m", version=f"v{i}",
                                   defect=False))
    assert [v.version for v in engine.versions("chat")] == [f"v{i}" for i in range(7, 12)]
    for m in range(5):
        engine.observe(Observation(at=clock.now, service="chat", metric=f"x{m}", version="v11",
                                   defect=True))
    for s in range(3):
        engine.observe(Observation(at=clock.now, service=f"svc{s}", metric="m", version="a",
                                   defect=True))
    assert engine.dropped == 3 + 2  # metrics x2..x4 beyond 3 per service, svc1 and svc2
    assert engine.services() == ["chat", "svc0"]
    for i in range(100):
        clock.now += 300.0
        engine.observe(Observation(at=clock.now, service="chat", metric="m", version="v11",
                                   defect=False))
    # Only the last 10 buckets of v11 remain: adjacent comparisons count what is kept.
    comparison = next(c for c in engine.releases() if c.metric == "m")
    assert comparison.candidate == "v11" and comparison.n_candidate <= 11


def test_release_drivers_name_the_route_that_got_worse() -> None:
    engine, clock = _engine()
    rng = random.Random(7)
    _traffic(engine, clock, rng, 12, 600, {"v1": (1.0, 0.05)})
    _traffic(engine, clock, rng, 4, 600, {"v2": (1.0, 0.05)}, route_rates={"answer": 0.2})
    comparison = _only(engine)
    assert comparison.drivers and comparison.drivers[0].label == "route"
    assert comparison.drivers[0].value == "answer" and comparison.drivers[0].share > 0.8
    assert comparison.drivers[0].after is not None and comparison.drivers[0].after > 0.2


def test_regressions_report_every_armed_detector() -> None:
    engine, clock = _engine(detector_min_reference_evaluations=50)
    rng = random.Random(8)
    _traffic(engine, clock, rng, 6, 60, {"v1": (1.0, 0.05)})
    found = engine.regressions()
    assert {(r.metric, r.statistic) for r in found} == {("groundedness", "defect_rate"),
                                                       ("groundedness", "score")}
    assert all(not r.active and r.threshold == pytest.approx(4.0) for r in found)


def test_shift_share_terms_add_up_to_the_change() -> None:
    before, after = LabelTable(4, 8), LabelTable(4, 8)
    for route, n, p in (("a", 100, 0.1), ("b", 100, 0.1)):
        for i in range(n):
            before.add({"route": route}, 1.0, float(i < n * p))
    for route, n, p in (("a", 100, 0.1), ("b", 300, 0.3)):
        for i in range(n):
            after.add({"route": route}, 1.0, float(i < n * p))
    found = drivers(before, after, limit=3)
    assert [d.value for d in found] == ["b"]  # a's share of traffic fell: no positive term
    assert found[0].share == pytest.approx(1.0)
    assert (found[0].before, found[0].after, found[0].n) == (pytest.approx(0.1), pytest.approx(0.3), 300)


def test_label_values_beyond_the_bound_fold_into_other() -> None:
    table = LabelTable(labels=1, values_per_label=3)
    for value in "abcdef":
        table.add({"route": value, "model": "m"}, 1.0, 1.0)
    assert set(table.cells("route")) == {"a", "b", "other"}
    assert table.cells("route")["other"][0] == 4
    assert list(table.keys()) == ["route"]


def test_observation_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        Observation(at=0.0, service="s", metric="m", version="v", weight=0.0, defect=True)
    with pytest.raises(ValueError):
        Observation(at=0.0, service="s", metric="m", version="v", score=1.5)
    with pytest.raises(ValueError):
        RegressionConfig(versions_per_service=1)


def test_bounds_do_not_depend_on_when_they_are_asked() -> None:
    """Replicas fed the same evaluations agree, whether asked every minute or once."""
    often, clock_often = _engine()
    once, _ = _engine()
    rng = random.Random(9)
    observations = []
    t = 0.0
    for hours, version, p in ((6.0, "v1", 0.05), (3.0, "v2", 0.09)):
        end = t + hours * _HOUR
        while (t := t + rng.expovariate(600.0 / _HOUR)) < end:
            observations.append(Observation(at=t, service="chat", metric="m", version=version,
                                            weight=rng.choice([1.0, 2.0]), defect=rng.random() < p))
        t = end
    asked = 0
    for obs in observations:
        often.observe(obs)
        once.observe(obs)
        if obs.at - asked >= 60.0:
            asked = int(obs.at)
            clock_often.now = obs.at
            often.releases()
    assert often.releases() == once.releases()
    assert once.releases()[0].lower is not None
