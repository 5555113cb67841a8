"""``retrieval_precision`` (Tonic Validate seed): share of retrieved chunks relevant to the question.

Judged per chunk in the Tonic set's shared call (:mod:`._tonic_set`); default defect rule: value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_set import ChunkVerdict, TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["retrieval_precision", "METRIC", "register"]


def retrieval_precision(verdicts: Sequence[ChunkVerdict]) -> float:
    """Relevant chunks / chunks."""
    return sum(bool(v.relevant) for v in verdicts) / len(verdicts)


def _value(verdicts: TonicVerdicts) -> float:
    return retrieval_precision(verdicts.chunks)


METRIC = TonicMetric("retrieval_precision", "share of retrieved chunks relevant to the question (Tonic)",
                     ("relevant",), _value)


def register(registry: MetricRegistry) -> None:
    """Add ``retrieval_precision`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
