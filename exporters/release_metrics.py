"""Release comparisons and the change detector, exported: the board the comparison feed publishes
to, and the Prometheus collector that reads it at scrape time.

The comparison engine (``monitor.regression``) runs in the feed (``monitor.regression_feed``),
which publishes an immutable :class:`ReleaseSnapshot` after each refresh; scrapes, the OTLP bridge
and the JSON API read the last one, so a scrape never waits for the engine nor sees it half
updated. Exporters see results only (the architecture's rule), so the engine's records are read
through the :class:`ComparisonView` and :class:`RegressionView` protocols: their fields are the
contract's names.

Series (``exporters.spec.RELEASES``): the defect-rate difference of each candidate release
against its baseline with the bounds of its anytime-valid confidence sequence, each version's
evaluation count, and the change detector's evidence, alarm level and state per statistic. A
value the engine could not compute is NaN ("no data"), as for the rolling rates.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.spec import RELEASES

__all__ = ["VersionView", "ComparisonView", "RegressionView", "ServiceReleases", "ReleaseSnapshot",
           "ReleaseBoard", "ReleaseCollector", "EMPTY"]


class VersionView(Protocol):
    """A version of a service as the engine knows it (``monitor.regression.engine.VersionInfo``)."""

    @property
    def version(self) -> str: ...

    @property
    def first_seen(self) -> float: ...

    @property
    def last_seen(self) -> float: ...

    @property
    def evaluations(self) -> int: ...


class ComparisonView(Protocol):
    """What the export reads of a ``ReleaseComparison`` (the API serves all of its fields)."""

    @property
    def service(self) -> str: ...

    @property
    def metric(self) -> str: ...

    @property
    def baseline(self) -> str: ...

    @property
    def candidate(self) -> str: ...

    @property
    def difference(self) -> float | None: ...

    @property
    def lower(self) -> float | None: ...

    @property
    def upper(self) -> float | None: ...


class RegressionView(Protocol):
    """What the export reads of a ``Regression`` (the change detector's state of one statistic)."""

    @property
    def service(self) -> str: ...

    @property
    def metric(self) -> str: ...

    @property
    def statistic(self) -> str: ...

    @property
    def evidence(self) -> float: ...

    @property
    def threshold(self) -> float: ...

    @property
    def active(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ServiceReleases:
    """One service's versions (oldest first) and scored evaluations per ``(metric, version)``."""

    service: str
    versions: tuple[VersionView, ...]
    evaluations: Mapping[tuple[str, str], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReleaseSnapshot:
    """Everything the comparisons export at one moment (``at``, unix seconds; 0: nothing yet)."""

    at: float
    services: tuple[ServiceReleases, ...] = ()
    comparisons: tuple[ComparisonView, ...] = ()
    regressions: tuple[RegressionView, ...] = ()
    runbook_base_url: str = ""


EMPTY = ReleaseSnapshot(at=0.0)


class ReleaseBoard:
    """The last published snapshot; thread-safe (published on the pipeline's loop or a worker
    thread, read by the scrape renderer and the admin server's thread)."""

    def __init__(self) -> None:
        self._snapshot = EMPTY
        self._lock = threading.Lock()

    def publish(self, snapshot: ReleaseSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot

    def snapshot(self) -> ReleaseSnapshot:
        with self._lock:
            return self._snapshot


def _value(x: float | None) -> float:
    return float(x) if x is not None and math.isfinite(x) else math.nan


class ReleaseCollector(Collector):
    """Renders the board's snapshot as the ``RELEASES`` gauges. Every family is yielded even when
    empty, so the OTLP bridge (which lists families at its start) exports them too."""

    def __init__(self, board: ReleaseBoard) -> None:
        self._board = board

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fams = {inst.name: GaugeMetricFamily(inst.name, inst.help, labels=list(inst.labels)) for inst in RELEASES}
        snap = self._board.snapshot()
        seen: set[tuple[str, str, str, str]] = set()
        for c in snap.comparisons:
            key = (c.service, c.metric, c.baseline, c.candidate)
            if key in seen:  # a canary and an adjacent comparison of one pair: the first (the engine's pick)
                continue
            seen.add(key)
            fams["rag_monitor_release_defect_rate_difference"].add_metric(list(key), _value(c.difference))
            fams["rag_monitor_release_defect_rate_difference_lower"].add_metric(list(key), _value(c.lower))
            fams["rag_monitor_release_defect_rate_difference_upper"].add_metric(list(key), _value(c.upper))
        for s in snap.services:
            for (metric, version), n in sorted(s.evaluations.items()):
                fams["rag_monitor_release_evaluations"].add_metric([s.service, metric, version], float(n))
        watched: set[tuple[str, ...]] = set()
        for r in snap.regressions:
            watch = (r.service, r.metric, r.statistic)
            if watch in watched:
                continue
            watched.add(watch)
            fams["rag_monitor_regression_evidence"].add_metric(list(watch), _value(r.evidence))
            fams["rag_monitor_regression_evidence_threshold"].add_metric(list(watch), _value(r.threshold))
            fams["rag_monitor_regression_active"].add_metric(list(watch), 1.0 if r.active else 0.0)
        return list(fams.values())

