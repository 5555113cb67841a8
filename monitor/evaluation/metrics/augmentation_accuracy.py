"""``augmentation_accuracy`` (Tonic Validate seed): share of retrieved chunks whose information is in the answer.

Judged per chunk with :mod:`._tonic_chunks`; default defect rule: value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_chunks import ChunkMetric, ChunkVerdict, chunk_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["augmentation_accuracy", "METRIC", "register"]


def augmentation_accuracy(verdicts: Sequence[ChunkVerdict]) -> float:
    """Used chunks / chunks."""
    return sum(bool(v.used) for v in verdicts) / len(verdicts)


METRIC = ChunkMetric("augmentation_accuracy", ("used",), augmentation_accuracy)


def register(registry: MetricRegistry) -> None:
    """Add ``augmentation_accuracy`` to ``registry``."""
    registry.register(chunk_metric_spec(METRIC, "share of retrieved chunks used in the answer (Tonic)"))
