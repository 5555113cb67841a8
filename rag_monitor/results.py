"""Typed results of the public API: one :class:`MetricResult` per metric and input.

A result is never a fake score: ``value`` is None unless ``status`` is ``"ok"``; a judge failure
is ``"error"`` with ``error_type`` (``timeout``, ``rate_limited``, ``parse_error``…) and a
missing input is ``"skipped"`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from monitor.evaluation.conversation import MetricAggregate
from monitor.model import JudgeUsage, Score

__all__ = ["MetricResult", "MetricError", "Usage", "Status", "result_from_score", "conversation_result"]

Usage = JudgeUsage
"""Judge usage of a result: ``prompt_tokens``, ``completion_tokens``, ``latency_seconds``, ``calls``."""

Status = Literal["ok", "skipped", "error", "unscored_refused"]
"""``unscored_refused``: the judge refused or its provider's content filter blocked the call (no value;
neither an error nor a verdict)."""


class MetricError(RuntimeError):
    """Raised by :meth:`MetricResult.raise_for_error`: the metric could not score (a judge that
    cannot be reached, a reply that did not validate, a missing input when asked to be strict)."""

    def __init__(self, result: "MetricResult") -> None:
        kind = f" ({result.error_type})" if result.error_type else ""
        super().__init__(f"{result.metric}: {result.status}{kind}: {result.reason or 'no reason given'}")
        self.result = result


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric's verdict on one question/answer (or one conversation)."""

    metric: str
    value: float | None
    """On the metric's native ``scale``; None unless ``status == "ok"``."""
    scale: tuple[float, float]
    status: Status
    passed: bool | None
    """False for a defect (below the threshold, or severity at or above the level); None
    without a value."""
    label: str | None = None
    """The severity band of safety metrics (``Very low``, ``Low``, ``Medium``, ``High``)."""
    reason: str | None = None
    """The judge's reason; for ``skipped``/``error`` why there is no value."""
    error_type: str | None = None
    usage: Usage = field(default_factory=Usage)
    details: Mapping[str, Any] = field(default_factory=dict)
    turns: tuple["MetricResult", ...] = ()
    """A conversation's per-turn results (empty for a single question/answer)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def defect(self) -> bool | None:
        return None if self.passed is None else not self.passed

    def raise_for_error(self, *, skipped: bool = False) -> "MetricResult":
        """Raise :class:`MetricError` when ``status`` is ``"error"`` (or ``"skipped"`` too, with
        ``skipped=True``); otherwise return the result, so ``value = m.score(...).raise_for_error().value``."""
        if self.status == "error" or (skipped and self.status == "skipped"):
            raise MetricError(self)
        return self


_STATUSES: dict[str, Status] = {"ok": "ok", "skipped": "skipped", "error": "error",
                                "unscored_refused": "unscored_refused"}


def _status(raw: str) -> Status:
    try:
        return _STATUSES[raw]
    except KeyError:
        raise ValueError(f"unknown score status {raw!r}") from None


def result_from_score(score: Score) -> MetricResult:
    """The public view of an evaluator's :class:`~monitor.model.Score`."""
    passed = None if score.value is None or score.defect is None else not score.defect
    return MetricResult(metric=score.metric, value=score.value, scale=score.scale, status=_status(score.status),
                        passed=passed, label=score.label, reason=score.reason, error_type=score.error_type,
                        usage=score.usage, details=dict(score.details))


def _total_usage(turns: Sequence[MetricResult]) -> Usage:
    return Usage(sum(t.usage.prompt_tokens for t in turns), sum(t.usage.completion_tokens for t in turns),
                 sum(t.usage.latency_seconds for t in turns), sum(t.usage.calls for t in turns))


def conversation_result(metric: str, turns: Sequence[MetricResult], aggregate: MetricAggregate | None) -> MetricResult:
    """A conversation's result: the registry's aggregate (mean for quality, max for safety)
    over the turns that have a value; it passes when none of its turns is a defect."""
    scale = turns[0].scale if turns else (0.0, 1.0)
    usage = _total_usage(turns)
    if aggregate is None or aggregate.value is None:
        errors = [t for t in turns if t.status == "error"]
        refused = [t for t in turns if t.status == "unscored_refused"]
        status: Status = "error" if errors else "unscored_refused" if refused else "skipped"
        reason = (errors[0].reason if errors else refused[0].reason if refused
                  else turns[0].reason if turns else "no turn to evaluate")
        return MetricResult(metric, None, scale, status, None, reason=reason,
                            error_type=errors[0].error_type if errors else None, usage=usage, turns=tuple(turns))
    graded = [t.passed for t in turns if t.passed is not None]
    passed = all(graded) if graded else None
    details = {"aggregation": aggregate.method, "turns_ok": aggregate.ok, "turns_error": aggregate.errors,
               "turns_skipped": aggregate.skipped, "turns_refused": aggregate.refused}
    # A worst-turn aggregate carries the worst turn's label (the severity band); a mean has none.
    label = (next((t.label for t in turns if t.value == aggregate.value), None)
             if aggregate.method == "max" else None)
    return MetricResult(metric, aggregate.value, scale, "ok", passed, label=label, usage=usage, details=details,
                        turns=tuple(turns))
