"""Rolling defect rates per metric over fixed windows (default 5m and 1h), from bounded rings.

Counters answer "how many since start"; an on-call engineer asks "how bad is it right now, and
how sure are we". Each (metric, service) key keeps a ring of time slots covering the longest
window; a slot is ``shortest window / 30`` wide, so the 5m rate moves in 10 s steps and the whole
structure is a fixed size: ``keys × slots`` small records, whatever the traffic. Windows are
aligned to slot boundaries (a 5m window spans the last 30 slots, i.e. between 4m50s and 5m).

Rates are weighted by the inverse-probability weights of the sampling decisions, so they
estimate the population rate; the 95% Wilson interval is sized by Kish's effective sample size
``(Σw)² / Σw²`` — the number of evaluations the estimate is really worth, not the sum of weights.
Values are computed on demand (scrape, API) under a lock: updates come from the event loop,
reads from the scrape thread.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.labels import LabelledResult
from exporters.spec import ROLLING
from exporters.stats import Z_95, wilson_interval
from monitor.model import EvaluationResult, ScoreStatus

__all__ = ["WindowStats", "TrendPoint", "RollingStats", "RollingCollector"]

_SLOTS_PER_SHORTEST = 30
# Slot layout: [slot index, evaluations, defects, errors, skipped, weight, defect weight,
#               weight², score sum, scores, refused]
_IDX, _N, _DEF, _ERR, _SKIP, _W, _DW, _W2, _SSUM, _SN, _REF = range(11)


@dataclass(frozen=True, slots=True)
class WindowStats:
    window: str
    seconds: float
    evaluations: int  # scored: pass + defect
    defects: int
    errors: int
    skipped: int
    weight: float
    defect_weight: float
    effective_n: float
    defect_rate: float  # NaN when nothing was scored
    lower: float
    upper: float
    mean_score: float  # NaN when no score value
    refused: int = 0  # unscored_refused: the judge refused or a content filter blocked (not in the rate)


@dataclass(frozen=True, slots=True)
class TrendPoint:
    start: float  # unix seconds
    evaluations: int
    defect_rate: float
    mean_score: float
    # The point's 95% Wilson interval and the sums it was computed from (so that points can be
    # pooled, e.g. to find where the rate changed). NaN / 0 when nothing was scored.
    lower: float = math.nan
    upper: float = math.nan
    weight: float = 0.0
    defect_weight: float = 0.0
    effective_n: float = 0.0


def _empty(index: int) -> list[float]:
    return [index, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0]


def _add(acc: list[float], slot: list[float]) -> None:
    for i in range(1, len(acc)):
        acc[i] += slot[i]


def _stats(window: str, seconds: float, acc: list[float]) -> WindowStats:
    n, w, dw, w2 = int(acc[_N]), acc[_W], acc[_DW], acc[_W2]
    if n and w > 0:
        rate = min(1.0, dw / w)
        eff = (w * w) / w2 if w2 > 0 else float(n)
        lower, upper = wilson_interval(min(dw, w), w, Z_95, sample_size=eff)
    else:
        rate = lower = upper = math.nan
        eff = 0.0
    mean = acc[_SSUM] / acc[_SN] if acc[_SN] else math.nan
    return WindowStats(window, seconds, n, int(acc[_DEF]), int(acc[_ERR]), int(acc[_SKIP]), w, dw, eff,
                       rate, lower, upper, mean, int(acc[_REF]))


class RollingStats:
    """ResultConsumer keeping per-(metric, service) rings; see the module docstring.

    ``service_of`` maps a result to its (capped) service label; ``max_keys`` bounds the rings:
    past it new keys are ignored and counted in ``keys_refused``.
    """

    def __init__(self, windows: Sequence[tuple[str, float]], *, clock: Callable[[], float] = time.time,
                 service_of: Callable[[EvaluationResult], str] = lambda r: r.turn.service,
                 max_keys: int = 4096) -> None:
        if not windows:
            raise ValueError("at least one window")
        self.windows: tuple[tuple[str, float], ...] = tuple(sorted(windows, key=lambda w: w[1]))
        self.slot_seconds = max(1.0, self.windows[0][1] / _SLOTS_PER_SHORTEST)
        self._spans = {name: max(1, round(sec / self.slot_seconds)) for name, sec in self.windows}
        self._ring = max(self._spans.values())
        self._clock = clock
        self._service_of = service_of
        self._max_keys = max_keys
        self._rings: dict[tuple[str, str], list[list[float] | None]] = {}
        self._lock = threading.Lock()
        self.keys_refused = 0

    # -- writing ------------------------------------------------------------------------------

    @property
    def tracked_keys(self) -> int:
        """(metric, service) pairs with a ring (at most ``max_keys``)."""
        return len(self._rings)

    @property
    def slots_per_key(self) -> int:
        """Slots in each ring: the longest window over ``slot_seconds``, whatever the traffic."""
        return self._ring

    def consume_result(self, result: EvaluationResult) -> None:
        self._add(result, self._service_of(result))

    def consume_labelled(self, item: LabelledResult) -> None:
        """The service value the exporters' label policy admitted for this result."""
        self._add(item.result, item.labels["service"])

    def _add(self, result: EvaluationResult, service: str) -> None:
        now = self._clock()
        with self._lock:
            for score in result.scores:
                value = score.value if score.status == ScoreStatus.OK else None
                self._record(now, score.metric, service, score.outcome, result.weight, value)

    def replay(self, rows: Iterable[tuple[float, str, str, str, float, float | None]]) -> int:
        """Refill from stored ``(timestamp, metric, service, outcome, weight, value)`` rows (e.g.
        after a restart); rows older than the longest window are skipped. Returns rows used."""
        horizon = self._clock() - self._ring * self.slot_seconds
        used = 0
        with self._lock:
            for ts, metric, service, outcome, weight, value in rows:
                if ts >= horizon:
                    self._record(ts, metric, service, outcome, weight, value)
                    used += 1
        return used

    def _record(self, ts: float, metric: str, service: str, outcome: str, weight: float,
                value: float | None) -> None:
        key = (metric, service)
        ring = self._rings.get(key)
        if ring is None:
            if len(self._rings) >= self._max_keys:
                self.keys_refused += 1
                return
            ring = self._rings[key] = [None] * self._ring
        index = int(ts // self.slot_seconds)
        pos = index % self._ring
        slot = ring[pos]
        if slot is None or slot[_IDX] != index:
            if slot is not None and slot[_IDX] > index:
                return  # older than the ring covers (replayed row, clock step back)
            slot = ring[pos] = _empty(index)
        if outcome in ("pass", "defect"):
            slot[_N] += 1
            slot[_W] += weight
            slot[_W2] += weight * weight
            if outcome == "defect":
                slot[_DEF] += 1
                slot[_DW] += weight
        elif outcome == "error":
            slot[_ERR] += 1
        elif outcome == "unscored_refused":
            slot[_REF] += 1
        else:
            slot[_SKIP] += 1
        if value is not None and math.isfinite(value):
            slot[_SSUM] += value
            slot[_SN] += 1

    # -- reading ------------------------------------------------------------------------------

    def _snapshot(self) -> tuple[int, dict[tuple[str, str], list[tuple[float, ...]]]]:
        # Copy under the lock, aggregate outside it: the event loop records under the same lock
        # and must not wait for a scrape's arithmetic.
        now_index = int(self._clock() // self.slot_seconds)
        oldest = now_index - self._ring + 1
        with self._lock:
            snap = {key: [tuple(s) for s in ring if s is not None and s[_IDX] >= oldest]
                    for key, ring in self._rings.items()}
        return now_index, snap

    @staticmethod
    def _sum(slots: Iterable[tuple[float, ...]], first: int, last: int) -> list[float]:
        acc = _empty(0)
        for slot in slots:
            if first <= slot[_IDX] <= last:
                _add(acc, slot)  # type: ignore[arg-type]
        return acc

    def summary(self, service: str | None = None) -> dict[str, dict[str, WindowStats]]:
        """metric → window → stats, over all services unless ``service`` is given."""
        now_index, snap = self._snapshot()
        groups: dict[str, list[tuple[float, ...]]] = {}
        for (metric, svc), slots in snap.items():
            if service is None or svc == service:
                groups.setdefault(metric, []).extend(slots)
        return {
            metric: {name: _stats(name, sec, self._sum(slots, now_index - self._spans[name] + 1, now_index))
                     for name, sec in self.windows}
            for metric, slots in sorted(groups.items())
        }

    def by_series(self) -> list[tuple[str, str, WindowStats]]:
        """(metric, service, stats) for every key and window: what the gauges export."""
        now_index, snap = self._snapshot()
        out = []
        for (metric, service), slots in sorted(snap.items()):
            for name, sec in self.windows:
                acc = self._sum(slots, now_index - self._spans[name] + 1, now_index)
                out.append((metric, service, _stats(name, sec, acc)))
        return out

    def trend(self, metric: str, points: int = 60, seconds: float | None = None) -> list[TrendPoint]:
        """Defect rate (with its interval) and mean score over the last ``seconds`` (default: the
        longest window) in at most ``points`` equal steps, oldest first."""
        span = self._ring if seconds is None else max(1, min(self._ring, round(seconds / self.slot_seconds)))
        per = math.ceil(span / max(1, min(points, span)))
        points = math.ceil(span / per)
        now_index, snap = self._snapshot()
        first = now_index - per * points + 1
        accs = [_empty(0) for _ in range(points)]
        for (m, _service), slots in snap.items():
            if m != metric:
                continue
            for slot in slots:
                if first <= slot[_IDX] <= now_index:
                    _add(accs[int((slot[_IDX] - first) // per)], slot)  # type: ignore[arg-type]
        trend = []
        for i, acc in enumerate(accs):
            s = _stats("", per * self.slot_seconds, acc)
            trend.append(TrendPoint((first + i * per) * self.slot_seconds, s.evaluations, s.defect_rate,
                                    s.mean_score, s.lower, s.upper, s.weight, s.defect_weight, s.effective_n))
        return trend

    def data_since(self) -> dict[str, float]:
        """metric → start (unix s) of the oldest slot with data still in the longest window: how
        much history the windows really hold (a 1h window 3 minutes after start holds 3 minutes)."""
        _, snap = self._snapshot()
        oldest: dict[str, int] = {}
        for (metric, _service), slots in snap.items():
            for slot in slots:
                index = int(slot[_IDX])
                if index < oldest.get(metric, index + 1):
                    oldest[metric] = index
        return {metric: index * self.slot_seconds for metric, index in oldest.items()}

    def metrics(self) -> list[str]:
        with self._lock:
            return sorted({metric for metric, _ in self._rings})


class RollingCollector(Collector):
    """Exports ``rag_monitor_defect_rate{metric,service,window}`` with ``_lower``/``_upper`` and
    ``rag_monitor_window_evaluations`` at scrape time (NaN rates mean "no data")."""

    def __init__(self, rolling: RollingStats) -> None:
        self._rolling = rolling

    def collect(self) -> Iterable[GaugeMetricFamily]:
        labels = ["metric", "service", "window"]
        fams = {inst.name: GaugeMetricFamily(inst.name, inst.help, labels=labels) for inst in ROLLING}
        for metric, service, s in self._rolling.by_series():
            key = [metric, service, s.window]
            fams["rag_monitor_defect_rate"].add_metric(key, s.defect_rate)
            fams["rag_monitor_defect_rate_lower"].add_metric(key, s.lower)
            fams["rag_monitor_defect_rate_upper"].add_metric(key, s.upper)
            fams["rag_monitor_window_evaluations"].add_metric(key, float(s.evaluations))
        return list(fams.values())
