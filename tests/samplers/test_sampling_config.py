"""Config validation names the bad key; building follows the config."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from monitor.model import Turn
from samplers import SamplingConfig, SamplingConfigError, build_sampler, error_lines, load_sampling_config
from samplers.composite import CompositePolicy


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(SamplingConfigError) as caught:
        load_sampling_config(data)
    return str(caught.value)


@pytest.mark.parametrize(
    ("policies", "path"),
    [
        ([{"type": "probabilistic", "rate": 1.5}], "policies.0.rate"),
        ([{"type": "probabilistic", "rate": -0.1}], "policies.0.rate"),
        ([{"type": "probabilistic", "rate": float("nan")}], "policies.0.rate"),
        ([{"type": "probabilistic"}], "policies.0.rate"),
        ([{"type": "probabilistic", "rate": 0.1, "rat": 1}], "policies.0.rat"),
        ([{"type": "sometimes"}], "policies.0.type"),
        ([{"rate": 0.1}], "policies.0.type"),
        ([{"type": "composite", "policies": []}], "policies.0.policies"),
        (
            [{"type": "composite", "policies": [{"type": "probabilistic", "rate": 2}]}],
            "policies.0.policies.0.rate",
        ),
        ([{"type": "always", "rules": [], "mach": "all"}], "policies.0.mach"),
        ([{"type": "always", "rules": [{"field": "nope", "op": "exists"}]}], "policies.0.rules.0.field"),
        ([{"type": "always", "rules": [{"field": "error", "op": "<", "value": "x"}]}], "policies.0.rules.0.value"),
        ([{"type": "always", "rules": [{"field": "error", "op": "=="}]}], "policies.0.rules.0.value"),
        ([{"type": "rate_limit", "conversations_per_second": 0}], "policies.0.conversations_per_second"),
        ([{"type": "judge_budget", "tokens_per_minute": 1000, "replicas": 0}], "policies.0.replicas"),
        ([{"type": "stratified", "by": "labels.route", "rates": {"a": 3}, "default_rate": 0}],
         "policies.0.rates.a"),
        ([{"type": "stratified", "by": "labels.route", "rates": {"a": 0.3}}], "policies.0"),
        ([], "policies"),
    ],
)
def test_error_names_the_key(policies: list[dict[str, Any]], path: str) -> None:
    message = _error({"policies": policies})
    assert f"{path}:" in message


def test_stratified_needs_its_default() -> None:
    assert "default_rate" in _error({"policies": [{"type": "stratified", "by": "service", "rates": {"a": 0.3}}]})
    assert "exactly one" in _error({"policies": [{"type": "stratified", "by": "service", "default_rate": 0.1}]})


def test_duplicate_names_are_rejected_with_their_path() -> None:
    message = _error(
        {"policies": [{"type": "probabilistic", "rate": 0.1}, {"type": "probabilistic", "rate": 0.2}]}
    )
    assert "policies.1.name" in message and "policies.0" in message


def test_unknown_top_level_key() -> None:
    assert "salts:" in _error({"salts": "x"})


def test_error_lines_for_an_enclosing_model() -> None:
    class Root(BaseModel):
        sampling: SamplingConfig

    with pytest.raises(ValidationError) as caught:
        Root.model_validate({"sampling": {"policies": [{"type": "probabilistic", "rate": 7}]}})
    assert error_lines(caught.value)[0].startswith("sampling.policies.0.rate:")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_default_evaluates_everything_at_low_traffic_and_caps_high_traffic() -> None:
    clock = _Clock()
    sampler = build_sampler(SamplingConfig.model_validate({}), clock)
    assert isinstance(sampler.root, CompositePolicy)
    assert sampler.decide(Turn("t", "c", "q", "a", error="boom")).probability == 1.0
    assert sampler.decide(Turn("t", "c", "q", "a", jailbreak_attempt=True)).policy == "always"
    sampler = build_sampler(SamplingConfig.model_validate({}), clock)
    # A developer's first hour: 10 conversations a minute, every one evaluated at weight 1.
    low = []
    for i in range(60):
        clock.now = 6.0 * i
        low.append(sampler.decide(Turn("t", f"low{i}", "q", "a")))
    assert all(d.sampled and d.probability == 1.0 and d.policy == "rate_limit" for d in low)
    # Production traffic: 20 conversations/s for 5 minutes. The rate cap holds (burst 20 + 0.2/s)
    # and the kept ones carry their weight 1/p.
    high = []
    start = clock.now + 10.0
    for i in range(20 * 300):
        clock.now = start + i / 20
        high.append(sampler.decide(Turn("t", f"high{i}", "q", "a")))
    kept = [d for d in high if d.sampled]
    assert len(kept) <= 20 + 0.2 * 300
    assert len(kept) >= 0.5 * 0.2 * 300
    assert min(d.probability for d in kept[-10:]) < 0.05


def test_always_without_rules_keeps_every_conversation() -> None:
    config = load_sampling_config({"policies": [{"type": "always"}]})
    sampler = build_sampler(config, lambda: 0.0)
    decisions = [sampler.decide(Turn("t", f"c{i}", "q", "a")) for i in range(500)]
    assert all(d.sampled and d.probability == 1.0 and d.weight == 1.0 for d in decisions)


def test_full_example_builds() -> None:
    config = load_sampling_config(
        {
            "salt": "app",
            "max_conversations": 5000,
            "policies": [
                {"type": "always", "rules": [
                    {"field": "error", "op": "exists"},
                    {"field": "labels.feedback", "op": "<", "value": 3},
                    {"field": "signals.toxicity", "op": ">=", "value": 0.8},
                ]},
                {"type": "composite", "name": "budgeted", "mode": "all_of", "policies": [
                    {"type": "stratified", "by": "labels.route", "quotas": {"billing": 1}, "default_quota": 5},
                    {"type": "judge_budget", "tokens_per_minute": 200_000, "replicas": 2},
                ]},
                {"type": "rate_limit", "conversations_per_second": 1, "burst": 5},
            ],
        }
    )
    sampler = build_sampler(config, lambda: 0.0)
    toxic = sampler.decide(Turn("t", "c", "q", "a"), {"toxicity": 0.9})
    assert toxic.sampled and toxic.policy == "always"
    assert sampler.decide(Turn("t", "d", "q", "a", labels={"route": "billing"})).sampled
