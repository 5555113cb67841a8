"""Release comparisons and time-based regression detection over evaluated verdicts.

``RegressionEngine`` is pure: it is fed ``Observation``s, reads time only from the injected clock,
does no I/O and keeps bounded state (bucketed weighted sums, never single observations), so the
plumbing can call ``observe`` on the event loop and the statistics harness can replay weeks of
traffic in seconds. The methods are described in docs/regressions.md.
"""

from __future__ import annotations

from typing import Callable

from monitor.regression.config import RegressionConfig
from monitor.regression.records import Observation
from monitor.regression.results import (
    ComparisonMode,
    Driver,
    Regression,
    ReleaseComparison,
    Statistic,
    VersionInfo,
)

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
    """Per-service release comparisons and per-metric change detection (see module docstring)."""

    def __init__(self, clock: Clock, config: RegressionConfig | None = None) -> None:
        self._clock = clock
        self._config = config or RegressionConfig()

    @property
    def config(self) -> RegressionConfig:
        return self._config

    def observe(self, obs: Observation) -> None:
        """Account one verdict; O(1) amortised, never raises for volume."""
        raise NotImplementedError

    def services(self) -> list[str]:
        """Services seen, sorted."""
        raise NotImplementedError

    def versions(self, service: str) -> list[VersionInfo]:
        """Remembered versions of ``service``, oldest first seen first."""
        raise NotImplementedError

    def releases(self, now: float | None = None) -> list[ReleaseComparison]:
        """Candidate vs baseline per (service, metric) for services with two versions."""
        raise NotImplementedError

    def regressions(self, now: float | None = None) -> list[Regression]:
        """Detector state per (service, metric, statistic) that has evidence or is active."""
        raise NotImplementedError
