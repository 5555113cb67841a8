"""Defect rates with 95% intervals, and the interval of a difference of two rates.

A rate's interval is Wilson's score interval (good at small n and at rates near 0 or 1, where
most safety defect rates live). The difference of two independent rates uses Newcombe's hybrid
score interval (Newcombe 1998, method 10), built from the two Wilson intervals; for paired data
(the same questions with and without an injection) it is conservative, i.e. a little wide.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporters.stats import Z_95, newcombe_interval, wilson_interval

__all__ = ["Rate", "Difference", "rate", "difference"]


@dataclass(frozen=True, slots=True)
class Rate:
    """``defects`` of ``n`` with its 95% interval; ``value``/bounds are None when ``n`` is 0."""

    defects: int
    n: int
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class Difference:
    """``value`` = attacked rate − baseline rate, with its 95% interval (None without data)."""

    value: float | None
    low: float | None
    high: float | None


def rate(defects: int, n: int) -> Rate:
    """The defect rate ``defects / n`` with its Wilson 95% interval."""
    if n == 0:
        return Rate(defects, 0, None, None, None)
    low, high = wilson_interval(defects, n, Z_95)
    return Rate(defects, n, defects / n, low, high)


def difference(attacked: Rate, baseline: Rate) -> Difference:
    """Newcombe's hybrid score interval of ``attacked − baseline``."""
    if (attacked.value is None or baseline.value is None or attacked.low is None or attacked.high is None
            or baseline.low is None or baseline.high is None):
        return Difference(None, None, None)
    low, high = newcombe_interval(attacked.value, attacked.low, attacked.high,
                                  baseline.value, baseline.low, baseline.high)
    return Difference(attacked.value - baseline.value, low, high)
