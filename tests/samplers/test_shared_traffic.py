"""Adaptive policies in a fleet: the fleet's arrivals set the probability, this replica's share of the
fleet's cap bounds its bucket, and judge_budget.replicas is ignored (deprecated) with a warning."""

from __future__ import annotations

import logging

from samplers.build import build_sampler
from samplers.config import load_sampling_config
from tests.samplers.test_weighting import Clock


class Fleet:
    def __init__(self, rate: float | None, size: int) -> None:
        self.rate = rate
        self.size = size
        self.asked: list[tuple[str, float]] = []

    def arrival_rate(self, node: str, horizon_seconds: float) -> float | None:
        self.asked.append((node, horizon_seconds))
        return self.rate

    def share(self) -> float:
        return 1.0 / self.size


def _turn():
    from monitor.model import Turn
    return Turn("a" * 32, "c", "q?", "a.")


def test_the_fleets_arrival_rate_sets_the_probability():
    clock = Clock()
    config = load_sampling_config({"policies": [{"type": "rate_limit", "conversations_per_second": 9,
                                                 "adjust_seconds": 10}]})
    fleet = Fleet(rate=30.0, size=3)
    sampler = build_sampler(config, clock, shared=fleet)
    sampler.draw(_turn())  # this replica alone saw one arrival
    clock.now += 10
    result = sampler.draw(_turn())
    assert fleet.asked[-1] == ("rate_limit", 10.0)
    assert result.decision.probability == 0.9 * 9 / 30.0  # from the fleet's 30/s, not this replica's


def test_each_replica_holds_its_share_of_the_cap():
    clock = Clock()
    config = load_sampling_config({"policies": [{"type": "rate_limit", "conversations_per_second": 6,
                                                 "burst": 6}]})
    sampler = build_sampler(config, clock, shared=Fleet(rate=None, size=3))
    outcomes = [sampler.draw(_turn()).outcome for _ in range(10)]
    assert outcomes.count("sampled") == 2  # burst 6 shared by 3 replicas: 2 here


def test_judge_budget_replicas_is_ignored_in_a_fleet(caplog):
    caplog.set_level(logging.WARNING)
    config = load_sampling_config({"policies": [{"type": "judge_budget", "tokens_per_minute": 9000,
                                                 "replicas": 3}]})
    alone = build_sampler(config, Clock()).root
    fleet = build_sampler(config, Clock(), shared=Fleet(rate=None, size=1)).root
    assert alone._budget == 3000  # type: ignore[attr-defined]  (without a fleet: its share)
    assert fleet._fleet_budget == 9000  # type: ignore[attr-defined]
    assert any("'replicas' is deprecated and ignored" in r.getMessage() for r in caplog.records)
