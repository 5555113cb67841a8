"""Statistics harness: drives ``RegressionEngine`` with sampled, weighted traffic on a simulated clock.

Traffic
    Evaluations arrive as a Poisson process at ``rate_per_hour``. Each belongs to a route drawn
    from the *sampled* mix; its weight is the inverse of that route's inclusion probability times a
    post-stratification factor in [1, 1.25] (what the samplers write). Routes have different
    defect rates, so the weighted (population) rate differs from the sampled one, as in
    production. A score in [0, 1] comes with every verdict (lower when a defect).

Alerts
    The rules are evaluated every simulated minute, as Prometheus would: the release alert's
    condition is ``lower > 0`` of the defect-rate difference, the time-based one ``active``; an
    alert fires once its condition has held for ``for_minutes`` and an *episode* is counted
    each time it starts firing. ``for:`` is 5 minutes for the release alert (its bound is
    anytime-valid, so waiting adds no protection, only delay) and 15 minutes for the time-based one.

Scenarios
    ``aa_week``: no change for ``days``: a new version every day (a 10-minute rolling update with
    the same quality) and on day 3 a 6-hour canary on 10 % of traffic, also unchanged.
    ``release``: v1 for a warm-up day, then v2 with ``delta`` more defects, by rolling update
    (adjacent comparison) or as a canary on ``canary_share`` of traffic.
    ``shift``: the same version, the defect rate rises by ``delta`` at a time of day.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from monitor.regression import Observation, RegressionConfig, RegressionEngine

__all__ = [
    "AlertCounter",
    "RELEASE_FOR_MINUTES",
    "TIME_FOR_MINUTES",
    "AAResult",
    "DetectionResult",
    "Traffic",
    "run_aa_week",
    "run_release",
    "run_shift",
]

# The rules' ``for:``: the release alert reads an anytime-valid bound, so its ``for:`` only rides
# out a scrape or an evaluation gap (5m); the time-based alert keeps the usual 15m.
RELEASE_FOR_MINUTES = 5.0
TIME_FOR_MINUTES = 15.0

SERVICE = "chat"
METRIC = "groundedness"
_MINUTE = 60.0
_DAY = 86_400.0

# route -> (share of sampled evaluations, inclusion probability, defect rate multiplier)
_ROUTES = {"search": (0.5, 1.0, 0.8), "answer": (0.3, 0.5, 1.0), "summarise": (0.2, 0.5, 1.5)}


@dataclass(frozen=True, slots=True)
class Traffic:
    rate_per_hour: float
    base_rate: float = 0.05


class AlertCounter:
    """A Prometheus rule with ``for:``: counts firing episodes and the first time it fired."""

    def __init__(self, for_minutes: float) -> None:
        self._for = for_minutes * _MINUTE
        self._pending_since: float | None = None
        self.firing = False
        self.fired_at: list[float] = []

    def evaluate(self, at: float, condition: bool) -> None:
        if not condition:
            self._pending_since = None
            self.firing = False
            return
        if self._pending_since is None:
            self._pending_since = at
        if not self.firing and at - self._pending_since >= self._for:
            self.firing = True
            self.fired_at.append(at)

    @property
    def episodes(self) -> int:
        return len(self.fired_at)

    def first_after(self, at: float) -> float | None:
        return next((t for t in self.fired_at if t >= at), None)


@dataclass
class _World:
    """The simulated service: which versions answer, with which share and extra defect rate."""

    traffic: Traffic
    rng: random.Random
    engine: RegressionEngine
    now: float = 0.0
    # version -> (share of traffic, added defect rate)
    versions: dict[str, tuple[float, float]] = field(default_factory=dict)
    shift: float = 0.0
    shift_route: str | None = None
    evaluations: dict[str, int] = field(default_factory=dict)

    def emit(self, at: float) -> None:
        rng = self.rng
        names = list(self.versions)
        version = rng.choices(names, weights=[self.versions[n][0] for n in names])[0]
        routes = list(_ROUTES)
        route = rng.choices(routes, weights=[_ROUTES[r][0] for r in routes])[0]
        _, inclusion, multiplier = _ROUTES[route]
        weight = (1.0 / inclusion) * rng.uniform(1.0, 1.25)
        p = self.traffic.base_rate * multiplier + self.versions[version][1]
        if self.shift_route is None or self.shift_route == route:
            p += self.shift
        defect = rng.random() < min(1.0, p)
        score = min(1.0, max(0.0, (0.3 if defect else 0.85) + rng.gauss(0.0, 0.1)))
        model = "small" if rng.random() < 0.5 else "large"
        self.engine.observe(Observation(
            at=at, service=SERVICE, metric=METRIC, version=version, weight=weight, defect=defect,
            score=score, labels={"route": route, "model": model}))
        self.evaluations[version] = self.evaluations.get(version, 0) + 1


class _Simulation:
    """Advances the world minute by minute, emitting evaluations and evaluating the rules."""

    def __init__(self, traffic: Traffic, seed: int, config: RegressionConfig | None,
                 for_minutes: float, time_for_minutes: float = TIME_FOR_MINUTES) -> None:
        self.clock_now = 0.0
        self.engine = RegressionEngine(lambda: self.clock_now, config)
        self.world = _World(traffic, random.Random(seed), self.engine)
        self.release_alert = AlertCounter(for_minutes)
        self.time_alert = AlertCounter(time_for_minutes)
        self.score_alert = AlertCounter(time_for_minutes)
        self._next_arrival = self._draw_gap()

    def _draw_gap(self) -> float:
        return self.world.rng.expovariate(self.world.traffic.rate_per_hour / 3600.0)

    def run_until(self, end: float) -> None:
        while self.clock_now < end:
            minute_end = self.clock_now + _MINUTE
            while self._next_arrival < minute_end:
                self.world.emit(self._next_arrival)
                self._next_arrival += self._draw_gap()
            self.clock_now = minute_end
            self._evaluate_rules()

    def _evaluate_rules(self) -> None:
        now = self.clock_now
        lower = [c.lower for c in self.engine.releases(now) if c.metric == METRIC]
        self.release_alert.evaluate(now, any(x is not None and x > 0 for x in lower))
        active = {r.statistic: r.active for r in self.engine.regressions(now) if r.metric == METRIC}
        self.time_alert.evaluate(now, active.get("defect_rate", False))
        self.score_alert.evaluate(now, active.get("score", False))


@dataclass(frozen=True, slots=True)
class AAResult:
    rate_per_hour: float
    days: float
    release_episodes: int
    time_episodes: int
    score_episodes: int


def run_aa_week(rate_per_hour: float, seed: int, days: float = 7.0,
                for_minutes: float = RELEASE_FOR_MINUTES, time_for_minutes: float = TIME_FOR_MINUTES,
                config: RegressionConfig | None = None) -> AAResult:
    """No change at all: daily same-quality releases and one same-quality canary."""
    sim = _Simulation(Traffic(rate_per_hour), seed, config, for_minutes, time_for_minutes)
    world = sim.world
    world.versions = {"v0": (1.0, 0.0)}
    for day in range(int(math.ceil(days))):
        release_at = day * _DAY + 10 * 3600.0
        old, new = f"v{day}", f"v{day + 1}"
        if day == 3:
            # A canary: 10 % for six hours, then promoted.
            sim.run_until(min(days * _DAY, release_at))
            world.versions = {old: (0.9, 0.0), new: (0.1, 0.0)}
            sim.run_until(min(days * _DAY, release_at + 6 * 3600.0))
        else:
            sim.run_until(min(days * _DAY, release_at))
            world.versions = {old: (0.5, 0.0), new: (0.5, 0.0)}
            sim.run_until(min(days * _DAY, release_at + 600.0))
        world.versions = {new: (1.0, 0.0)}
    sim.run_until(days * _DAY)
    return AAResult(rate_per_hour, days, sim.release_alert.episodes, sim.time_alert.episodes,
                    sim.score_alert.episodes)


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """Hours from the change to the first firing (None: not within the horizon)."""

    release_delay_hours: float | None
    time_delay_hours: float | None
    candidate_evaluations_at_release_alarm: int | None
    release_false_before_change: int
    time_false_before_change: int


def run_release(rate_per_hour: float, delta: float, seed: int, canary_share: float = 1.0,
                horizon_hours: float = 12.0, warmup_days: float = 1.0,
                for_minutes: float = RELEASE_FOR_MINUTES, time_for_minutes: float = TIME_FOR_MINUTES,
                config: RegressionConfig | None = None) -> DetectionResult:
    """v1 for ``warmup_days``, then v2 with ``delta`` more defects on ``canary_share`` of traffic."""
    sim = _Simulation(Traffic(rate_per_hour), seed, config, for_minutes, time_for_minutes)
    world = sim.world
    world.versions = {"v1": (1.0, 0.0)}
    change = warmup_days * _DAY
    sim.run_until(change)
    before = (sim.release_alert.episodes, sim.time_alert.episodes)
    if canary_share < 1.0:
        world.versions = {"v1": (1.0 - canary_share, 0.0), "v2": (canary_share, delta)}
    else:
        world.versions = {"v1": (0.5, 0.0), "v2": (0.5, delta)}
        sim.run_until(change + 600.0)
        world.versions = {"v2": (1.0, delta)}
    candidate_at_alarm: int | None = None
    end = change + horizon_hours * 3600.0
    while sim.clock_now < end and sim.release_alert.first_after(change) is None:
        sim.run_until(sim.clock_now + _MINUTE)
    if sim.release_alert.first_after(change) is not None:
        candidate_at_alarm = world.evaluations.get("v2", 0)
    sim.run_until(end)
    return DetectionResult(
        release_delay_hours=_delay(sim.release_alert.first_after(change), change),
        time_delay_hours=_delay(sim.time_alert.first_after(change), change),
        candidate_evaluations_at_release_alarm=candidate_at_alarm,
        release_false_before_change=before[0],
        time_false_before_change=before[1],
    )


def run_shift(rate_per_hour: float, delta: float, seed: int, horizon_hours: float = 24.0,
              warmup_days: float = 2.0, route: str | None = None,
              for_minutes: float = RELEASE_FOR_MINUTES, time_for_minutes: float = TIME_FOR_MINUTES,
              config: RegressionConfig | None = None) -> tuple[DetectionResult, RegressionEngine]:
    """Same version throughout; the defect rate rises by ``delta`` (on one route if given)."""
    sim = _Simulation(Traffic(rate_per_hour), seed, config, for_minutes, time_for_minutes)
    world = sim.world
    world.versions = {"v1": (1.0, 0.0)}
    change = warmup_days * _DAY
    sim.run_until(change)
    before = sim.time_alert.episodes
    world.shift, world.shift_route = delta, route
    end = change + horizon_hours * 3600.0
    while sim.clock_now < end and sim.time_alert.first_after(change) is None:
        sim.run_until(sim.clock_now + _MINUTE)
    result = DetectionResult(
        release_delay_hours=None,
        time_delay_hours=_delay(sim.time_alert.first_after(change), change),
        candidate_evaluations_at_release_alarm=None,
        release_false_before_change=0,
        time_false_before_change=before,
    )
    return result, sim.engine


def _delay(at: float | None, change: float) -> float | None:
    return None if at is None else (at - change) / 3600.0
