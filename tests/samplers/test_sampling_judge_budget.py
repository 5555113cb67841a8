"""judge_budget under an injected clock: an hour of bursty traffic with simulated judge usage.

What is guaranteed and checked exactly: the tokens *reserved* at admission (the learned expected
cost of each admitted conversation) never exceed ``tokens_per_minute`` in any 60-second window.
What is checked statistically: the budget is mostly used when traffic allows it (reservations
>= 80% of min(demand, budget), minute by minute), the learned cost matches the simulated one,
and actual spend averages under the budget. Actual spend in a single minute can exceed the
budget (a conversation admitted now is judged over its next turns); see README.
"""

from __future__ import annotations

import heapq
import itertools
import random

import pytest

from monitor.model import Turn
from samplers import SamplingStage, build_sampler, load_sampling_config
from samplers.judge_budget import JudgeBudgetPolicy

BUDGET = 200_000.0
METRIC_TOKENS = {"groundedness": 300.0, "relevance": 200.0}  # mean judge tokens per turn
CONTINUE = 2 / 3  # geometric conversation length, mean 3 turns
TRUE_COST = 3 * sum(METRIC_TOKENS.values())
RATES_PER_MINUTE = [30, 60, 120, 300, 600, 1200]  # saturation at BUDGET / TRUE_COST = 133/min


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _arrivals(rng: random.Random, seconds: float) -> tuple[list[tuple[float, float, float]], list[float]]:
    phases, times, t = [], [], 0.0
    while t < seconds:
        end = min(seconds, t + rng.uniform(30, 300))
        rate = rng.choice(RATES_PER_MINUTE) / 60.0
        phases.append((t, end, rate))
        x = t + rng.expovariate(rate)
        while x < end:
            times.append(x)
            x += rng.expovariate(rate)
        t = end
    return phases, times


