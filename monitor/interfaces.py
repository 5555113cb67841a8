"""The seams between pipeline stages.

Consumers are synchronous and never block: a call either takes ownership of the data (the caller
must not touch it afterwards) or drops it and counts the drop. None raises for overload. Stages
are wired only in ``monitor.app``; each stage knows its downstream through these protocols.

Seams that belong to one stage live with it: ``samplers.base.OutcomeSampler`` (what the sampling
stage asks of a policy tree), ``monitor.assembly.conversations.ConversationSink``,
``monitor.evaluation.stage.DecisionSource``, ``monitor.receivers.otlp_http.BodySink`` (the
forwarder). Self-telemetry is ``monitor.telemetry.Telemetry``.
Every stage's lifecycle is ``async start()`` then ``async shutdown(deadline)``: safe twice and
without ``start``, drains what it accepted, honours ``deadline`` (a ``loop.time()`` value).
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence

from monitor.model import (
    EvaluationResult,
    LogRecord,
    Score,
    SpanRecord,
    Turn,
)

__all__ = [
    "SpanConsumer",
    "TurnConsumer",
    "ResultConsumer",
    "Evaluator",
]


class SpanConsumer(Protocol):
    """Receives decoded spans and log records from the receivers."""

    def consume_spans(self, spans: Sequence[SpanRecord]) -> Mapping[str, int]:
        """Take ownership of ``spans``; return how many were dropped on purpose, by reason
        (already counted by the consumer; the receivers report them in ``partial_success``)."""
        ...

    def consume_logs(self, logs: Sequence[LogRecord]) -> Mapping[str, int]:
        """Take ownership of ``logs``; return how many were dropped on purpose, by reason."""
        ...


class TurnConsumer(Protocol):
    def consume_turn(self, turn: Turn) -> None: ...


class ResultConsumer(Protocol):
    """Exporters: Prometheus, OTLP, events, store. Must not block."""

    def consume_result(self, result: EvaluationResult) -> None: ...


class Evaluator(Protocol):
    """One metric (or a group judged together). Never raises for a judge failure: it returns
    ``Score`` objects with status ``error``."""

    metric_ids: tuple[str, ...]

    async def evaluate(self, turn: Turn) -> Sequence[Score]: ...
