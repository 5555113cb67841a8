"""What the regression engine reports: frozen values for the exporters, the API and the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ComparisonMode", "Driver", "Regression", "ReleaseComparison", "Statistic", "VersionInfo"]

ComparisonMode = Literal["canary", "adjacent"]
Statistic = Literal["defect_rate", "score"]


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
