"""The agreement statistics: known values, an independent implementation (scikit-learn's kappa),
and the coverage of their 95 % intervals on seeded simulations."""

from __future__ import annotations

import math
import random

import pytest

from exporters.stats import wilson_interval
from monitor.calibration.agreement import Estimate, agreement, cohen_kappa, confusion, difference, kappa_difference

PASS, DEFECT = "pass", "defect"


def _pairs(counts: dict[tuple[str, str], int]) -> list[tuple[str, str]]:
    return [pair for pair, k in counts.items() for _ in range(k)]


# 2×2 table (judge, human): 20 both defect, 5 judge defect/person pass, 10 judge pass/person
# defect, 15 both pass → po = 0.7; judge says defect 25/50, people 30/50 → pe = 0.5·0.6 + 0.5·0.4
# = 0.5; kappa = (0.7 − 0.5) / 0.5 = 0.4.
TABLE = _pairs({(DEFECT, DEFECT): 20, (DEFECT, PASS): 5, (PASS, DEFECT): 10, (PASS, PASS): 15})


def test_agreement_is_the_share_with_wilsons_interval() -> None:
    result = agreement(TABLE)
    assert (result.value, result.n) == (0.7, 50)
    assert (result.lower, result.upper) == pytest.approx(wilson_interval(35, 50, 1.959963984540054))


def test_agreement_weighted_back_to_the_population_with_a_wider_interval() -> None:
    # The agreeing rows were sampled 4× less often: each counts 4 times.
    pairs = [(PASS, PASS)] * 30 + [(DEFECT, PASS)] * 30
    weights = [4.0] * 30 + [1.0] * 30
    weighted = agreement(pairs, weights)
    assert weighted.value == pytest.approx(120 / 150)
    # Kish's effective n (150² / (30·16 + 30) ≈ 44) < 60 rows: the interval is wider than the
    # same rate observed on 60 equally weighted rows.
    plain_low, plain_high = wilson_interval(0.8 * 60, 60, 1.959963984540054)
    assert weighted.upper - weighted.lower > plain_high - plain_low
    assert weighted.lower < weighted.value < weighted.upper


def test_kappa_of_the_textbook_table() -> None:
    result = cohen_kappa(TABLE, weights=None, categories=[PASS, DEFECT])
    assert result.value == pytest.approx(0.4)
    assert result.lower < 0.4 < result.upper and result.n == 50


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_scikit_learn(weights: str | None) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(7)
    human = [rng.randint(1, 5) for _ in range(200)]
    judge = [min(5, max(1, h + rng.choice((-2, -1, 0, 0, 0, 1)))) for h in human]
    ours = cohen_kappa(list(zip(judge, human)), weights=weights, categories=[1, 2, 3, 4, 5])  # type: ignore[arg-type]
    theirs = metrics.cohen_kappa_score(judge, human, weights=weights, labels=[1, 2, 3, 4, 5])
    assert ours.value == pytest.approx(theirs)


def test_quadratic_kappa_counts_near_misses_less() -> None:
    near = [(h, h + 1) for h in range(1, 5)] * 10 + [(h, h) for h in range(1, 6)] * 10
    far = [(1, 5), (5, 1), (2, 5), (5, 2)] * 10 + [(h, h) for h in range(1, 6)] * 10
    q_near = cohen_kappa(near, categories=[1, 2, 3, 4, 5]).value
    q_far = cohen_kappa(far, categories=[1, 2, 3, 4, 5]).value
    assert q_near > 0.8 > q_far


def test_kappa_undefined_when_everything_is_one_category() -> None:
    result = cohen_kappa([(PASS, PASS)] * 20, weights=None, categories=[PASS, DEFECT])
    assert math.isnan(result.value) and math.isnan(result.lower) and result.n == 20
    assert result.as_dict() == {"value": None, "lower": None, "upper": None, "n": 20}


def test_no_rows_no_estimate() -> None:
    for result in (agreement([]), cohen_kappa([], categories=[PASS, DEFECT]), difference([], [])):
        assert math.isnan(result.value) and result.n == 0


def test_a_label_outside_the_categories_is_named() -> None:
    with pytest.raises(ValueError, match=r"pair 1: human label 7 is not one of the categories"):
        cohen_kappa([(1, 1), (2, 7)], categories=[1, 2, 3])


def test_weights_must_be_inverse_probabilities() -> None:
    with pytest.raises(ValueError, match="weights must be finite and > 0"):
        agreement([(PASS, PASS)], [0.0])
    with pytest.raises(ValueError, match="2 weights for 1 pairs"):
        agreement([(PASS, PASS)], [1.0, 1.0])


def test_confusion_counts_judge_by_human() -> None:
    assert confusion(TABLE) == {DEFECT: {DEFECT: 20, PASS: 5}, PASS: {DEFECT: 10, PASS: 15}}
    assert confusion([(PASS, DEFECT)], [2.5]) == {PASS: {DEFECT: 2.5}}


