"""``answer_consistency_binary`` (Tonic Validate seed): 1 when nothing in the answer is outside the context.

Judged in the Tonic set's shared call (:mod:`._tonic_set`). Context = the retrieved chunks, or
the system prompt when no chunk carries text (``details["context_source"]``). Defect when the
value is 0.
"""

from __future__ import annotations

from monitor.evaluation.metrics._tonic_set import TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["METRIC", "register"]


def _value(verdicts: TonicVerdicts) -> float:
    return 0.0 if verdicts.outside else 1.0


METRIC = TonicMetric("answer_consistency_binary", "1 when all answer information comes from the context (Tonic)",
                     ("outside",), _value, default_threshold=None)


def register(registry: MetricRegistry) -> None:
    """Add ``answer_consistency_binary`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
