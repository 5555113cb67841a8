"""Release comparisons and time-based regression detection over evaluated verdicts.

``RegressionEngine`` is pure: it is fed ``Observation``s, reads time only from the injected clock,
does no I/O and keeps bounded state (bucketed weighted sums, never single observations), so the
plumbing can call ``observe`` on the event loop and the statistics harness can replay weeks of
traffic in seconds. The methods are described in docs/regressions.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from monitor.regression.records import Observation

__all__ = [
    "Clock",
    "Driver",
    "Regression",
    "RegressionConfig",
    "RegressionEngine",
    "ReleaseComparison",
    "VersionInfo",
]

Clock = Callable[[], float]
ComparisonMode = Literal["canary", "adjacent"]
Statistic = Literal["defect_rate", "score"]


@dataclass(frozen=True, slots=True)
class RegressionConfig:
    """Tuning of the engine; every size is a bound on memory."""

    alpha: float = 0.05
    """Error level of the confidence sequences (two-sided, valid under continuous monitoring)."""
    margin: float = 0.0
    """A release has ``regressed`` when the lower bound of candidate − baseline exceeds this."""
    versions_per_service: int = 5
    """Versions remembered per service; the one seen least recently is forgotten first."""
    min_evaluations: int = 20
    """Evaluations each side needs before an interval is reported (None before)."""
    release_bucket_seconds: float = 300.0
    """Width of the buckets a canary is matched on ("the same minutes of traffic")."""
    release_buckets_per_version: int = 864
    """Non-empty buckets kept per (service, metric, version): 3 days of 5-minute buckets."""
    adjacent_baseline_evaluations: int = 2000
    """Adjacent mode: the baseline is at most this many of the previous version's latest
    evaluations before the candidate became active."""
    reactivation_gap_seconds: float = 1800.0
    """A version silent this long while another one served, then seen again, is active again
    (a rollback) and becomes the candidate."""
    canary_grace_seconds: float = 900.0
    """The baseline still answering this long after the candidate started makes it a canary."""
    cs_design_evaluations: int = 500
    """Evaluations of the candidate at which the confidence sequence is tightest."""
    cs_design_variance: float = 0.05
    """Per-evaluation variance assumed when placing that tightest point (a 5 % rate ≈ 0.0475)."""
    detector_bucket_seconds: float = 300.0
    """Step of the time-based detector: one e-value per non-empty bucket."""
    detector_threshold: float = 10_000.0
    """Alarm level A of the e-detector: the mean number of non-empty steps to a false alarm is
    at least A (10 000 five-minute steps ≈ 35 days)."""
    detector_reference_seconds: float = 86_400.0
    """Window the baseline level is estimated from."""
    detector_min_reference_evaluations: int = 100
    """The detector does not arm before its reference window holds this many evaluations."""
    detector_rebaseline_seconds: float = 21_600.0
    """How often the baseline level is re-estimated while nothing is alarming."""
    detector_hold_seconds: float = 7200.0
    """After an alarm: how long it stays active before the new level is accepted as baseline."""
    detector_max_relative_weight: float = 4.0
    """Weights above this multiple of the reference mean weight are clipped in the e-values."""
    attribution_values_per_label: int = 16
    """Distinct values tracked per label key; later ones fold into "other"."""
    attribution_labels: int = 4
    """Label keys tracked per (service, metric)."""
    drivers: int = 3
    """Drivers reported per comparison or regression."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("alpha must lie in (0, 1)")
        for name in ("versions_per_service", "min_evaluations", "release_buckets_per_version",
                     "adjacent_baseline_evaluations", "cs_design_evaluations",
                     "detector_min_reference_evaluations", "attribution_values_per_label",
                     "attribution_labels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.versions_per_service < 2:
            raise ValueError("versions_per_service must be at least 2 (a baseline and a candidate)")
        for name in ("release_bucket_seconds", "reactivation_gap_seconds", "canary_grace_seconds",
                     "cs_design_variance", "detector_bucket_seconds", "detector_reference_seconds",
                     "detector_rebaseline_seconds", "detector_hold_seconds"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.detector_threshold <= 1.0:
            raise ValueError("detector_threshold must exceed 1")
        if self.detector_max_relative_weight < 1.0:
            raise ValueError("detector_max_relative_weight must be at least 1")


@dataclass(frozen=True, slots=True)
class Driver:
    """One label value and how much of a change it carries."""

    label: str
    value: str
    before: float | None
    after: float | None
    share: float
    """Share of the overall change this value explains, 0..1."""
    n: int
    """Evaluations with this value after the change (or of the candidate)."""


@dataclass(frozen=True, slots=True)
class VersionInfo:
    version: str
    first_seen: float
    last_seen: float
    evaluations: int


@dataclass(frozen=True, slots=True)
class ReleaseComparison:
    """Candidate version against baseline version for one metric.

    ``lower``/``upper`` bound candidate − baseline weighted defect rate with a (1 − alpha)
    confidence sequence; None until each side has ``min_evaluations``.
    """

    service: str
    metric: str
    baseline: str
    candidate: str
    mode: ComparisonMode
    n_baseline: int
    n_candidate: int
    defect_rate_baseline: float | None
    defect_rate_candidate: float | None
    difference: float | None
    lower: float | None
    upper: float | None
    score_baseline: float | None
    score_candidate: float | None
    score_difference: float | None
    score_lower: float | None
    score_upper: float | None
    regressed: bool
    drivers: tuple[Driver, ...] = ()


@dataclass(frozen=True, slots=True)
class Regression:
    """State of the time-based change detector of one (service, metric, statistic).

    ``before``/``after`` are defect rates or mean scores; ``lower``/``upper`` bound after −
    before; ``evidence`` and ``threshold`` are log10 of the e-detector and of its alarm level.
    """

    service: str
    metric: str
    statistic: Statistic
    since: float | None
    before: float | None
    after: float | None
    lower: float | None
    upper: float | None
    evidence: float
    threshold: float
    active: bool
    drivers: tuple[Driver, ...] = ()


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
