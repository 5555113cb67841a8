"""``retrieval_precision`` (Tonic Validate seed): share of retrieved chunks relevant to the question.

Judged per chunk with :mod:`._tonic_chunks`; default defect rule: value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_chunks import ChunkMetric, ChunkVerdict, chunk_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["retrieval_precision", "METRIC", "register"]


def retrieval_precision(verdicts: Sequence[ChunkVerdict]) -> float:
    """Relevant chunks / chunks."""
    return sum(bool(v.relevant) for v in verdicts) / len(verdicts)


METRIC = ChunkMetric("retrieval_precision", ("relevant",), retrieval_precision)


def register(registry: MetricRegistry) -> None:
    """Add ``retrieval_precision`` to ``registry``."""
    registry.register(chunk_metric_spec(METRIC, "share of retrieved chunks relevant to the question (Tonic)"))
