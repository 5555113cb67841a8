"""``gen_ai.evaluation.result`` events: one OTLP log record per score, on the evaluated span.

Follows the GenAI semantic conventions' evaluation event: the record's ``event_name`` field is
``gen_ai.evaluation.result`` (the SDK supports it), its trace id and span id are those of the
evaluated chat span (``Turn.trace_id`` / ``Turn.chat_span_id``; the span id is left empty when
the chat span is unknown, and both when the trace id is unusable), the body is empty (the
convention defines none) and the severity is INFO. Attributes:

* ``gen_ai.evaluation.name`` — the metric id (``groundedness``, ``violence``…).
* ``gen_ai.evaluation.score.value`` — the score on the metric's native scale (ok scores only).
* ``gen_ai.evaluation.score.label`` — the metric's own label when it has one (a severity such as
  ``Medium``), else ``pass`` or ``fail`` (a defect).
* ``gen_ai.evaluation.explanation`` — the judge's reason, cut to ``MAX_EXPLANATION_CHARS``, when
  ``include_explanation`` (it can quote conversation text: turn it off where logs must not).
* ``gen_ai.response.id`` and ``gen_ai.conversation.id`` when the turn has them.
* ``error.type`` — for a failed evaluation (the judge timed out, its reply did not validate…):
  such a record has no value and no label, and its explanation is the failure reason. A trace
  backend user sees that the turn was sampled but could not be scored, and why.
* ``rag_monitor.evaluation.outcome`` (pass | defect | error), ``rag_monitor.sampling.weight``
  (the inverse-probability weight) and ``rag_monitor.evaluation.score.min``/``.max`` (the scale).

Skipped scores (the metric did not apply: no context, no ground truth) carry no value and say
nothing about the answer: no record is emitted for them.

Records go through the SDK's ``BatchLogRecordProcessor`` (batch size, delay) on a private
``LoggerProvider``. That processor drops the oldest record silently when its queue is full, so a
counting gate in front admits at most ``max_queue_size`` records between ``emit`` and export and
counts the rest as ``rag_monitor_queue_dropped_total{queue="evaluation_events"}``; records still
queued when the shutdown deadline passes are counted there too. ``emit`` only appends to the
processor's deque, so ``consume_result`` never blocks the event loop. Failed exports (collector
down) are logged by the SDK and not counted. Endpoint, protocol and headers: see
``exporters.otlp_metrics`` (signal ``logs``: ``/v1/logs``, ``OTEL_EXPORTER_OTLP_LOGS_*``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Sequence

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult

import monitor
from exporters.config import EvaluationEventsConfig
from exporters.otlp_metrics import (grpc_metadata, http_endpoint, resolve_protocol, run_blocking, sidecar_resource,
                                    turn_context)
from monitor.model import EvaluationResult, Score, ScoreStatus
from monitor.telemetry import QUEUE_DROPPED, Telemetry

__all__ = ["EVENT_NAME", "QUEUE", "MAX_EXPLANATION_CHARS", "EvaluationEvents", "event_attributes"]

EVENT_NAME = "gen_ai.evaluation.result"
QUEUE = "evaluation_events"
MAX_EXPLANATION_CHARS = 1000
_SCOPE = "rag-monitor"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_EXPLANATION_CHARS else text[:MAX_EXPLANATION_CHARS - 1] + "…"


def event_attributes(result: EvaluationResult, score: Score, include_explanation: bool) -> dict[str, Any] | None:
    """The record's attributes for one score; None for a skipped score (no record)."""
    if score.status == ScoreStatus.SKIPPED:
        return None
    turn = result.turn
    attrs: dict[str, Any] = {"gen_ai.evaluation.name": score.metric}
    if score.status == ScoreStatus.OK and score.value is not None:
        attrs["gen_ai.evaluation.score.value"] = float(score.value)
        attrs["gen_ai.evaluation.score.label"] = score.label or ("fail" if score.defect else "pass")
    else:
        attrs["error.type"] = score.error_type or "_OTHER"
    if include_explanation and score.reason:
        attrs["gen_ai.evaluation.explanation"] = _cut(score.reason)
    if turn.response_id:
        attrs["gen_ai.response.id"] = turn.response_id
    if turn.conversation_id:
        attrs["gen_ai.conversation.id"] = turn.conversation_id
    attrs["rag_monitor.evaluation.outcome"] = score.outcome
    attrs["rag_monitor.evaluation.score.min"] = float(score.scale[0])
    attrs["rag_monitor.evaluation.score.max"] = float(score.scale[1])
    attrs["rag_monitor.sampling.weight"] = float(result.weight)
    return attrs


