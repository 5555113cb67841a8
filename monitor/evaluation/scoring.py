"""Constructors for :class:`Score` so every metric reports outcomes the same way."""

from __future__ import annotations

from typing import Any, Mapping

from monitor.model import JudgeUsage, Score, ScoreStatus

__all__ = ["skipped", "failed", "refused", "graded", "Scale"]

Scale = tuple[float, float]


def skipped(metric: str, scale: Scale, reason: str, details: Mapping[str, Any] | None = None) -> Score:
    """The metric does not apply to this turn (an input is missing): not an error, no value."""
    return Score(metric, None, scale, status=ScoreStatus.SKIPPED, reason=reason, details=dict(details or {}))


def failed(
    metric: str,
    scale: Scale,
    error_type: str,
    message: str,
    usage: JudgeUsage | None = None,
    details: Mapping[str, Any] | None = None,
) -> Score:
    """No trustworthy value: ``error_type`` is the judge outcome (or ``internal_error``)."""
    return Score(
        metric,
        None,
        scale,
        status=ScoreStatus.ERROR,
        error_type=error_type,
        reason=message,
        usage=usage or JudgeUsage(),
        details=dict(details or {}),
    )


def refused(
    metric: str,
    scale: Scale,
    message: str,
    usage: JudgeUsage | None = None,
    details: Mapping[str, Any] | None = None,
) -> Score:
    """The judge refused, or a content filter blocked the call that carried ``metric``:
    ``unscored_refused``, no value, not an error (``error_type`` says ``refused`` for readers
    that only look at it)."""
    return Score(
        metric,
        None,
        scale,
        status=ScoreStatus.REFUSED,
        error_type="refused",
        reason=message,
        usage=usage or JudgeUsage(),
        details=dict(details or {}),
    )


def graded(
    metric: str,
    value: float,
    scale: Scale,
    defect: bool,
    *,
    label: str | None = None,
    reason: str | None = None,
    usage: JudgeUsage | None = None,
    details: Mapping[str, Any] | None = None,
) -> Score:
    """A value on the metric's native scale with its defect verdict."""
    return Score(
        metric,
        float(value),
        scale,
        defect=defect,
        label=label,
        reason=reason,
        usage=usage or JudgeUsage(),
        details=dict(details or {}),
    )
