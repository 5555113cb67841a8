"""``augmentation_precision`` (Tonic Validate seed): of the relevant chunks, the share used in the answer.

Judged per chunk in the Tonic set's shared call (:mod:`._tonic_set`). Undefined (``skipped``)
when no chunk is relevant: there is nothing the answer should have used. Default defect rule:
value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_set import ChunkVerdict, TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["augmentation_precision", "METRIC", "register"]


def augmentation_precision(verdicts: Sequence[ChunkVerdict]) -> float | None:
    """(Relevant and used) / relevant; None when no chunk is relevant."""
    relevant = [v for v in verdicts if v.relevant]
    if not relevant:
        return None
    return sum(bool(v.used) for v in relevant) / len(relevant)


def _value(verdicts: TonicVerdicts) -> float | None:
    return augmentation_precision(verdicts.chunks)


METRIC = TonicMetric("augmentation_precision", "share of relevant chunks used in the answer (Tonic)",
                     ("relevant", "used"), _value, undefined_reason="no retrieved chunk is relevant")


def register(registry: MetricRegistry) -> None:
    """Add ``augmentation_precision`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
