"""How well a judge agrees with people: agreement, Cohen's kappa, confusion, and differences.

Pure functions on *pairs* ``(judge, human)`` of labels, one pair per judged row. A label is any
hashable value compared with ``==``: a verdict (``"pass"`` / ``"defect"``) for agreement on the
defect rule, or a point on a metric's integer scale for kappa. Callers map values to verdicts with
the metric's own defect rule before calling :func:`agreement`; nothing here knows about metrics.

Optional ``weights`` are inverse inclusion probabilities (a review queue that samples defects more
often than passes weights each reviewed row back to the population). Weights scale the estimate;
the interval is sized by Kish's effective sample size, so oversampling does not buy precision.

Every result is an :class:`Estimate` with a 95 % interval:

- agreement: Wilson's score interval (good at small n and near 1, where agreement lives);
- kappa and differences: a percentile bootstrap with a fixed seed, so the same rows always give
  the same interval (a CI gate must not flap on reruns).

Undefined values are NaN rather than None, as in :func:`exporters.stats.wilson_interval`, so they
can go to a gauge as they are; test with ``math.isnan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from exporters.stats import Z_95, wilson_interval

__all__ = [
    "Estimate",
    "Pair",
    "agreement",
    "cohen_kappa",
    "confusion",
    "difference",
    "kappa_difference",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
]

Pair = tuple[Hashable, Hashable]
"""``(judge label, human label)`` for one row."""

KappaWeights = Literal["quadratic", "linear"] | None

BOOTSTRAP_RESAMPLES = 2000
"""Resamples per bootstrap interval: the percentile bounds move by well under 0.01 between seeds."""

BOOTSTRAP_SEED = 31
"""Fixed, so an interval is a function of the rows alone."""

# Resamples are drawn in blocks so memory stays bounded (block × n indices) whatever n is.
_BLOCK_CELLS = 2_000_000

_FloatArray = npt.NDArray[np.float64]
_IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic ``value`` with its 95 % interval ``[lower, upper]`` over ``n`` rows.

    NaN value and bounds when the statistic is undefined (no rows; kappa when both raters put
    every row in one category)."""

    value: float
    lower: float
    upper: float
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        """JSON-ready: NaN becomes None (JSON has no NaN)."""
        return {"value": _json_float(self.value), "lower": _json_float(self.lower),
                "upper": _json_float(self.upper), "n": self.n}


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


_UNDEFINED = math.nan


def _weights_array(weights: Sequence[float] | None, n: int) -> _FloatArray:
    if weights is None:
        return np.ones(n, dtype=np.float64)
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} pairs")
    w = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and > 0 (inverse inclusion probabilities)")
    return w


def _kish(w: _FloatArray) -> float:
    """Kish's effective sample size ``(Σw)² / Σw²``: n for equal weights, less for unequal ones."""
    return float(w.sum() ** 2 / (w * w).sum())


def agreement(pairs: Sequence[Pair], weights: Sequence[float] | None = None) -> Estimate:
    """The (weighted) share of rows where judge and human give the same label, with Wilson's
    95 % interval sized by the effective sample size."""
    n = len(pairs)
    w = _weights_array(weights, n)
    if n == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, 0)
    same = np.fromiter((judge == human for judge, human in pairs), dtype=bool, count=n)
    total = float(w.sum())
    agreeing = float(w[same].sum())
    # wilson_interval speaks of "defects"; here the counted event is agreement.
    lower, upper = wilson_interval(agreeing, total, Z_95, sample_size=_kish(w))
    return Estimate(agreeing / total, lower, upper, n)


def confusion(pairs: Sequence[Pair], weights: Sequence[float] | None = None
              ) -> dict[str, dict[str, float]]:
    """Counts ``{judge label: {human label: count}}`` (weighted sums when weights are given).

    Labels are turned into strings (JSON keys); only combinations that occur are present."""
    w = _weights_array(weights, len(pairs))
    table: dict[str, dict[str, float]] = {}
    for (judge, human), weight in zip(pairs, w, strict=True):
        row = table.setdefault(str(judge), {})
        row[str(human)] = row.get(str(human), 0.0) + float(weight)
    if weights is None:
        return {j: {h: int(c) for h, c in row.items()} for j, row in table.items()}
    return table


