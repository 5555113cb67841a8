"""composite: combined inclusion probabilities against enumeration of the shared uniform."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from monitor.model import Turn
from samplers import PolicySampler, uniform
from samplers.base import Plan, Signals
from samplers.build import build_policy
from samplers.composite import CompositePolicy
from samplers.config import SamplingConfig
from samplers.probabilistic import ProbabilisticPolicy
from samplers.telemetry import NullSamplingTelemetry

GRID = 4096  # every leaf probability below is a multiple of 1/8: the grid count is exact


def _clock() -> float:
    return 0.0


def _policy(tree: dict[str, Any]) -> Any:
    config = SamplingConfig.model_validate({"policies": [tree]})
    return build_policy(config.policies[0], _clock, NullSamplingTelemetry())


def _selects(tree: dict[str, Any], turn: Turn, u: float) -> bool:
    """Reference semantics, written independently of the implementation."""
    kind = tree["type"]
    if kind == "probabilistic":
        return u < float(tree["rate"])
    if kind == "stratified":
        return u < float(tree["rates"].get(turn.labels.get("route"), tree["default_rate"]))
    if kind == "always":
        return turn.error is not None
    children = [_selects(child, turn, u) for child in tree["policies"]]
    return any(children) if tree.get("mode", "first_match") == "first_match" else all(children)


def _leaf(value: float | str) -> dict[str, Any]:
    if value == "always":
        return {"type": "always", "rules": [{"field": "error", "op": "exists"}]}
    if value == "strat":
        return {"type": "stratified", "by": "labels.route", "rates": {"small": 0.75}, "default_rate": 0.125}
    return {"type": "probabilistic", "rate": value}


def _trees() -> list[dict[str, Any]]:
    leaves: list[float | str] = [0.0, 0.125, 0.5, 0.875, 1.0, "always", "strat"]
    trees = []
    for mode in ("first_match", "all_of"):
        for pair in itertools.combinations(leaves, 2):
            trees.append({"type": "composite", "mode": mode, "policies": [_leaf(v) for v in pair]})
    for outer, inner in itertools.product(("first_match", "all_of"), repeat=2):
        triples: list[tuple[float | str, float | str, float | str]] = [
            (0.125, 0.5, 0.875),
            (0.875, "strat", "always"),
            (0.5, "always", 0.25),
        ]
        for a, b, c in triples:
            nested = {"type": "composite", "mode": inner, "policies": [_leaf(b), _leaf(c)]}
            trees.append({"type": "composite", "mode": outer, "policies": [_leaf(a), nested]})
    return trees


def _rename(tree: dict[str, Any], counter: itertools.count[int]) -> dict[str, Any]:
    # Names must be unique in a config.
    renamed = {**tree, "name": f"n{next(counter)}"}
    if "policies" in tree:
        renamed["policies"] = [_rename(child, counter) for child in tree["policies"]]
    return renamed


TURNS = [
    Turn("t", "c", "q", "a"),
    Turn("t", "c", "q", "a", error="boom"),
    Turn("t", "c", "q", "a", labels={"route": "small"}),
]


@pytest.mark.parametrize("tree", _trees(), ids=[f"tree{i}" for i in range(len(_trees()))])
def test_probability_matches_enumeration(tree: dict[str, Any]) -> None:
    tree = _rename(tree, itertools.count())
    policy = _policy(tree)
    for turn in TURNS:
        plan: Plan = policy.plan(turn, {})
        grid = [(k + 0.5) / GRID for k in range(GRID)]
        enumerated = sum(_selects(tree, turn, u) for u in grid) / GRID
        assert plan.probability == pytest.approx(enumerated, abs=1e-12)
        # And the implementation selects exactly on the reference's set.
        assert all(plan.selects(u) == _selects(tree, turn, u) for u in grid)


def test_sampler_decisions_equal_reference_on_real_ids() -> None:
    tree = _rename(_trees()[-1], itertools.count())
    sampler = PolicySampler(_policy(tree), "salt")
    for i in range(3000):
        turn = Turn("t", f"conv-{i}", "q", "a", labels={"route": "small" if i % 3 else "big"})
        expected = _selects(tree, turn, uniform("salt", f"conv-{i}"))
        assert sampler.decide(turn).sampled is expected


def test_first_match_credits_first_selecting_child() -> None:
    tree = {"type": "composite", "policies": [
        {"type": "always", "name": "errors", "rules": [{"field": "error", "op": "exists"}]},
        {"type": "probabilistic", "name": "all", "rate": 1.0},
    ]}
    sampler = PolicySampler(_policy(tree), "s")
    on_error = sampler.decide(Turn("t", "c1", "q", "a", error="x"))
    plain = sampler.decide(Turn("t", "c2", "q", "a"))
    assert (on_error.policy, on_error.probability) == ("errors", 1.0)
    assert (plain.policy, plain.probability) == ("all", 1.0)


class _Capped:
    """A child with p = 1 and a capacity of ``room`` admissions."""

    def __init__(self, name: str, room: int) -> None:
        self.name = name
        self.room = room

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        return Plan(self.name, 1.0)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        return None if self.room > 0 else self.name

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        self.room -= 1
        return self.name


def test_all_of_spends_nothing_when_one_child_refuses() -> None:
    roomy, full = _Capped("roomy", 5), _Capped("full", 0)
    sampler = PolicySampler(CompositePolicy("both", "all_of", [roomy, full]), "s")
    result = sampler.draw(Turn("t", "c", "q", "a"))
    assert (result.outcome, result.decision.policy) == ("shed", "full")
    assert roomy.room == 5


def test_first_match_falls_through_to_next_selecting_child() -> None:
    full, roomy = _Capped("full", 0), _Capped("roomy", 1)
    sampler = PolicySampler(CompositePolicy("any", "first_match", [full, roomy]), "s")
    assert sampler.draw(Turn("t", "c1", "q", "a")).decision.policy == "roomy"
    second = sampler.draw(Turn("t", "c2", "q", "a"))
    assert (second.outcome, second.decision.policy) == ("shed", "full")


def test_empty_composite_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        CompositePolicy("x", "all_of", [])
    with pytest.raises(ValueError):
        CompositePolicy("x", "sometimes", [ProbabilisticPolicy("p", 0.5)])  # type: ignore[arg-type]
