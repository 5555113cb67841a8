"""rate_limit under an injected clock: an hour of bursty traffic."""

from __future__ import annotations

import bisect
import random

from monitor.model import Turn
from samplers import build_sampler, load_sampling_config

RATE = 5.0  # conversations per second
BURST = 10.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingTelemetry:
    def __init__(self) -> None:
        self.decisions: dict[tuple[str, str], int] = {}
        self.probabilities: list[tuple[str, float]] = []
        self.evicted = 0

    def decision(self, policy: str, outcome: str) -> None:
        self.decisions[(policy, outcome)] = self.decisions.get((policy, outcome), 0) + 1

    def probability(self, policy: str, value: float) -> None:
        self.probabilities.append((policy, value))

    def cache_evicted(self, count: int) -> None:
        self.evicted += count


def bursty_traffic(seed: int, seconds: float) -> tuple[list[tuple[float, float, float]], list[float]]:
    """Phases of 20-300 s whose Poisson rate jumps between 0.1x and 30x ``RATE``."""
    rng = random.Random(seed)
    phases, arrivals, t = [], [], 0.0
    while t < seconds:
        end = min(seconds, t + rng.uniform(20, 300))
        rate = RATE * rng.choice([0.1, 0.5, 0.8, 1.5, 3.0, 10.0, 30.0])
        phases.append((t, end, rate))
        x = t + rng.expovariate(rate)
        while x < end:
            arrivals.append(x)
            x += rng.expovariate(rate)
        t = end
    return phases, arrivals


def _simulate(seed: int) -> tuple[list[float], float, RecordingTelemetry]:
    clock, telemetry = FakeClock(), RecordingTelemetry()
    config = load_sampling_config(
        {"policies": [{"type": "rate_limit", "conversations_per_second": RATE, "burst": BURST}]}
    )
    sampler = build_sampler(config, clock, telemetry)
    phases, arrivals = bursty_traffic(seed, 3600.0)
    kept = []
    for i, t in enumerate(arrivals):
        clock.now = t
        result = sampler.draw(Turn("t", f"conv-{i}", "q", "a"))
        if result.outcome == "sampled":
            kept.append(t)
            assert result.decision.probability > 0
    # What the limit allows: the offered traffic, or the rate, whichever is smaller, per phase.
    allowed = sum(min(rate, RATE) * (end - start) for start, end, rate in phases)
    return kept, allowed, telemetry


def test_limit_never_exceeded_and_mostly_used() -> None:
    for seed in range(3):
        kept, allowed, telemetry = _simulate(seed)
        # Token bucket bound: at most burst + rate * T admissions in any closed window of T s.
        for window in (1.0, 10.0, 60.0, 600.0):
            most = max(bisect.bisect_right(kept, t + window) - i for i, t in enumerate(kept))
            assert most <= BURST + RATE * window, (seed, window, most)
        # The adaptive probability aims at 90% of the rate; allow for lag at phase changes.
        assert len(kept) >= 0.8 * allowed, (seed, len(kept) / allowed)
        sheds = telemetry.decisions.get(("rate_limit", "shed"), 0)
        assert telemetry.decisions[("rate_limit", "sampled")] == len(kept)
        assert sheds < 0.25 * len(kept)
        assert telemetry.probabilities and all(0 < p <= 1 for _, p in telemetry.probabilities)


def test_probability_follows_steady_traffic() -> None:
    clock = FakeClock()
    config = load_sampling_config({"policies": [{"type": "rate_limit", "conversations_per_second": 2}]})
    sampler = build_sampler(config, clock)
    rng = random.Random(7)
    t, last = 0.0, None
    for i in range(20_000):
        t += rng.expovariate(20.0)  # 20/s offered, 2/s wanted -> p ~ 0.9 * 2 / 20
        clock.now = t
        last = sampler.decide(Turn("t", f"c{i}", "q", "a"))
    assert last is not None and abs(last.probability - 0.09) < 0.03