def _disagreement_weights(k: int, kind: KappaWeights) -> _FloatArray:
    i, j = np.indices((k, k))
    if kind is None:
        return (i != j).astype(np.float64)
    if k < 2:
        return np.zeros((k, k), dtype=np.float64)
    if kind == "quadratic":
        return ((i - j) ** 2 / (k - 1) ** 2).astype(np.float64)
    if kind == "linear":
        return (np.abs(i - j) / (k - 1)).astype(np.float64)
    raise ValueError(f"unknown kappa weights {kind!r}: quadratic, linear or None")


def _codes(pairs: Sequence[Pair], categories: Sequence[Hashable]) -> tuple[_IntArray, _IntArray]:
    index = {c: i for i, c in enumerate(categories)}
    if len(index) != len(categories):
        raise ValueError("categories must be distinct")
    judge = np.empty(len(pairs), dtype=np.int64)
    human = np.empty(len(pairs), dtype=np.int64)
    for row, (a, b) in enumerate(pairs):
        for side, label, out in (("judge", a, judge), ("human", b, human)):
            if label not in index:
                raise ValueError(f"pair {row}: {side} label {label!r} is not one of the "
                                 f"categories {list(categories)!r}")
            out[row] = index[label]
    return judge, human


def _kappa_batch(cells: _IntArray, w: _FloatArray, disagree: _FloatArray, k: int) -> _FloatArray:
    """Kappa for each row of ``cells`` (B × n cell codes ``judge*k + human``) with row weights
    ``w`` (B × n). Undefined (NaN) where the chance disagreement is 0."""
    b = cells.shape[0]
    flat = (cells + (np.arange(b, dtype=np.int64) * k * k)[:, None]).ravel()
    counts = np.bincount(flat, weights=w.ravel(), minlength=b * k * k).reshape(b, k, k)
    totals = counts.sum(axis=(1, 2))
    p = counts / totals[:, None, None]
    observed = (p * disagree).sum(axis=(1, 2))
    rows = p.sum(axis=2)
    cols = p.sum(axis=1)
    expected = np.einsum("bi,bj,ij->b", rows, cols, disagree)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - observed / expected
    kappa[expected <= 1e-12] = np.nan
    result: _FloatArray = kappa
    return result


