"""The part of ingest both transports share: decode off the loop when large, count, hand off.

The receivers only deal with their protocol (HTTP status codes, gRPC codes); this module turns a
decoded body into calls on the downstream :class:`SpanConsumer` and into the numbers the
protocol's ``partial_success`` needs.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from monitor.interfaces import SpanConsumer
from monitor.model import AttributeSelection
from monitor.receivers.decode import (
    DEFAULT_MAX_CHARS, PROTOBUF, Decoded, DecodedLogs, DecodedSpans, decode_logs, decode_trace_request, decode_traces,
    decompress, parse_trace_request, trace_request_spans)
from monitor.telemetry import LOGS_DROPPED, SPANS_DROPPED, Instrument, Telemetry, counter

__all__ = ["IngestOutcome", "Ingest", "OFFLOAD_BYTES", "INLINE_PARSE_BYTES", "OFFLOAD_SPANS"]

# Bodies above this size are decoded in a worker thread: a 6 MB batch takes tens of
# milliseconds to convert, long enough to stall every other request on the loop.
OFFLOAD_BYTES = 256 * 1024
# Protobuf trace bodies up to INLINE_PARSE_BYTES are parsed on the loop (upb: at most ~2 ms per
# MiB, and far less when the bytes are text), and then converted on the loop too when they hold
# at most OFFLOAD_SPANS spans (~4 µs a span: a few ms for the SDK's default batch of 512). What
# a span costs to convert is its attributes, not its text, so the span count decides, not the
# body size: a batch of 100 spans carrying 16 KiB prompts is cheaper than one of 2,000 tiny
# spans. Handing a body to a thread is not free either (a wake-up and a GIL hand-off per
# request, with no parallelism to gain under the GIL).
INLINE_PARSE_BYTES = 1024 * 1024
OFFLOAD_SPANS = 512

T = TypeVar("T")

SPANS_RECEIVED = counter("rag_monitor_spans_received_total", "Spans received, by transport.", "transport")
LOGS_RECEIVED = counter("rag_monitor_logs_received_total", "Log records received, by transport.", "transport")
TEXT_TRUNCATED = counter(
    "rag_monitor_text_truncated_total",
    "Attribute and log-body text values cut at assembly.max_attribute_chars where they entered.")


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    accepted: int
    rejected: int
    message: str


def _describe(reasons: dict[str, int], kind: str) -> str:
    if not reasons:
        return ""
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    return f"dropped {sum(reasons.values())} {kind}: {parts}"


class Ingest:
    """Decode → count → consume. Safe to call concurrently from both receivers."""

    def __init__(self, consumer: SpanConsumer, telemetry: Telemetry, executor: Executor | None = None,
                 max_chars: int = DEFAULT_MAX_CHARS, selection: AttributeSelection | None = None) -> None:
        """``selection``: the span attributes the consumer reads (the others are not decoded);
        None keeps every attribute."""
        self._consumer = consumer
        self._telemetry = telemetry
        self._executor = executor
        self._max_chars = max_chars
        self._selection = selection

    async def _run(self, size: int, fn: Callable[..., T], *args: Any) -> T:
        if size > OFFLOAD_BYTES:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        return fn(*args)

    async def decompress(self, raw: bytes, encoding: str | None, limit: int) -> bytes:
        """Undo Content-Encoding under ``limit``; a compressed body of any size inflates off the
        loop past a few KiB (it may expand a hundredfold)."""
        compressed = (encoding or "identity").strip().lower() not in ("", "identity")
        return await self._run(len(raw) * 64 if compressed else 0, decompress, raw, encoding, limit)

    async def traces(self, body: bytes, media_type: str, transport: str) -> IngestOutcome:
        """Decode an ExportTraceServiceRequest body; DecodeError propagates to the edge."""
        decoded: DecodedSpans
        if media_type == PROTOBUF and len(body) <= INLINE_PARSE_BYTES:
            request = parse_trace_request(body)
            if trace_request_spans(request) <= OFFLOAD_SPANS:
                decoded = decode_trace_request(request, len(body), None, self._max_chars, self._selection)
            else:
                decoded = await asyncio.get_running_loop().run_in_executor(
                    self._executor, decode_trace_request, request, len(body), None, self._max_chars, self._selection)
        else:
            decoded = await self._run(len(body), decode_traces, body, media_type, None, self._max_chars,
                                      self._selection)
        return self.accept_spans(decoded, transport)

    async def logs(self, body: bytes, media_type: str, transport: str) -> IngestOutcome:
        decoded: DecodedLogs = await self._run(len(body), decode_logs, body, media_type, None, self._max_chars)
        return self.accept_logs(decoded, transport)

    def accept_spans(self, decoded: DecodedSpans, transport: str) -> IngestOutcome:
        return self._accept(decoded, "spans", transport, SPANS_RECEIVED, SPANS_DROPPED, self._consumer.consume_spans)

    def accept_logs(self, decoded: DecodedLogs, transport: str) -> IngestOutcome:
        return self._accept(decoded, "log records", transport, LOGS_RECEIVED, LOGS_DROPPED,
                            self._consumer.consume_logs)

    def _accept(self, decoded: Decoded[Any], kind: str, transport: str, received: Instrument, dropped: Instrument,
                consume: Callable[[Sequence[Any]], Mapping[str, int]]) -> IngestOutcome:
        t = self._telemetry
        if decoded.truncated:
            t.add(TEXT_TRUNCATED, decoded.truncated)
        records = decoded.records
        t.add(received, len(records) + decoded.rejected, transport=transport)
        for reason, n in decoded.reasons.items():
            t.add(dropped, n, reason=reason)
        reasons = dict(decoded.reasons)
        downstream = consume(records) if records else {}  # the consumer counts its own drops
        for reason, n in downstream.items():
            reasons[reason] = reasons.get(reason, 0) + n
        lost = sum(downstream.values())
        return IngestOutcome(len(records) - lost, decoded.rejected + lost, _describe(reasons, kind))