class Simulation:
    """Conversations arrive, continue every ~20 s, and sampled turns are judged ~3 s later."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = FakeClock()
        config = load_sampling_config(
            {"policies": [{"type": "judge_budget", "tokens_per_minute": BUDGET, "adjust_seconds": 5}]}
        )
        self.sampler = build_sampler(config, self.clock)
        assert isinstance(self.sampler.root, JudgeBudgetPolicy)
        self.policy = self.sampler.root
        self.stage = SamplingStage(self.sampler)
        self.phases, arrivals = _arrivals(self.rng, 3600.0)
        self.events: list[tuple[float, int, str, str, float]] = []
        for i, t in enumerate(arrivals):
            heapq.heappush(self.events, (t, 0, f"conv-{i}", "first", 0.0))
        self.reservations: list[tuple[float, float]] = []
        self.spend: list[tuple[float, float]] = []
        self.midway: tuple[float, float] | None = None

    def run(self) -> None:
        while self.events:
            t, kind, conversation, what, tokens = heapq.heappop(self.events)
            self.clock.now = t
            if kind == 1:
                self.stage.observe_usage(conversation, what, int(tokens))
                self.spend.append((t, tokens))
                continue
            self._turn(t, conversation, first=what == "first")
            if self.midway is None and t > 1800:
                costs = self.policy.cost_per_turn()
                self.midway = (sum(costs.values()), self.policy.turns_per_conversation())

    def _turn(self, t: float, conversation: str, first: bool) -> None:
        decision = self.stage.decide(Turn("t", conversation, "q", "a"))
        if first and decision.sampled:
            self.reservations.append((t, self.policy.expected_cost()))
        if decision.sampled:
            for metric, mean in METRIC_TOKENS.items():
                spent = max(1.0, self.rng.gauss(mean, mean / 4))
                heapq.heappush(self.events, (t + self.rng.uniform(1, 5), 1, conversation, metric, spent))
        if self.rng.random() < CONTINUE:
            heapq.heappush(self.events, (t + self.rng.expovariate(1 / 20), 0, conversation, "next", 0.0))

    def allowed_per_minute(self) -> list[float]:
        demand = [0.0] * 60
        for start, end, rate in self.phases:
            for minute in range(int(start // 60), min(60, int(end // 60) + 1)):
                overlap = min(end, (minute + 1) * 60) - max(start, minute * 60)
                if overlap > 0:
                    demand[minute] += rate * overlap * TRUE_COST
        return [min(d, BUDGET) for d in demand]


@pytest.fixture(scope="module", params=[0, 1, 2])
def simulation(request: pytest.FixtureRequest) -> Simulation:
    sim = Simulation(request.param)
    sim.run()
    return sim


def test_reserved_tokens_never_exceed_budget_in_any_window(simulation: Simulation) -> None:
    times = [t for t, _ in simulation.reservations]
    prefix = [0.0, *itertools.accumulate(c for _, c in simulation.reservations)]
    # Every 60 s window (t - 60, t] ending at an admission; windows ending elsewhere hold less.
    for i, t in enumerate(times):
        start = _first_after(times, t - 60.0)
        assert prefix[i + 1] - prefix[start] <= BUDGET * (1 + 1e-9), t


def _first_after(times: list[float], bound: float) -> int:
    import bisect

    return bisect.bisect_right(times, bound)


def test_budget_mostly_used_when_traffic_allows(simulation: Simulation) -> None:
    reserved = sum(c for t, c in simulation.reservations if t < 3600)
    allowed = sum(simulation.allowed_per_minute())
    assert reserved >= 0.8 * allowed, reserved / allowed


def test_actual_spend_averages_under_budget(simulation: Simulation) -> None:
    spent = sum(tokens for _, tokens in simulation.spend)
    assert spent <= BUDGET * (simulation.clock.now / 60.0)


def test_cost_model_is_learned(simulation: Simulation) -> None:
    assert simulation.midway is not None
    per_turn, turns = simulation.midway
    assert per_turn == pytest.approx(sum(METRIC_TOKENS.values()), rel=0.15)
    assert turns == pytest.approx(3.0, rel=0.2)


def test_priors_before_feedback_and_budget_per_replica() -> None:
    clock = FakeClock()
    config = load_sampling_config(
        {
            "policies": [
                {
                    "type": "judge_budget",
                    "tokens_per_minute": 40_000,
                    "replicas": 4,
                    "initial_tokens_per_turn": 1000,
                    "initial_turns_per_conversation": 2,
                }
            ]
        }
    )
    sampler = build_sampler(config, clock)
    policy = sampler.root
    assert isinstance(policy, JudgeBudgetPolicy)
    assert policy.expected_cost() == pytest.approx(2000.0)
    # 10,000 tokens per replica per minute = 5 conversations at the prior cost, then shed.
    outcomes = [sampler.draw(Turn("t", f"c{i}", "q", "a")).outcome for i in range(8)]
    assert outcomes == ["sampled"] * 5 + ["shed"] * 3
    clock.now = 60.0  # the first reservations leave the window
    assert sampler.draw(Turn("t", "later", "q", "a")).outcome == "sampled"


def test_probability_is_the_one_drawn_with() -> None:
    clock = FakeClock()
    config = load_sampling_config(
        {"policies": [{"type": "judge_budget", "tokens_per_minute": 10_000, "initial_tokens_per_turn": 100,
                       "initial_turns_per_conversation": 1, "adjust_seconds": 1}]}
    )
    sampler = build_sampler(config, clock)
    for i in range(2000):  # 1000 conversations per second offered
        clock.now = i / 1000
        sampler.decide(Turn("t", f"c{i}", "q", "a"))
    policy = sampler.root
    assert isinstance(policy, JudgeBudgetPolicy)
    clock.now = 2.0
    decision = sampler.decide(Turn("t", "next", "q", "a"))
    # 100 tokens per conversation, 60,000 conversations per minute, 9,000 tokens wanted.
    assert decision.probability == policy.probability == pytest.approx(9000 / 6_000_000, rel=0.05)