def _resample_indices(n: int) -> list[_IntArray]:
    """The bootstrap's row indices in bounded blocks; the same for every call with this ``n``."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    block = max(1, min(BOOTSTRAP_RESAMPLES, _BLOCK_CELLS // max(1, n)))
    blocks = []
    left = BOOTSTRAP_RESAMPLES
    while left > 0:
        size = min(block, left)
        blocks.append(rng.integers(0, n, size=(size, n), dtype=np.int64))
        left -= size
    return blocks


def _percentile_interval(samples: _FloatArray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    # Most resamples undefined (tiny n, one category): no honest interval.
    if finite.size < BOOTSTRAP_RESAMPLES // 2:
        return (_UNDEFINED, _UNDEFINED)
    low, high = np.quantile(finite, [0.025, 0.975])
    return (float(low), float(high))


def cohen_kappa(pairs: Sequence[Pair], *, weights: KappaWeights = "quadratic",
                categories: Sequence[Hashable], row_weights: Sequence[float] | None = None
                ) -> Estimate:
    """Cohen's kappa of judge against human over ordered ``categories``.

    ``weights`` is the disagreement weighting: ``"quadratic"`` (for integer scales: a 4 against
    a 5 costs 1/16 of a 1 against a 5), ``"linear"``, or ``None`` (plain kappa, for verdicts).
    ``row_weights`` are optional inverse inclusion probabilities. The interval is a percentile
    bootstrap over rows with a fixed seed. Raises ``ValueError`` for a label outside
    ``categories``."""
    n = len(pairs)
    w = _weights_array(row_weights, n)
    k = len(categories)
    disagree = _disagreement_weights(k, weights)
    judge, human = _codes(pairs, categories)
    if n == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, 0)
    cells = judge * k + human
    value = float(_kappa_batch(cells[None, :], w[None, :], disagree, k)[0])
    if math.isnan(value):
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, n)
    samples = np.concatenate([_kappa_batch(cells[idx], w[idx], disagree, k)
                              for idx in _resample_indices(n)])
    lower, upper = _percentile_interval(samples)
    return Estimate(value, lower, upper, n)


Statistic = Callable[[Sequence[Pair], Sequence[float] | None], float]


def _agreement_value(pairs: Sequence[Pair], weights: Sequence[float] | None) -> float:
    return agreement(pairs, weights).value


def difference(a_pairs: Sequence[Pair], b_pairs: Sequence[Pair], *,
               statistic: Statistic | None = None,
               weights: Sequence[float] | None = None) -> Estimate:
    """``statistic(a) − statistic(b)`` on the same rows (row i of ``a_pairs`` and of ``b_pairs``
    is the same labelled item judged two ways), with a paired percentile bootstrap: each resample
    draws rows once and scores both judges on them, so row difficulty cancels out.

    ``statistic`` defaults to agreement's value; pass e.g. ``lambda p, w: cohen_kappa(p,
    categories=..., row_weights=w).value`` for kappa — but prefer :func:`kappa_difference`,
    which is vectorised."""
    n = len(a_pairs)
    if len(b_pairs) != n:
        raise ValueError(f"paired difference needs the same rows: {n} against {len(b_pairs)}")
    w = _weights_array(weights, n)
    if n == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, 0)
    if statistic is None:
        same_a = np.fromiter((j == h for j, h in a_pairs), dtype=bool, count=n)
        same_b = np.fromiter((j == h for j, h in b_pairs), dtype=bool, count=n)
        return _agreement_difference(same_a, same_b, w)
    value = statistic(a_pairs, weights) - statistic(b_pairs, weights)
    draws = []
    for block in _resample_indices(n):
        for idx in block:
            rows_a = [a_pairs[i] for i in idx]
            rows_b = [b_pairs[i] for i in idx]
            ws = [float(w[i]) for i in idx]
            draws.append(statistic(rows_a, ws) - statistic(rows_b, ws))
    lower, upper = _percentile_interval(np.asarray(draws, dtype=np.float64))
    return Estimate(value, lower, upper, n)


def _agreement_difference(same_a: npt.NDArray[np.bool_], same_b: npt.NDArray[np.bool_],
                          w: _FloatArray) -> Estimate:
    diff = (same_a.astype(np.float64) - same_b.astype(np.float64))
    value = float((w * diff).sum() / w.sum())
    samples = np.concatenate([(w[idx] * diff[idx]).sum(axis=1) / w[idx].sum(axis=1)
                              for idx in _resample_indices(len(diff))])
    lower, upper = _percentile_interval(samples)
    return Estimate(value, lower, upper, len(diff))


def kappa_difference(a_pairs: Sequence[Pair], b_pairs: Sequence[Pair], *,
                     weights: KappaWeights = "quadratic", categories: Sequence[Hashable],
                     row_weights: Sequence[float] | None = None) -> Estimate:
    """Kappa of ``a`` minus kappa of ``b`` on the same rows, with a paired bootstrap interval."""
    n = len(a_pairs)
    if len(b_pairs) != n:
        raise ValueError(f"paired difference needs the same rows: {n} against {len(b_pairs)}")
    w = _weights_array(row_weights, n)
    k = len(categories)
    disagree = _disagreement_weights(k, weights)
    ja, ha = _codes(a_pairs, categories)
    jb, hb = _codes(b_pairs, categories)
    if n == 0:
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, 0)
    cells_a, cells_b = ja * k + ha, jb * k + hb
    value = float(_kappa_batch(cells_a[None, :], w[None, :], disagree, k)[0]
                  - _kappa_batch(cells_b[None, :], w[None, :], disagree, k)[0])
    if math.isnan(value):
        return Estimate(_UNDEFINED, _UNDEFINED, _UNDEFINED, n)
    samples = np.concatenate([
        _kappa_batch(cells_a[idx], w[idx], disagree, k) - _kappa_batch(cells_b[idx], w[idx], disagree, k)
        for idx in _resample_indices(n)])
    lower, upper = _percentile_interval(samples)
    return Estimate(value, lower, upper, n)
