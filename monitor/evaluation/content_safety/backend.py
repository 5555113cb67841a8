"""Which metrics Azure AI Content Safety can score, and how their evaluators are built.

A metric runs on the service when its ``evaluation.metrics`` entry says
``backend: azure_content_safety``; everything else about it (id, scale, labels, threshold or
severity level, aggregation, outcomes) stays the metric's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from monitor.evaluation.content_safety.config import BACKEND, SERVICE_METRICS
from monitor.evaluation.content_safety.evaluators import (
    SEVERITY_CATEGORIES,
    ContentSafetyService,
    ServiceGroundednessEvaluator,
    ServiceSeverityEvaluator,
)
from monitor.interfaces import Evaluator

if TYPE_CHECKING:
    from monitor.evaluation.config import EvaluationConfig

__all__ = ["BACKEND", "SERVICE_METRICS", "build_service_evaluators", "service_metric_ids"]


def build_service_evaluators(levels: Mapping[str, int], thresholds: Mapping[str, float],
                             service: ContentSafetyService) -> tuple[Evaluator, ...]:
    """Evaluators for the service-backed metrics: ``levels`` for the severity metrics (metric id →
    defect level), ``thresholds`` for groundedness."""
    built: list[Evaluator] = []
    severity_ids = [m for m in levels if m in SEVERITY_CATEGORIES]
    if severity_ids:
        built.append(ServiceSeverityEvaluator(severity_ids, service, {m: levels[m] for m in severity_ids}))
    if "groundedness" in thresholds:
        built.append(ServiceGroundednessEvaluator(service, thresholds["groundedness"]))
    return tuple(built)


def service_metric_ids(config: "EvaluationConfig") -> frozenset[str]:
    """The metrics ``config`` puts on Azure AI Content Safety (they need no LLM judge)."""
    return frozenset(e.id for e in config.entries() if e.backend == BACKEND)
