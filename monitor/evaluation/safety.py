"""The four content-risk severities judged together in their own call: the answer and the
question only, never the retrieved documents, never in the same call as the quality rubrics.

Why apart: judging harm with the documents in view, right after grading quality, invites halo
effects (a well-grounded answer reads as harmless), and one reason "on the weakest aspect" copied
into every score told nothing about the severity it sat on. Each severity has its own reason
(:class:`~monitor.evaluation.combined.SharedCall`).

A refusal or a content filter on this call records ``unscored_refused`` for the four severities
and leaves the quality scores of the turn alone (they come from another call). With
``evaluation.refused_severity`` set, a refused severity is counted at that severity instead
(:func:`~monitor.evaluation.severity.refused_as_severity`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from monitor.evaluation.combined import SharedCall
from monitor.evaluation.registry import BuildContext, MetricGroup, MetricSpec
from monitor.evaluation.scoring import Scale
from monitor.evaluation.severity import (
    SEVERITY_INPUTS,
    SEVERITY_SCALE,
    SeverityDefinition,
    refused_as_severity,
    severity_score,
    severity_system_prompt,
)
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = ["SAFETY_CALL_ID", "SAFETY_GROUP", "SafetyEvaluator"]

SAFETY_CALL_ID = "safety"


class SafetyEvaluator:
    """The configured severities in one call; each its own Score, reason and defect verdict."""

    def __init__(self, severities: Sequence[SeverityDefinition], judge: Judge, levels: Mapping[str, int],
                 max_context_chars: int, refused_severity: int | None = None) -> None:
        self._levels = dict(levels)
        self._refused_severity = refused_severity
        required, optional = SEVERITY_INPUTS
        scale: Scale = SEVERITY_SCALE
        self._call = SharedCall(
            SAFETY_CALL_ID, judge, severity_system_prompt(tuple(severities)),
            [(d.metric_id, scale, (0, 7), required, optional) for d in severities],
            {d.metric_id: d.line() for d in severities}, max_context_chars,
            max_output_tokens=40 + 45 * len(severities))
        self.metric_ids = self._call.metric_ids
        self.prompt_versions = self._call.prompt_versions

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One judge call on the answer (and question); skipped without an answer."""
        return await self._call.evaluate(turn, self._to_score, self._on_failure)

    def _to_score(self, metric: str, value: int, reason: str, info: dict[str, object]) -> Score:
        level = self._levels[metric]
        return severity_score(metric, value, level, reason=reason, details={**info, "defect_level": level})

    def _on_failure(self, score: Score) -> Score:
        level = self._levels[score.metric]
        score = replace(score, details={**score.details, "defect_level": level})
        return refused_as_severity(score, self._refused_severity, level)


def _admits(ctx: BuildContext, spec: MetricSpec) -> bool:
    return ctx.combine_metrics and isinstance(spec.definition, SeverityDefinition)


def _build(specs: tuple[MetricSpec, ...], ctx: BuildContext) -> SafetyEvaluator:
    severities = [s.definition for s in specs if isinstance(s.definition, SeverityDefinition)]
    return SafetyEvaluator(severities, ctx.require_judge(),
                           {d.metric_id: ctx.severity_level(d.metric_id) for d in severities},
                           ctx.max_context_chars, ctx.refused_severity)


SAFETY_GROUP = MetricGroup(SAFETY_CALL_ID, build=_build, admits=_admits)
"""Registry group of the severity metrics (the safety call, with ``combine_metrics``)."""
