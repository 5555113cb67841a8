"""Confidence sequences: exactness of the sums, shape of the boundary, coverage under monitoring."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from monitor.regression.sequential import (
    Interval,
    MixtureBoundary,
    RunningIntersection,
    WeightedSums,
    difference_interval,
    mean_interval,
)


def _sums(pairs: list[tuple[float, float]]) -> WeightedSums:
    out = WeightedSums()
    for w, x in pairs:
        out.add(w, x)
    return out


def _from_arrays(n: int, sw: float, swx: float, sw2: float, sw2x: float, sw2x2: float) -> WeightedSums:
    out = WeightedSums()
    out.n, out.sw, out.swx, out.sw2, out.sw2x, out.sw2x2 = n, sw, swx, sw2, sw2x, sw2x2
    return out


def test_merged_buckets_equal_one_pass() -> None:
    rng = random.Random(1)
    pairs = [(rng.uniform(1, 4), rng.random()) for _ in range(300)]
    whole = _sums(pairs)
    merged = WeightedSums()
    for start in range(0, 300, 37):
        merged.merge(_sums(pairs[start:start + 37]))
    assert merged.n == whole.n
    assert merged.mean() == pytest.approx(whole.mean())
    assert merged.variance_of_mean(False) == pytest.approx(whole.variance_of_mean(False))


def test_linearised_variance_matches_the_ratio_estimator_formula() -> None:
    rng = random.Random(2)
    pairs = [(rng.choice([1.0, 2.0, 5.0]), float(rng.random() < 0.3)) for _ in range(400)]
    sums = _sums(pairs)
    m = sum(w * x for w, x in pairs) / sum(w for w, _ in pairs)
    expected = sum(w * w * (x - m) ** 2 for w, x in pairs) / sum(w for w, _ in pairs) ** 2
    assert sums.variance_of_mean(False) == pytest.approx(expected, rel=1e-3)  # floor ~1/n² only
    binary = sums.variance_of_mean(True)
    assert binary is not None and expected <= binary <= 1.1 * expected  # the floor never lowers it


def test_no_defect_in_a_small_sample_is_not_certainty() -> None:
    sums = _sums([(1.0, 0.0)] * 20)
    interval = mean_interval(sums, MixtureBoundary(0.05, 1000.0), binary=True)
    assert interval is not None
    assert interval.estimate == 0.0
    assert interval.upper > 0.05


def test_boundary_is_tightest_near_its_design_point() -> None:
    boundary = MixtureBoundary(0.05, 4000.0)
    # In standard errors: h·sqrt(I), smallest around I = 4000.
    widths = {info: boundary.half_width(1.0 / info) * math.sqrt(info) for info in (400, 4000, 40_000)}
    assert widths[4000] < widths[400]
    assert widths[4000] < widths[40_000]
    assert 2.9 < widths[4000] < 3.2  # ≈ 3.0 standard errors at α = 0.05 (1.96 fixed-sample)


def test_empty_sides_give_no_interval() -> None:
    assert difference_interval(WeightedSums(), _sums([(1.0, 1.0)]), MixtureBoundary(0.05, 1.0), True) is None


def test_difference_covers_the_truth_under_continuous_monitoring() -> None:
    """Miscoverage over a whole path, checked after every 10 evaluations, stays below α.

    3000 paths of up to 2000 weighted evaluations per side (Bernoulli 10 % vs 10 %, weights 1, 2
    or 4 times a factor in [1, 1.25]); the path counts as a miss if any look excludes 0.
    """
    rng = np.random.default_rng(7)
    paths, steps, every, alpha = 3000, 2000, 10, 0.05
    boundary = MixtureBoundary.for_evaluations(alpha, 200, 0.05)

    def cumulative(p: float) -> tuple[np.ndarray, ...]:
        w = rng.choice([1.0, 2.0, 4.0], size=(paths, steps)) * rng.uniform(1.0, 1.25, size=(paths, steps))
        x = (rng.random((paths, steps)) < p).astype(float)
        pick = slice(every - 1, None, every)
        return tuple(np.cumsum(a, axis=1)[:, pick] for a in (w, w * x, w * w, w * w * x, w * w * x * x))

    cand, base = cumulative(0.1), cumulative(0.1)
    missed = 0
    for path in range(paths):
        for look in range(20, steps // every):  # from 200 evaluations a side on
            n = (look + 1) * every
            c = _from_arrays(n, *(float(a[path, look]) for a in cand))
            b = _from_arrays(n, *(float(a[path, look]) for a in base))
            interval = difference_interval(c, b, boundary, binary=True)
            assert interval is not None
            if not interval.lower <= 0.0 <= interval.upper:
                missed += 1
                break
    assert missed / paths <= alpha


def test_a_fixed_sample_interval_looked_at_continuously_does_not_cover() -> None:
    """The same paths with 1.96 standard errors: the harness would see it fail (sanity check)."""
    rng = random.Random(11)
    missed = 0
    for _ in range(300):
        c, b = WeightedSums(), WeightedSums()
        for n in range(1, 2001):
            c.add(1.0, float(rng.random() < 0.1))
            b.add(1.0, float(rng.random() < 0.1))
            if n >= 200 and n % 10 == 0:
                mc, mb = c.mean(), b.mean()
                vc, vb = c.variance_of_mean(True), b.variance_of_mean(True)
                assert mc is not None and mb is not None and vc is not None and vb is not None
                if abs(mc - mb) > 1.96 * math.sqrt(vc + vb):
                    missed += 1
                    break
    assert missed / 300 > 0.15


def test_running_intersection_keeps_the_tightest_bounds_and_restarts_when_empty() -> None:
    running = RunningIntersection()
    assert running.update(None) is None
    first = running.update(Interval(0.02, -0.01, 0.05))
    assert first == Interval(0.02, -0.01, 0.05)
    second = running.update(Interval(0.0, -0.03, 0.03))  # a wider-below, tighter-above look
    assert second == Interval(0.0, -0.01, 0.03)
    moved = running.update(Interval(0.2, 0.15, 0.25))  # disjoint: the quantity moved
    assert moved == Interval(0.2, 0.15, 0.25)
