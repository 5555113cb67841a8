"""The sampling policy in words: what the start-up log and the status page say."""

from __future__ import annotations

from samplers import SamplingConfig, load_sampling_config
from samplers.describe import describe_sampling


def test_default_in_words() -> None:
    text = describe_sampling(SamplingConfig())
    assert text == ("always (error exists | jailbreak_attempt == True), else rate_limit: every conversation "
                    "up to 0.2/s (burst 20), then a weighted sample")


def test_each_policy_type_in_words() -> None:
    config = load_sampling_config({"policies": [
        {"type": "always"},
        {"type": "probabilistic", "rate": 0.25, "name": "quarter"},
        {"type": "composite", "mode": "all_of", "policies": [
            {"type": "stratified", "by": "labels.route", "rates": {"billing": 0.5}, "default_rate": 0.05},
            {"type": "judge_budget", "tokens_per_minute": 200000, "replicas": 4}]},
    ]})
    assert describe_sampling(config) == (
        "always: every conversation, else quarter: 25% of conversations, else composite [stratified: by "
        "labels.route: rates {'billing': 0.5}, else 0.05 and judge_budget: as many conversations as 200000 "
        "judge tokens/min (4 replicas) allow]")