def test_intervals_are_a_function_of_the_rows() -> None:
    assert cohen_kappa(TABLE, weights=None, categories=[PASS, DEFECT]) == \
        cohen_kappa(list(TABLE), weights=None, categories=[PASS, DEFECT])


def test_paired_difference_of_agreement() -> None:
    better = _pairs({(DEFECT, DEFECT): 30, (PASS, PASS): 20})
    result = difference(TABLE, better)
    assert result.value == pytest.approx(0.7 - 1.0)
    assert result.lower <= -0.3 <= result.upper < 0
    same = difference(TABLE, TABLE)
    assert (same.value, same.lower, same.upper) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same rows"):
        difference(TABLE, TABLE[:-1])


def test_difference_with_a_statistic_of_ones_own() -> None:
    def defect_share(pairs: object, _weights: object) -> float:
        rows = list(pairs)  # type: ignore[call-overload]
        return sum(j == DEFECT for j, _ in rows) / len(rows)

    result = difference(TABLE, _pairs({(PASS, PASS): 50}), statistic=defect_share)
    assert result.value == pytest.approx(0.5) and result.lower < 0.5 < result.upper


# --- coverage on seeded simulations --------------------------------------------------------------
#
# A population whose true agreement and kappa are known; many samples drawn with fixed seeds; the
# share of 95 % intervals containing the truth must be near 95 %. Bounds allow for the
# simulation's own noise (binomial sd ≈ 1.5–2 points at these counts) but fail an interval that is
# far too narrow (e.g. a normal interval without the bootstrap, or n mistaken for Kish's n).


def _draw(rng: random.Random, n: int, defect_share: float, error: float) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        human = DEFECT if rng.random() < defect_share else PASS
        wrong = rng.random() < error
        judge = (PASS if human == DEFECT else DEFECT) if wrong else human
        out.append((judge, human))
    return out


def _true_kappa(q: float, e: float) -> float:
    po = 1 - e
    judge_defect = q * (1 - e) + (1 - q) * e
    pe = judge_defect * q + (1 - judge_defect) * (1 - q)
    return (po - pe) / (1 - pe)


def _coverage(estimates: list[Estimate], truth: float) -> float:
    return sum(e.lower <= truth <= e.upper for e in estimates) / len(estimates)


def test_agreement_interval_covers_the_true_rate() -> None:
    rng = random.Random(2031)
    estimates = [agreement(_draw(rng, 80, 0.3, 0.12)) for _ in range(400)]
    assert 0.91 <= _coverage(estimates, 0.88) <= 0.99


def test_weighted_agreement_interval_covers_the_population_rate() -> None:
    # The review queue's design: defects (by the judge) reviewed with probability 0.8, passes with
    # 0.2. Agreement is higher on passes, so the unweighted share is biased; weighted it is not.
    rng = random.Random(4)
    truth_pass, truth_defect, defect_share = 0.95, 0.7, 0.2
    truth = defect_share * truth_defect + (1 - defect_share) * truth_pass
    estimates, unweighted = [], []
    for _ in range(300):
        pairs, weights = [], []
        while len(pairs) < 120:
            judged_defect = rng.random() < defect_share
            p = 0.8 if judged_defect else 0.2
            if rng.random() >= p:
                continue
            agree = rng.random() < (truth_defect if judged_defect else truth_pass)
            judge = DEFECT if judged_defect else PASS
            pairs.append((judge, judge if agree else (PASS if judged_defect else DEFECT)))
            weights.append(1 / p)
        estimates.append(agreement(pairs, weights))
        unweighted.append(agreement(pairs))
    assert 0.90 <= _coverage(estimates, truth) <= 0.99
    assert _coverage(unweighted, truth) < 0.5  # the sample's mix of defects is not the population's


def test_kappa_interval_covers_the_true_kappa() -> None:
    rng = random.Random(31)
    truth = _true_kappa(0.3, 0.12)
    estimates = [cohen_kappa(_draw(rng, 150, 0.3, 0.12), weights=None, categories=[PASS, DEFECT])
                 for _ in range(150)]
    assert 0.89 <= _coverage(estimates, truth) <= 0.995


def test_paired_difference_interval_covers_the_true_difference() -> None:
    rng = random.Random(5)
    truth_agreement = (1 - 0.25) - (1 - 0.10)
    truth_kappa = _true_kappa(0.4, 0.25) - _true_kappa(0.4, 0.10)
    agree, kappa = [], []
    for _ in range(120):
        humans = [DEFECT if rng.random() < 0.4 else PASS for _ in range(150)]
        flip = {DEFECT: PASS, PASS: DEFECT}
        a = [(flip[h] if rng.random() < 0.25 else h, h) for h in humans]
        b = [(flip[h] if rng.random() < 0.10 else h, h) for h in humans]
        agree.append(difference(a, b))
        kappa.append(kappa_difference(a, b, weights=None, categories=[PASS, DEFECT]))
    assert 0.89 <= _coverage(agree, truth_agreement) <= 0.995
    assert 0.89 <= _coverage(kappa, truth_kappa) <= 0.995
