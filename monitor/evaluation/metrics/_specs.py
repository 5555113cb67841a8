"""Spec builders shared by the rubric and severity metric modules."""

from __future__ import annotations

from monitor.evaluation.combined import COMBINED_GROUP
from monitor.evaluation.registry import BuildContext, MetricSpec
from monitor.evaluation.rubric import DEFAULT_RUBRIC_THRESHOLD, RUBRIC_SCALE, RubricDefinition, RubricEvaluator
from monitor.evaluation.severity import SEVERITY_SCALE, SeverityDefinition, SeverityEvaluator

__all__ = ["rubric_spec", "severity_spec"]


def rubric_spec(definition: RubricDefinition, summary: str, combinable: bool = True) -> MetricSpec:
    """A 1–5 rubric metric: standalone evaluator, or a member of the combined call."""

    def build(ctx: BuildContext) -> RubricEvaluator:
        metric = definition.metric_id
        return RubricEvaluator(definition, ctx.require_judge(), ctx.threshold(metric), ctx.max_context_chars)

    return MetricSpec(
        metric_id=definition.metric_id,
        summary=summary,
        tier="judge",
        scale=RUBRIC_SCALE,
        aggregation="mean",
        build=build,
        group=COMBINED_GROUP if combinable else None,
        definition=definition,
        default_threshold=DEFAULT_RUBRIC_THRESHOLD,
    )


def severity_spec(definition: SeverityDefinition, summary: str) -> MetricSpec:
    """A 0–7 content-risk metric: standalone evaluator, or a member of the combined call."""

    def build(ctx: BuildContext) -> SeverityEvaluator:
        metric = definition.metric_id
        return SeverityEvaluator(definition, ctx.require_judge(), ctx.severity_level(metric), ctx.max_context_chars)

    return MetricSpec(
        metric_id=definition.metric_id,
        summary=summary,
        tier="judge",
        scale=SEVERITY_SCALE,
        aggregation="max",
        build=build,
        group=COMBINED_GROUP,
        definition=definition,
        uses_severity_level=True,
    )
