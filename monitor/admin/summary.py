"""``/api/summary``: rolling defect rates per metric, with what the numbers mean and why some
evaluations produced none.

``{"generated_at": <unix s>, "windows": [{"name": "5m", "seconds": 300.0}, ...],
"longest_window": "1h", "trend_window": "5m", "trend_seconds": 300.0,
"metrics": {<metric>: M}, "jailbreak": J or null}``

J (the Azure seed's jailbreak comparison, online; ``exporters.jailbreak_rates``): {<window>:
{"flagged": W, "rest": W, "difference", "lower", "upper"}} — the content-risk defect rate of the
turns flagged as jailbreak attempts and of the rest, and flagged − rest with its 95% Newcombe
interval (null without data on either side).

M: ``windows`` ({<window>: W}), ``trend`` ([T, ...], oldest first), ``change`` (C or null),
``data_since`` (unix s of the oldest data still in the longest window, or null), ``info`` (I or
null for a metric not in the configuration), ``reasons`` ({"skipped": [R], "error": [R]}, over
the longest window; empty without the result store).

W: ``seconds``; ``evaluations`` (scored turns: pass + defect); ``defects``, ``errors``,
``skipped``, ``refused`` (counts; ``refused``: unscored_refused, the judge refused or a content
filter blocked the call — possibly harmful, not scored, not in the defect rate); ``weight``, ``defect_weight`` (sums of inverse-probability weights);
``effective_n`` (Kish effective sample size behind the interval); ``defect_rate`` (weighted,
0–1); ``lower``/``upper`` (95% Wilson bounds); ``mean`` (mean score on the metric's scale).

T (``trend_window`` in at most 24 steps: the shortest window holding all data, so a young
process draws minutes, not one dot): ``start`` (unix s), ``evaluations``, ``defect_rate``,
``lower``/``upper``, ``mean``. C (``monitor.admin.trend``): ``index``, ``start``, ``before``,
``after``, ``direction`` (up | down). I (``monitor.admin.catalogue``): ``summary``, ``tier``,
``scale``, ``direction`` (higher_is_better | higher_is_worse), ``defect_rule``, ``enabled``,
``off_reason``. R: ``cause`` (error type, or skip reason), ``count``, ``example`` (one reason).
Every rate, bound and mean is ``null`` when there is no scored evaluation — never ``0``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Protocol, Sequence

from exporters.turn_queries import OutcomeReason
from monitor.admin.catalogue import MetricDescription, catalogue_document
from monitor.admin.trend import TrendPointLike, change_document, find_change, trend_seconds

__all__ = ["WindowStatsView", "TrendPointView", "SummarySource", "ReasonView", "window_document",
           "summary_document", "TREND_POINTS"]

TREND_POINTS = 24


class WindowStatsView(Protocol):
    """Rolling statistics of one metric over one window (``exporters.rolling.WindowStats``)."""

    @property
    def seconds(self) -> float: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def defects(self) -> int: ...
    @property
    def errors(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def refused(self) -> int: ...
    @property
    def weight(self) -> float: ...
    @property
    def defect_weight(self) -> float: ...
    @property
    def effective_n(self) -> float: ...
    @property
    def defect_rate(self) -> float: ...
    @property
    def lower(self) -> float: ...
    @property
    def upper(self) -> float: ...
    @property
    def mean_score(self) -> float: ...


class TrendPointView(TrendPointLike, Protocol):
    """``exporters.rolling.TrendPoint``: what change detection reads, plus what the page draws."""

    @property
    def defect_rate(self) -> float: ...
    @property
    def mean_score(self) -> float: ...
    @property
    def lower(self) -> float: ...
    @property
    def upper(self) -> float: ...


class SummarySource(Protocol):
    """Rolling defect rates (``exporters.rolling.RollingStats``). Thread-safe; called in a thread."""

    @property
    def windows(self) -> tuple[tuple[str, float], ...]: ...

    def summary(self) -> Mapping[str, Mapping[str, WindowStatsView]]: ...

    def trend(self, metric: str, points: int = 60, seconds: float | None = None) -> Sequence[TrendPointView]: ...

    def data_since(self) -> Mapping[str, float]: ...


ReasonView = OutcomeReason  # the store's own record


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def window_document(stats: WindowStatsView) -> dict[str, Any]:
    """One window's stats as the ``W`` object (NaN and infinities as null)."""
    return {
        "seconds": stats.seconds, "evaluations": stats.evaluations, "defects": stats.defects,
        "errors": stats.errors, "skipped": stats.skipped, "refused": stats.refused,
        "weight": _finite(stats.weight),
        "defect_weight": _finite(stats.defect_weight), "effective_n": _finite(stats.effective_n),
        "defect_rate": _finite(stats.defect_rate), "lower": _finite(stats.lower),
        "upper": _finite(stats.upper), "mean": _finite(stats.mean_score),
    }


def _point(p: TrendPointView) -> dict[str, Any]:
    return {"start": p.start, "evaluations": p.evaluations, "defect_rate": _finite(p.defect_rate),
            "lower": _finite(p.lower), "upper": _finite(p.upper), "mean": _finite(p.mean_score)}


def _reasons(reasons: Sequence[ReasonView], metric: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"skipped": [], "error": []}
    for r in reasons:
        if r.metric == metric and r.outcome in out and len(out[r.outcome]) < 5:
            out[r.outcome].append({"cause": r.key, "count": r.count, "example": r.example})
    return out


class JailbreakWindowView(Protocol):
    @property
    def window(self) -> str: ...
    @property
    def flagged(self) -> WindowStatsView: ...
    @property
    def rest(self) -> WindowStatsView: ...
    @property
    def difference(self) -> float: ...
    @property
    def lower(self) -> float: ...
    @property
    def upper(self) -> float: ...


class JailbreakSource(Protocol):
    def comparison(self) -> Sequence[JailbreakWindowView]: ...


def jailbreak_document(source: JailbreakSource | None) -> dict[str, Any] | None:
    """The ``J`` object (None when no comparison is wired)."""
    if source is None:
        return None
    return {c.window: {"flagged": window_document(c.flagged), "rest": window_document(c.rest),
                       "difference": _finite(c.difference), "lower": _finite(c.lower), "upper": _finite(c.upper)}
            for c in source.comparison()}


def summary_document(source: SummarySource, now: float, *, catalogue: Mapping[str, MetricDescription] | None = None,
                     reasons: Sequence[ReasonView] = (), trend_points: int = TREND_POINTS,
                     jailbreak: JailbreakSource | None = None) -> dict[str, Any]:
    """Build the document. Blocking (reads the rolling counters): run in a thread."""
    windows = tuple(sorted(source.windows, key=lambda w: w[1]))
    per_metric = source.summary()
    since = source.data_since()
    info = catalogue_document(catalogue or {})
    oldest = min(since.values(), default=None)
    span_name, span = trend_seconds(windows, oldest, now)
    metrics: dict[str, Any] = {}
    for metric in [*info, *sorted(m for m in per_metric if m not in info)]:
        points = source.trend(metric, trend_points, span)
        metrics[metric] = {
            "windows": {name: window_document(stats) for name, stats in per_metric.get(metric, {}).items()},
            "trend": [_point(p) for p in points], "change": change_document(find_change(points)),
            "data_since": since.get(metric), "info": info.get(metric), "reasons": _reasons(reasons, metric)}
    return {"generated_at": now, "windows": [{"name": n, "seconds": s} for n, s in windows],
            "longest_window": windows[-1][0] if windows else None, "trend_window": span_name,
            "trend_seconds": span, "metrics": metrics, "jailbreak": jailbreak_document(jailbreak)}
