"""Wilson score interval (exporters/stats.py): the bounds of every exported defect rate."""

from __future__ import annotations

import math

import pytest

from exporters.stats import wilson_interval

@pytest.mark.parametrize(("defects", "total", "low", "high"), [
    (0, 10, 0.0, 0.2775),
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
    (40, 160, 0.1893, 0.3224),
])
def test_wilson_known_values(defects: float, total: float, low: float, high: float) -> None:
    got = wilson_interval(defects, total)
    assert got == pytest.approx((low, high), abs=5e-4)


def test_wilson_weighted_counts() -> None:
    # Weighted sums are fine; the rate is defects/total and n is total unless told otherwise.
    assert wilson_interval(2.5, 10.0) == pytest.approx(wilson_interval(25, 100, sample_size=10))
    narrow, wide = wilson_interval(250.0, 1000.0), wilson_interval(250.0, 1000.0, sample_size=100)
    assert wide[0] < narrow[0] < 0.25 < narrow[1] < wide[1]


def test_wilson_no_data_and_bad_input() -> None:
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    assert all(math.isnan(x) for x in wilson_interval(0, 5, sample_size=0))
    for args in ((-1, 5), (6, 5), (1, math.inf), (math.nan, 5)):
        with pytest.raises(ValueError):
            wilson_interval(*args)
    with pytest.raises(ValueError):
        wilson_interval(1, 5, z=0)
