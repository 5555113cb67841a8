"""The status page's trend: which span to draw, and where the defect rate changed.

Span: a trend over the longest window (1h) drawn three minutes after start is one dot. The
trend covers the shortest window that holds all the data seen so far, so the first minutes are
drawn in short steps and the page says which span it shows.

Change marker: the split of the trend into "before" and "after" whose pooled defect rates have
disjoint 95% Wilson intervals, the widest such gap, each side with at least
:data:`MIN_SIDE_EVALUATIONS` scored turns. Weighted like the rates themselves (effective sample
sizes pooled from the points' sums), so it only marks a change the numbers support.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from exporters.stats import Z_95, wilson_interval

__all__ = ["TrendPointLike", "Change", "trend_seconds", "find_change", "change_document", "MIN_SIDE_EVALUATIONS"]

MIN_SIDE_EVALUATIONS = 10


class TrendPointLike(Protocol):
    @property
    def start(self) -> float: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def weight(self) -> float: ...
    @property
    def defect_weight(self) -> float: ...
    @property
    def effective_n(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Change:
    index: int  # first point of "after"
    start: float  # its start (unix s)
    before: float  # pooled defect rates
    after: float
    direction: str  # "up" | "down"


def trend_seconds(windows: Sequence[tuple[str, float]], data_since: float | None, now: float) -> tuple[str, float]:
    """The shortest window (name, seconds) that holds every point since ``data_since``; the
    longest when data is older than all windows or there is none."""
    ordered = sorted(windows, key=lambda w: w[1])
    if data_since is not None:
        age = max(0.0, now - data_since)
        for name, seconds in ordered:
            if age <= seconds:
                return name, seconds
    return ordered[-1]


@dataclass
class _Pool:
    n: int = 0
    w: float = 0.0
    dw: float = 0.0
    w2: float = 0.0

    def add(self, p: TrendPointLike, sign: int = 1) -> None:
        if p.evaluations <= 0 or p.weight <= 0:
            return
        self.n += sign * p.evaluations
        self.w += sign * p.weight
        self.dw += sign * p.defect_weight
        # Σw² recovered from Kish's effective n = (Σw)² / Σw².
        self.w2 += sign * (p.weight * p.weight / p.effective_n if p.effective_n > 0 else p.weight)

    def interval(self) -> tuple[float, float, float]:
        if self.n <= 0 or self.w <= 0:
            return math.nan, math.nan, math.nan
        eff = self.w * self.w / self.w2 if self.w2 > 0 else float(self.n)
        dw = min(max(self.dw, 0.0), self.w)
        low, high = wilson_interval(dw, self.w, Z_95, sample_size=eff)
        return dw / self.w, low, high


def find_change(points: Sequence[TrendPointLike]) -> Change | None:
    """The best-supported change of the defect rate in ``points`` (oldest first), or None."""
    before, after = _Pool(), _Pool()
    for p in points:
        after.add(p)
    best: tuple[float, Change] | None = None
    for i in range(1, len(points)):
        before.add(points[i - 1])
        after.add(points[i - 1], -1)
        if before.n < MIN_SIDE_EVALUATIONS or after.n < MIN_SIDE_EVALUATIONS:
            continue
        rate_b, low_b, high_b = before.interval()
        rate_a, low_a, high_a = after.interval()
        gap = max(low_a - high_b, low_b - high_a)
        if gap > 0 and (best is None or gap > best[0]):
            best = (gap, Change(i, points[i].start, rate_b, rate_a, "up" if rate_a > rate_b else "down"))
    return best[1] if best else None


def change_document(change: Change | None) -> Mapping[str, object] | None:
    if change is None:
        return None
    return {"index": change.index, "start": change.start, "before": change.before, "after": change.after,
            "direction": change.direction}
