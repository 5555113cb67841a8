"""The review queue's stratified draw: deterministic, at the configured rate per stratum, and
the inclusion probability the verdict join weights by."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from monitor.config import MonitorConfig
from monitor.feedback.review import ReviewDesign, draw_number, inclusion_probability
from monitor.feedback.review_config import ReviewConfig


def _ids(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


def test_draw_number_is_fixed_by_the_pair_and_in_unit_interval() -> None:
    a = draw_number("4bf92f3577b34da6a3ce929d0e0e4736", "groundedness")
    assert a == draw_number("4bf92f3577b34da6a3ce929d0e0e4736", "groundedness")
    assert a != draw_number("4bf92f3577b34da6a3ce929d0e0e4736", "relevance")
    assert all(0.0 <= draw_number(t, "m") < 1.0 for t in _ids(1000))


def test_each_stratum_is_drawn_at_its_own_rate() -> None:
    design = ReviewDesign(ReviewConfig.model_validate({"probabilities": {"defect": 0.5, "pass": 0.05}}))
    ids = _ids(20_000)
    defects = sum(design.drawn(t, "groundedness", "defect") for t in ids) / len(ids)
    passes = sum(design.drawn(t, "groundedness", "pass") for t in ids) / len(ids)
    # Binomial standard errors are 0.0035 and 0.0015: five of them either side.
    assert abs(defects - 0.5) < 0.018
    assert abs(passes - 0.05) < 0.008


def test_a_drawn_pass_is_drawn_as_a_defect_too() -> None:
    # One number per pair: raising a stratum's probability only adds pairs, so a pair offered as
    # a pass stays offered if the judge's verdict on a re-run is a defect (higher rate).
    design = ReviewDesign(ReviewConfig())
    for t in _ids(2000):
        if design.drawn(t, "m", "pass"):
            assert design.drawn(t, "m", "defect")


def test_inclusion_probability_of_drawn_and_undrawn_pairs() -> None:
    config = ReviewConfig.model_validate({"probabilities": {"defect": 1.0, "pass": 0.2},
                                          "metric_probabilities": {"relevance": {"defect": 0.0, "pass": 1.0}}})
    design = ReviewDesign(config)
    ids = _ids(500)
    assert all(inclusion_probability(design, t, "groundedness", "defect") == 1.0 for t in ids)
    passes = [inclusion_probability(design, t, "groundedness", "pass") for t in ids]
    assert set(passes) == {0.2, None}
    assert [p is not None for p in passes] == [draw_number(t, "groundedness") < 0.2 for t in ids]
    # The per-metric override replaces both strata of its metric.
    assert all(design.inclusion_probability(t, "relevance", "defect") is None for t in ids)
    assert all(design.inclusion_probability(t, "relevance", "pass") == 1.0 for t in ids)
    # No judge verdict known (yet), or not a verdict: no known probability.
    assert design.inclusion_probability(ids[0], "groundedness", None) is None
    assert design.inclusion_probability(ids[0], "groundedness", "error") is None


def test_horvitz_thompson_weighting_recovers_the_population_share() -> None:
    # 10 % defects judged; the queue oversamples them 10x; weighting the drawn pairs by 1/p gives
    # the population's defect share back, the unweighted queue does not.
    design = ReviewDesign(ReviewConfig.model_validate({"probabilities": {"defect": 0.5, "pass": 0.05}}))
    rng = random.Random(3)
    population = [(t, "defect" if rng.random() < 0.1 else "pass") for t in _ids(40_000, seed=11)]
    drawn = [(v, design.inclusion_probability(t, "m", v)) for t, v in population]
    drawn = [(v, p) for v, p in drawn if p is not None]
    weighted = sum(1 / p for v, p in drawn if v == "defect") / sum(1 / p for _, p in drawn)
    truth = sum(v == "defect" for _, v in population) / len(population)
    assert abs(weighted - truth) < 0.015
    assert sum(v == "defect" for v, _ in drawn) / len(drawn) > 0.4


def test_config_section_and_its_errors() -> None:
    config = MonitorConfig.model_validate({"review": {"probabilities": {"pass": 0.25}, "max_items": 50}})
    assert config.review.probability("any", "pass") == 0.25
    assert config.review.probability("any", "defect") == 0.5
    with pytest.raises(ValidationError, match="pass"):
        ReviewConfig.model_validate({"probabilities": {"pass": 1.5}})
    with pytest.raises(ValidationError, match="not a metric id"):
        ReviewConfig.model_validate({"metric_probabilities": {"bad id": {}}})
    with pytest.raises(ValidationError):
        ReviewConfig.model_validate({"probabilties": {}})
