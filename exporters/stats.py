"""Small, pure statistics shared by the exporters and the offline ``eval`` summary.

Only the standard library; no state, no I/O.
"""

from __future__ import annotations

import math

__all__ = ["wilson_interval", "newcombe_interval", "Z_95"]

Z_95 = 1.959963984540054
"""Two-sided 95% standard-normal quantile."""

# Weighted counts are sums of floats; allow for rounding when checking defects <= total.
_SLACK = 1e-9


def wilson_interval(defects: float, total: float, z: float = 1.96, *,
                    sample_size: float | None = None) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of the defect rate ``defects / total``.

    Works with weighted counts (sums of inverse-probability weights): the rate is
    ``defects / total`` and, unless ``sample_size`` is given, ``total`` is also the ``n`` of the
    interval. With weights > 1 the total overstates how many turns were actually observed and the
    interval comes out too narrow; pass the number of evaluated turns (or Kish's effective
    sample size ``(Σw)² / Σw²``) as ``sample_size`` to size the interval by what was observed.

    ``total == 0`` (or ``sample_size == 0``) → ``(nan, nan)``: no observation, no interval. NaN
    rather than None so a caller can hand both bounds to a gauge as they are (Prometheus shows
    NaN as "no data"); test with ``math.isnan``. Both bounds lie in [0, 1].

    Raises ``ValueError`` for negative or non-finite counts, ``defects > total`` or ``z <= 0``.
    """
    for name, value in (("defects", defects), ("total", total)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if defects > total * (1 + _SLACK) + _SLACK:
        raise ValueError(f"defects ({defects}) exceed total ({total})")
    if not math.isfinite(z) or z <= 0:
        raise ValueError(f"z must be > 0, got {z!r}")
    n = total if sample_size is None else sample_size
    if not math.isfinite(n) or n < 0:
        raise ValueError(f"sample_size must be a finite number >= 0, got {sample_size!r}")
    if total == 0 or n == 0:
        return (math.nan, math.nan)
    p = min(1.0, defects / total)
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # Clamp: rounding can push a bound a hair outside [0, 1] when p is 0 or 1.
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_interval(p1: float, low1: float, high1: float, p2: float, low2: float,
                      high2: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) of the difference ``p1 - p2`` of two
    independent rates, from each rate's own (Wilson) interval. Clamped to [-1, 1]."""
    d = p1 - p2
    low = d - math.sqrt((p1 - low1) ** 2 + (high2 - p2) ** 2)
    high = d + math.sqrt((high1 - p1) ** 2 + (p2 - low2) ** 2)
    return (max(-1.0, low), min(1.0, high))
