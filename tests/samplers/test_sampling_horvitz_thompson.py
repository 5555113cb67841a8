"""Horvitz–Thompson: weighted defect rates estimate the population; unweighted ones do not.

Population (fixed, seeded): stratum "small" with 20,000 conversations and a 30% defect rate,
sampled at 50%; stratum "big" with 200,000 conversations and a 2% defect rate, sampled at 2%.
True population rate R = (6,000 + 4,000) / 220,000 = 4.55%.

The exporters' estimate is the ratio R_hat = sum(w * defect) / sum(w) over sampled conversations,
w = 1/p. Under Poisson sampling (independent inclusions with probability p_i; hash-based draws
behave so) its linearised variance is

    Var(R_hat) ~= (1 / N^2) * sum_i (1 - p_i) / p_i * (y_i - R)^2

computed below from the population itself (about 0.002 here); we require |R_hat - R| <= 4 sd.
The unweighted rate is about 3,080 / 14,000 = 22%: biased by more than 50 sd.
"""

from __future__ import annotations

import math
import random

from monitor.model import Turn
from samplers import SamplingStage, build_sampler, load_sampling_config

STRATA = {"small": (20_000, 0.30, 0.50), "big": (200_000, 0.02, 0.02)}  # size, defect rate, p


def _population() -> list[tuple[str, str, bool]]:
    rng = random.Random(2024)
    population = []
    for route, (size, rate, _) in STRATA.items():
        defects = set(rng.sample(range(size), round(size * rate)))
        population += [(f"{route}-{i}", route, i in defects) for i in range(size)]
    return population


def test_weighted_estimate_is_unbiased_and_unweighted_is_not() -> None:
    population = _population()
    config = load_sampling_config(
        {
            "salt": "ht-test",
            "policies": [
                {
                    "type": "stratified",
                    "by": "labels.route",
                    "rates": {route: p for route, (_, _, p) in STRATA.items()},
                    "default_rate": 0.0,
                }
            ],
        }
    )
    stage = SamplingStage(build_sampler(config, lambda: 0.0), max_conversations=1000)
    weight = {"defect": 0.0, "pass": 0.0}
    count = {"defect": 0, "pass": 0}
    for conversation, route, defect in population:
        decision = stage.decide(Turn("t", conversation, "q", "a", labels={"route": route}))
        if decision.sampled:
            outcome = "defect" if defect else "pass"
            weight[outcome] += decision.weight  # what rag_monitor_evaluation_weight_total adds
            count[outcome] += 1

    true_rate = sum(d for _, _, d in population) / len(population)
    estimate = weight["defect"] / (weight["defect"] + weight["pass"])
    unweighted = count["defect"] / (count["defect"] + count["pass"])

    p_of = {route: p for route, (_, _, p) in STRATA.items()}
    variance = sum((1 - p_of[r]) / p_of[r] * (d - true_rate) ** 2 for _, r, d in population)
    sd = math.sqrt(variance) / len(population)

    assert 0.0015 < sd < 0.003  # the bound stated in the docstring
    assert abs(estimate - true_rate) <= 4 * sd, (estimate, true_rate, sd)
    assert abs(unweighted - true_rate) > 50 * sd, (unweighted, true_rate)
    # Total weight estimates the population size too.
    total = weight["defect"] + weight["pass"]
    assert abs(total - len(population)) / len(population) < 0.05
