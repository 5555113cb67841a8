"""``overall_score`` (Tonic Validate seed): mean of the Tonic metrics computed on the turn.

Derived, not judged: it wraps the configured Tonic metrics' evaluators, runs them, reports their
scores unchanged and adds the mean of those that produced a value, with ``answer_similarity``
divided by 5 so every term is on 0–1. Metrics not configured, skipped or failed are left out
(the seed's "mean of those used"). Skipped when none produced a value. Default defect: < 0.5.
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.runner import InternalErrors, run_guarded
from monitor.evaluation.scoring import graded, skipped
from monitor.interfaces import Evaluator
from monitor.model import Score, ScoreStatus, Turn

__all__ = ["METRIC_ID", "TONIC_METRICS", "overall_value", "OverallScoreEvaluator", "register"]

METRIC_ID = "overall_score"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
# Metric id -> divisor that brings it to 0-1.
TONIC_METRICS = {
    "answer_similarity": 5.0,
    "retrieval_precision": 1.0,
    "augmentation_accuracy": 1.0,
    "augmentation_precision": 1.0,
    "answer_consistency": 1.0,
    "answer_consistency_binary": 1.0,
}


def overall_value(scores: Sequence[Score]) -> tuple[float, dict[str, float]] | None:
    """Mean of the normalised Tonic values among ``scores`` and the terms; None when there are none."""
    terms = {
        s.metric: s.value / TONIC_METRICS[s.metric]
        for s in scores
        if s.metric in TONIC_METRICS and s.status == ScoreStatus.OK and s.value is not None
    }
    if not terms:
        return None
    return sum(terms.values()) / len(terms), terms


class OverallScoreEvaluator:
    """Runs the Tonic evaluators and appends ``overall_score``."""

    def __init__(self, inner: Sequence[Evaluator], threshold: float) -> None:
        self._inner = tuple(inner)
        self._threshold = threshold
        self._errors = InternalErrors()
        self.metric_ids = tuple(m for e in self._inner for m in e.metric_ids) + (METRIC_ID,)
        # The judged metrics' prompt versions (overall_score is arithmetic: it has none of its own).
        self.prompt_versions = {m: v for e in self._inner for m, v in getattr(e, "prompt_versions", {}).items()}

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """The inner scores followed by the overall score."""
        results = await asyncio.gather(*(run_guarded(e, turn, self._errors) for e in self._inner))
        scores = [s for group in results for s in group]
        overall = overall_value(scores)
        if overall is None:
            return [*scores, skipped(METRIC_ID, SCALE, "no Tonic metric produced a value")]
        value, terms = overall
        reason = f"mean of {len(terms)}: " + ", ".join(f"{m} {v:.2f}" for m, v in terms.items())
        return [*scores, graded(METRIC_ID, value, SCALE, value < self._threshold, reason=reason,
                                details={"terms": terms})]


def register(registry: MetricRegistry) -> None:
    """Add ``overall_score`` to ``registry``."""

    def wrap(inner: tuple[Evaluator, ...], ctx: BuildContext) -> OverallScoreEvaluator:
        return OverallScoreEvaluator(inner, ctx.threshold(METRIC_ID))

    registry.register(
        MetricSpec(
            METRIC_ID, "mean of the computed Tonic metrics, answer_similarity / 5", "judge", SCALE,
            wrap=wrap, derived_from=frozenset(TONIC_METRICS), default_threshold=DEFAULT_THRESHOLD,
            inputs=("question", "answer", "context", "ground_truth?"), seed="Tonic Validate",
        )
    )
