"""Tuning of the regression engine (sizes are bounds on memory)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RegressionConfig"]


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
    adjacent_baseline_evaluations: int = 5000
    """Adjacent mode: the baseline is at most this many of the previous version's latest
    evaluations before the candidate became active."""
    reactivation_gap_seconds: float = 1800.0
    """A version silent this long while another one served, then seen again, is active again
    (a rollback) and becomes the candidate."""
    reactivation_min_evaluations: int = 20
    """... and the other versions answered at least this many evaluations meanwhile (so a quiet
    spell of a small canary or a quiet night is not mistaken for a rollback)."""
    canary_grace_seconds: float = 900.0
    """The baseline still answering this long after the candidate started makes it a canary."""
    cs_design_evaluations: int = 200
    """Evaluations of the candidate at which the confidence sequence is tightest."""
    cs_design_variance: float = 0.05
    """Per-evaluation variance assumed when placing that tightest point (a 5 % rate ≈ 0.0475)."""
    detector_bucket_seconds: float = 300.0
    """Step of the time-based detector: one e-value per non-empty bucket."""
    detector_threshold: float = 10_000.0
    """Alarm level A of the e-detector: the mean number of non-empty steps to a false alarm is
    at least A (10 000 five-minute steps ≈ 35 days)."""
    detector_reference_seconds: float = 604_800.0
    """Window the baseline level is estimated from (kept as hourly sums: 168 for a week)."""
    detector_baseline_z: float = 2.0
    """The baseline level tested against is the reference mean plus this many standard errors,
    so an estimated baseline that is a little low does not turn into evidence."""
    detector_deltas: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2)
    """Sizes of increase (absolute, on the 0..1 scale) the e-detector mixes over."""
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
    max_services: int = 32
    """Services tracked; observations of further services are dropped and counted."""
    max_metrics_per_service: int = 64
    """Metrics tracked per service; further ones are dropped and counted."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("alpha must lie in (0, 1)")
        for name in ("versions_per_service", "min_evaluations", "release_buckets_per_version",
                     "adjacent_baseline_evaluations", "cs_design_evaluations",
                     "reactivation_min_evaluations", "max_services", "max_metrics_per_service",
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
        if not self.detector_deltas or any(not 0.0 < d < 1.0 for d in self.detector_deltas):
            raise ValueError("detector_deltas must be non-empty, each in (0, 1)")
        if self.detector_baseline_z < 0:
            raise ValueError("detector_baseline_z must not be negative")
        if self.detector_max_relative_weight < 1.0:
            raise ValueError("detector_max_relative_weight must be at least 1")
