"""``answer_consistency`` (Tonic Validate seed): share of the answer's main points backed by the context.

Both of the seed's steps in the Tonic set's shared call (:mod:`._tonic_set`): list the answer's
main points, then mark each supported when the context alone entails it. Value = supported
points / points; an answer with no main point (a refusal, a greeting) is ``skipped``, not a 0.
Context = the retrieved chunks, or the system prompt when no chunk carries text
(``details["context_source"]``). Default defect rule: value < 0.5.
"""

from __future__ import annotations

from typing import Sequence

from monitor.evaluation.metrics._tonic_set import Point, TonicMetric, TonicVerdicts, tonic_metric_spec
from monitor.evaluation.registry import MetricRegistry

__all__ = ["Point", "consistency", "METRIC", "register"]


def consistency(points: Sequence[Point]) -> float | None:
    """Supported points / points; None when the answer makes no main point (a refusal, a greeting)."""
    return sum(p.supported for p in points) / len(points) if points else None


def _value(verdicts: TonicVerdicts) -> float | None:
    return consistency(verdicts.points)


METRIC = TonicMetric("answer_consistency", "share of the answer's main points derivable from the context (Tonic)",
                     ("points",), _value,
                     undefined_reason="the answer makes no main point (a refusal, a greeting): nothing to attribute")


def register(registry: MetricRegistry) -> None:
    """Add ``answer_consistency`` to ``registry``."""
    registry.register(tonic_metric_spec(METRIC))
