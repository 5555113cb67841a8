"""Release comparisons and time-based regression detection over evaluated verdicts.

``RegressionEngine`` is pure: it is fed ``Observation``s, reads time only from the injected clock,
does no I/O and keeps bounded state (bucketed weighted sums, never single observations), so the
plumbing can call ``observe`` on the event loop and the statistics harness can replay weeks of
traffic in seconds. The methods are described in docs/regressions.md.
"""

from __future__ import annotations

from typing import Callable

from monitor.regression.config import RegressionConfig
from monitor.regression.detector import ChangeDetector
from monitor.regression.records import Observation
from monitor.regression.results import (
    ComparisonMode,
    Driver,
    Regression,
    ReleaseComparison,
    Statistic,
    VersionInfo,
)
from monitor.regression.releases import ServiceVersions

__all__ = [
    "Clock",
    "ComparisonMode",
    "Statistic",
    "Driver",
    "Regression",
    "RegressionConfig",
    "RegressionEngine",
    "ReleaseComparison",
    "VersionInfo",
]

Clock = Callable[[], float]


class RegressionEngine:
    """Per-service release comparisons and per-metric change detection (see module docstring).

    Not thread-safe: call it from one thread (the event loop); every call is O(1) per observation
    or O(buckets) per report.
    """

    def __init__(self, clock: Clock, config: RegressionConfig | None = None) -> None:
        self._clock = clock
        self._config = config or RegressionConfig()
        self._releases: dict[str, ServiceVersions] = {}
        self._detectors: dict[str, dict[tuple[str, Statistic], ChangeDetector]] = {}
        self._dropped = 0

    @property
    def config(self) -> RegressionConfig:
        return self._config

    @property
    def dropped(self) -> int:
        """Observations refused because a service or metric bound was reached."""
        return self._dropped

    def observe(self, obs: Observation) -> None:
        """Account one verdict; O(1) amortised, never raises for volume."""
        if obs.defect is None and obs.score is None:
            return
        cfg = self._config
        releases = self._releases.get(obs.service)
        if releases is None:
            if len(self._releases) >= cfg.max_services:
                self._dropped += 1
                return
            releases = self._releases[obs.service] = ServiceVersions(cfg)
            self._detectors[obs.service] = {}
        detectors = self._detectors[obs.service]
        known = (obs.metric, "defect_rate") in detectors or (obs.metric, "score") in detectors
        if not known and len({m for m, _ in detectors}) >= cfg.max_metrics_per_service:
            self._dropped += 1
            return
        releases.observe(obs.at, obs.version, obs.metric, obs.weight, obs.defect, obs.score,
                         obs.labels)
        # The version first: label keys beyond the bound are the ones dropped.
        labels = {"version": obs.version, **obs.labels}
        if obs.defect is not None:
            self._detector(detectors, obs.metric, "defect_rate").observe(
                obs.at, obs.weight, 1.0 if obs.defect else 0.0, labels)
        if obs.score is not None:
            # The detector watches for "worse", which for a score is lower: it sees 1 − score.
            self._detector(detectors, obs.metric, "score").observe(
                obs.at, obs.weight, 1.0 - obs.score, labels)

    def _detector(self, detectors: dict[tuple[str, Statistic], ChangeDetector], metric: str,
                  statistic: Statistic) -> ChangeDetector:
        found = detectors.get((metric, statistic))
        if found is None:
            found = detectors[(metric, statistic)] = ChangeDetector(
                self._config, binary=statistic == "defect_rate")
        return found

    def services(self) -> list[str]:
        """Services seen, sorted."""
        return sorted(self._releases)

    def versions(self, service: str) -> list[VersionInfo]:
        """Remembered versions of ``service``, oldest first seen first (empty if unknown)."""
        releases = self._releases.get(service)
        return releases.versions() if releases else []

    def metric_evaluations(self, service: str) -> dict[str, dict[str, int]]:
        """version -> metric -> evaluations since the version's activation (empty if unknown)."""
        releases = self._releases.get(service)
        return releases.metric_evaluations() if releases else {}

    def releases(self, now: float | None = None) -> list[ReleaseComparison]:
        """Candidate vs baseline per (service, metric) for services with two versions.

        The figures depend on the evaluations observed only (not on ``now`` nor on when or how
        often this is called), so every replica fed the same data reports the same values.
        """
        out: list[ReleaseComparison] = []
        for service in sorted(self._releases):
            out.extend(self._releases[service].comparisons(service))
        return out

    def regressions(self, now: float | None = None) -> list[Regression]:
        """Detector state per armed (service, metric, statistic), active or not."""
        at = self._clock() if now is None else now
        out: list[Regression] = []
        for service in sorted(self._detectors):
            for (metric, statistic), detector in sorted(self._detectors[service].items()):
                detector.advance(at)
                report = detector.report(service, metric, statistic, self._config.drivers)
                if report is not None:
                    out.append(report)
        return out
