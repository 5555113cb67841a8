"""The Azure seed's jailbreak comparison, made online: the content-risk defect rate among turns
flagged as jailbreak attempts next to the rate among the rest, per rolling window, with their
95% intervals and the interval of the difference.

Offline, the seed compares a baseline data set with the same set under jailbreak injections
(``rag-monitor compare``). Online there is no second data set, but the local detector flags
attempts: if the flagged turns' answers carry content risk more often than the others', attempts
are getting through. A turn counts once per window: a defect when any content-risk metric it was
scored on is a defect, a pass when at least one was scored and none is. Weighted by the sampling
weights like every rolling rate; the difference uses Newcombe's interval.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.rolling import RollingStats, WindowStats
from exporters.spec import DIFFERENCE_SUFFIXES, JAILBREAK
from exporters.stats import newcombe_interval
from monitor.model import EvaluationResult, Score, ScoreStatus

__all__ = ["CONTENT_RISK_METRICS", "GROUPS", "JailbreakComparison", "WindowComparison", "JailbreakCollector"]

# The seed's four content-risk categories, and the local tier's offensive-language signal (so the
# comparison has data without a judge too).
CONTENT_RISK_METRICS = frozenset({"hate_unfairness", "sexual", "violence", "self_harm", "local_offensive_language"})
GROUPS = ("flagged", "rest")
DEPRECATED_DIFFERENCE = "rag_monitor_jailbreak_defect_rate"  # the old name of the difference (2026-11-28)


@dataclass(frozen=True, slots=True)
class WindowComparison:
    window: str
    flagged: WindowStats
    rest: WindowStats
    difference: float  # flagged − rest; NaN without data on either side
    lower: float
    upper: float


class JailbreakComparison:
    """ResultConsumer: one content-risk verdict per turn into a ring per group."""

    def __init__(self, windows: Sequence[tuple[str, float]], *, clock: Callable[[], float] = time.time) -> None:
        self._rolling = RollingStats(windows, clock=clock, max_keys=len(GROUPS))

    @property
    def windows(self) -> tuple[tuple[str, float], ...]:
        return self._rolling.windows

    def consume_result(self, result: EvaluationResult) -> None:
        risk = [s for s in result.scores if s.metric in CONTENT_RISK_METRICS and s.status == ScoreStatus.OK]
        if not risk:
            return
        outcome = "defect" if any(s.defect for s in risk) else "pass"
        group = GROUPS[0] if result.turn.jailbreak_attempt else GROUPS[1]
        self._rolling.consume_result(EvaluationResult(
            result.turn, (_verdict(group, outcome),), result.weight, result.sampling_policy))

    def comparison(self) -> list[WindowComparison]:
        """One entry per window, both groups present (NaN rates where a group has no turn)."""
        summary = self._rolling.summary()
        out = []
        for name, seconds in self._rolling.windows:
            flagged, rest = (summary.get(g, {}).get(name) or _no_data(name, seconds) for g in GROUPS)
            d, low, high = _difference(flagged, rest)
            out.append(WindowComparison(name, flagged, rest, d, low, high))
        return out


def _no_data(window: str, seconds: float) -> WindowStats:
    nan = math.nan
    return WindowStats(window, seconds, 0, 0, 0, 0, 0.0, 0.0, 0.0, nan, nan, nan, nan)


def _verdict(group: str, outcome: str) -> Score:
    return Score(group, 1.0 if outcome == "defect" else 0.0, (0.0, 1.0), defect=outcome == "defect")


def _difference(flagged: WindowStats, rest: WindowStats) -> tuple[float, float, float]:
    values = (flagged.defect_rate, flagged.lower, flagged.upper, rest.defect_rate, rest.lower, rest.upper)
    if any(math.isnan(v) for v in values):
        return math.nan, math.nan, math.nan
    low, high = newcombe_interval(*values)
    return flagged.defect_rate - rest.defect_rate, low, high


class JailbreakCollector(Collector):
    """``rag_monitor_jailbreak_group_defect_rate{group,window}`` (+ bounds) and
    ``rag_monitor_jailbreak_defect_rate_difference{window}`` (flagged minus rest, + bounds) at scrape
    time; the difference is also exported under its deprecated name ``rag_monitor_jailbreak_defect_rate``
    (+ bounds) for one release."""

    def __init__(self, comparison: JailbreakComparison) -> None:
        self._comparison = comparison

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fams = {inst.name: GaugeMetricFamily(inst.name, inst.help, labels=list(inst.labels)) for inst in JAILBREAK}
        for c in self._comparison.comparison():
            for group, stats in zip(GROUPS, (c.flagged, c.rest)):
                fams["rag_monitor_jailbreak_group_defect_rate"].add_metric([group, c.window], stats.defect_rate)
                fams["rag_monitor_jailbreak_group_defect_rate_lower"].add_metric([group, c.window], stats.lower)
                fams["rag_monitor_jailbreak_group_defect_rate_upper"].add_metric([group, c.window], stats.upper)
                fams["rag_monitor_jailbreak_group_evaluations"].add_metric([group, c.window], float(stats.evaluations))
            for suffix, value in zip(DIFFERENCE_SUFFIXES, (c.difference, c.lower, c.upper)):
                fams[f"rag_monitor_jailbreak_defect_rate_difference{suffix}"].add_metric([c.window], value)
                fams[f"{DEPRECATED_DIFFERENCE}{suffix}"].add_metric([c.window], value)  # until the next release
        return list(fams.values())
