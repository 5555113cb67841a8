"""Where a trace body is converted: on the loop for an ordinary batch, in the executor for a large
one — by span count for protobuf (what conversion costs), by size for the rest. Either way the
consumer gets the same records."""

from __future__ import annotations

import base64
import json
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Sequence

from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from monitor.model import LogRecord, SpanRecord
from monitor.receivers.decode import JSON, PROTOBUF
from monitor.receivers.ingest import INLINE_PARSE_BYTES, OFFLOAD_SPANS, Ingest
from monitor.telemetry import NullTelemetry
from tests.support.otlp_payloads import rag_spans, rag_trace_spans, request


class _Recorder:
    """Records the spans it is given."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []

    def consume_spans(self, spans: Sequence[SpanRecord]) -> Mapping[str, int]:
        self.spans.extend(spans)
        return {}

    def consume_logs(self, logs: Sequence[LogRecord]) -> Mapping[str, int]:
        return {}


class _CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _body(traces: int, spans_per_trace: int = 5, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    spans = []
    for t in range(traces):
        spans += rag_trace_spans(rng, rng.randbytes(8) + t.to_bytes(8, "big"), spans_per_trace, 1_000_000_000,
                                 conversation_id=f"c{t}")
    return request(spans).SerializeToString()


async def _ingest(body: bytes, media_type: str = PROTOBUF) -> tuple[int, list[SpanRecord]]:
    recorder, executor = _Recorder(), _CountingExecutor()
    try:
        outcome = await Ingest(recorder, NullTelemetry(), executor).traces(body, media_type, "http")
    finally:
        executor.shutdown()
    assert outcome.accepted == len(recorder.spans) and outcome.rejected == 0
    return executor.submitted, recorder.spans


async def test_an_ordinary_batch_with_large_text_is_converted_on_the_loop():
    # 5 spans whose prompt and answer make the body larger than the old byte threshold (256 KiB):
    # their cost is their span count, so no thread hand-off.
    rng = random.Random(5)
    spans = rag_spans(rng, rng.randbytes(16), rng.randbytes(8), 5, 1_000_000_000, "c",
                      docs=[{"id": "d", "content": "y" * (64 * 1024)}], question="Why?", system="Be brief.",
                      answer="x" * (300 * 1024), input_tokens=10)
    body = request(spans).SerializeToString()
    assert 256 * 1024 < len(body) <= INLINE_PARSE_BYTES
    submitted, records = await _ingest(body)
    assert submitted == 0 and len(records) == 5


_MANY = 20, OFFLOAD_SPANS // 20 + 2  # traces, spans per trace: just over OFFLOAD_SPANS in a small body


async def test_a_batch_of_many_spans_is_converted_in_the_executor():
    body = _body(*_MANY)
    assert len(body) <= INLINE_PARSE_BYTES
    submitted, records = await _ingest(body)
    assert submitted == 1 and len(records) == _MANY[0] * _MANY[1] > OFFLOAD_SPANS


async def test_a_body_past_the_inline_parse_size_is_decoded_in_the_executor():
    body = _body(120, 3)  # few spans, but more than INLINE_PARSE_BYTES of text
    assert len(body) > INLINE_PARSE_BYTES
    submitted, records = await _ingest(body)
    assert submitted == 1 and len(records) == 360


async def test_inline_and_offloaded_conversion_give_the_same_records():
    body = _body(*_MANY)
    _, offloaded = await _ingest(body)
    recorder = _Recorder()
    # No executor at all: the large batch is converted on the loop's default executor instead;
    # same request, same records (arrival-time defaults aside, none apply: every span has times).
    await Ingest(recorder, NullTelemetry(), None).traces(body, PROTOBUF, "http")
    assert recorder.spans == offloaded


async def test_json_bodies_still_go_by_size():
    submitted, records = await _ingest(_otlp_json(_body(2)), JSON)
    assert submitted == 0 and len(records) == 10


def _otlp_json(body: bytes) -> bytes:
    # OTLP/JSON writes ids as hex; protobuf's JSON mapping would write base64.
    doc = json.loads(MessageToJson(ExportTraceServiceRequest.FromString(body), use_integers_for_enums=True))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64decode(s[key]).hex()
    return json.dumps(doc).encode()
