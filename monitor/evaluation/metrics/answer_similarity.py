"""``answer_similarity`` (Tonic Validate seed): 0–5 match in meaning with the reference answer.

Needs ground truth (skipped without it). Any number in [0, 5] is accepted, as in the seed.
Judged in the Tonic set's shared call (:mod:`._tonic_set`). Default defect rule: score < 2.5
(half the scale, the same point as the 0.5 threshold of the 0–1 metrics).
"""

from __future__ import annotations

from monitor.evaluation.metrics._tonic_set import TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["METRIC", "register"]


def _value(verdicts: TonicVerdicts) -> float | None:
    return verdicts.similarity


METRIC = TonicMetric("answer_similarity", "match in meaning with the ground-truth answer (Tonic), 0-5",
                     ("similarity",), _value, scale=(0.0, 5.0), default_threshold=2.5)


def register(registry: MetricRegistry) -> None:
    """Add ``answer_similarity`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
