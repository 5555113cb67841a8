"""``augmentation_accuracy`` (Tonic Validate seed): share of retrieved chunks whose information is in the answer.

Judged per chunk in the Tonic set's shared call (:mod:`._tonic_set`); default defect rule: value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_set import ChunkVerdict, TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["augmentation_accuracy", "METRIC", "register"]


def augmentation_accuracy(verdicts: Sequence[ChunkVerdict]) -> float:
    """Used chunks / chunks."""
    return sum(bool(v.used) for v in verdicts) / len(verdicts)


def _value(verdicts: TonicVerdicts) -> float:
    return augmentation_accuracy(verdicts.chunks)


METRIC = TonicMetric("augmentation_accuracy", "share of retrieved chunks used in the answer (Tonic)",
                     ("used",), _value)


def register(registry: MetricRegistry) -> None:
    """Add ``augmentation_accuracy`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