class _Gate:
    """Records between ``emit`` and the exporter: admitted on the loop, released on export."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._held = 0
        self._lock = threading.Lock()

    def admit(self) -> bool:
        with self._lock:
            if self._held >= self.capacity:
                return False
            self._held += 1
            return True

    def release(self, count: int) -> None:
        with self._lock:
            self._held = max(0, self._held - count)

    @property
    def depth(self) -> int:
        return self._held


class _GatedExporter(LogRecordExporter):
    """Releases the gate as batches leave the SDK queue; after ``abort`` counts them as dropped
    instead of sending them."""

    def __init__(self, inner: LogRecordExporter, gate: _Gate, dropped: Callable[[int], None]) -> None:
        self._inner, self._gate, self._dropped = inner, gate, dropped
        self._aborted = False
        self._closed = False
        self._lock = threading.Lock()

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self._gate.release(len(batch))
        if self._aborted:
            self._dropped(len(batch))
            return LogRecordExportResult.FAILURE
        return self._inner.export(batch)

    def abort(self) -> None:
        self._aborted = True
        self.shutdown()  # cuts the inner exporter's retry wait short

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class EvaluationEvents:
    """Component + ``ResultConsumer`` emitting one ``gen_ai.evaluation.result`` record per score.

    Results offered before ``start`` or after ``shutdown`` are dropped and counted. ``enabled`` is
    the composition root's to check: constructed, this component exports.
    """

    def __init__(self, config: EvaluationEventsConfig, service_name: str, telemetry: Telemetry) -> None:
        self._config = config
        self._service_name = service_name
        self._telemetry = telemetry
        self._protocol = resolve_protocol(config.protocol, "logs")
        self._endpoint = http_endpoint(config.endpoint, "logs") if self._protocol == "http/protobuf" else None
        self._gate = _Gate(config.max_queue_size)
        self._provider: LoggerProvider | None = None
        self._exporter: _GatedExporter | None = None
        self._logger: Any = None

    @property
    def protocol(self) -> str:
        return self._protocol

    @property
    def queue_depth(self) -> int:
        """Records admitted and not yet handed to the exporter (for ``rag_monitor_queue_depth``)."""
        return self._gate.depth

    @property
    def queue_capacity(self) -> int:
        return self._gate.capacity

    async def start(self) -> None:
        if self._provider is not None:
            return
        self._gate = _Gate(self._config.max_queue_size)
        # Off the loop: exporter construction may read TLS files.
        provider, self._exporter = await asyncio.to_thread(self._build)
        self._provider, self._logger = provider, provider.get_logger(_SCOPE, monitor.__version__)

    def _build(self) -> tuple[LoggerProvider, _GatedExporter]:
        c = self._config
        inner: LogRecordExporter
        if self._protocol == "grpc":
            inner = GrpcLogExporter(endpoint=c.endpoint, insecure=c.insecure, headers=grpc_metadata(c.headers),
                                    timeout=c.timeout_seconds)
        else:
            inner = HttpLogExporter(endpoint=self._endpoint, headers=dict(c.headers) or None, timeout=c.timeout_seconds)
        exporter = _GatedExporter(inner, self._gate, lambda n: self._telemetry.add(QUEUE_DROPPED, n, queue=QUEUE))
        provider = LoggerProvider(resource=sidecar_resource(self._service_name), shutdown_on_exit=False)
        provider.add_log_record_processor(BatchLogRecordProcessor(
            exporter, schedule_delay_millis=c.schedule_delay_seconds * 1000,
            # The SDK refuses a batch larger than its queue.
            max_export_batch_size=min(c.max_export_batch_size, c.max_queue_size),
            export_timeout_millis=c.timeout_seconds * 1000, max_queue_size=c.max_queue_size))
        return provider, exporter

    async def shutdown(self, deadline: float) -> None:
        """Stops accepting, exports what is queued until ``deadline``, then counts the rest as
        dropped."""
        provider, exporter = self._provider, self._exporter
        self._provider, self._exporter, self._logger = None, None, None
        if provider is None or exporter is None:
            return
        if not await run_blocking(provider.shutdown, deadline, "evaluation events shutdown"):
            exporter.abort()

    def consume_result(self, result: EvaluationResult) -> None:
        records = [a for s in result.scores
                   if (a := event_attributes(result, s, self._config.include_explanation)) is not None]
        if not records:
            return
        logger = self._logger
        if logger is None:
            self._telemetry.add(QUEUE_DROPPED, len(records), queue=QUEUE)
            return
        context = turn_context(result.turn)
        now = time.time_ns()
        dropped = 0
        for attrs in records:
            if not self._gate.admit():
                dropped += 1
                continue
            logger.emit(timestamp=now, observed_timestamp=now, context=context, severity_number=SeverityNumber.INFO,
                        attributes=attrs, event_name=EVENT_NAME)
        if dropped:
            self._telemetry.add(QUEUE_DROPPED, dropped, queue=QUEUE)
