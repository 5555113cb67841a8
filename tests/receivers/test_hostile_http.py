"""Hostile clients: stalled and abandoned uploads, nesting bombs, oversized text, late spans.
Each gets a clear status or a counted drop; valid requests keep being served; nothing is logged
as a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
import random

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from monitor.config import MonitorConfig
from tests.receivers.test_http_bad_input import JS, PB, good_body, post
from tests.support.otlp_payloads import request
from tests.support.pipeline import metric_value, running_sidecar, test_config


def config(**http: object) -> MonitorConfig:
    data = test_config().model_dump()
    data["receivers"]["http"].update(http)
    return MonitorConfig.model_validate(data)


async def _stalled_upload(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                 b"Content-Length: 100000\r\n\r\n" + b"\x0a" * 10)
    await writer.drain()
    return reader, writer


async def test_stalled_uploads_time_out_and_never_block_valid_requests(caplog):
    caplog.set_level(logging.WARNING)
    async with running_sidecar(config(body_timeout_seconds=1.0)) as (sc, sink):
        stalled = [await _stalled_upload(sc.http.port) for _ in range(16)]
        # While 16 uploads hang, a ready request is answered at once.
        status, body = await post(sc.http.port, good_body(3), PB)
        assert status == 200 and not ExportTraceServiceResponse.FromString(body).HasField("partial_success")
        for reader, writer in stalled:
            status_line = await asyncio.wait_for(reader.readline(), 10)
            assert status_line.startswith(b"HTTP/1.1 408"), status_line
            await asyncio.wait_for(reader.read(), 10)  # the server closes the connection
            writer.close()
        await sink.wait_turns(1)
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http", reason="body_timeout") == 16
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_client_hanging_up_mid_body_is_counted_not_logged(caplog):
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    async with running_sidecar() as (sc, sink):
        for _ in range(20):
            _, writer = await _stalled_upload(sc.http.port)
            writer.close()
            await writer.wait_closed()

        async def counted() -> None:
            while metric_value(sc, "rag_monitor_requests_rejected_total", transport="http",
                               reason="client_disconnected") < 20:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(counted(), 10)
        status, _ = await post(sc.http.port, good_body(4), PB)
        assert status == 200
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def _nested_json(depth: int, where: str) -> str:
    """A JSON body nesting ``depth`` levels, built as text (no recursion here either)."""
    if where == "document":  # nesting in the JSON itself
        return '{"resourceSpans": ' + "[" * depth + "]" * depth + "}"
    opens, closes = [], []
    for i in range(depth):
        if where == "array" or i % 2:
            opens.append('{"arrayValue": {"values": [')
            closes.append("]}}")
        else:
            opens.append('{"kvlistValue": {"values": [{"key": "k", "value": ')
            closes.append("}]}}")
    value = "".join(opens) + '{"stringValue": "leaf"}' + "".join(reversed(closes))
    return ('{"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [{"traceId": '
            '"5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "s", "attributes": '
            '[{"key": "deep", "value": ' + value + '}]}]}]}]}')


@pytest.mark.parametrize("where,depth", [(w, d) for w in ("document", "array", "mixed")
                                         for d in (40, 300, 3000, 100_000)])
async def test_nesting_bombs_are_400_never_500(sidecar, depth, where, caplog):
    sc, sink = sidecar
    status, payload = await post(sc.http.port, _nested_json(depth, where).encode(), JS)
    assert status == 400, payload[:200]
    if where != "document" or depth >= 3000:  # shallow document nesting fails on types first
        assert b"nest" in payload, payload[:200]
    status, _ = await post(sc.http.port, good_body(5), PB)
    assert status == 200
    assert not [r for r in caplog.records if r.exc_info]


def test_protobuf_value_nested_past_the_limit_is_refused():
    from monitor.errors import DecodeError
    from monitor.receivers.decode import MAX_VALUE_DEPTH, PROTOBUF, decode_traces

    rng = random.Random(2)
    req = request([])
    value = AnyValue(string_value="leaf")
    for _ in range(MAX_VALUE_DEPTH + 5):
        outer = AnyValue()
        outer.array_value.values.append(value)
        value = outer
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = rng.randbytes(16), rng.randbytes(8), "s"
    span.attributes.append(KeyValue(key="deep", value=value))
    with pytest.raises(DecodeError, match="nested deeper"):
        decode_traces(req.SerializeToString(), PROTOBUF)


async def test_text_over_the_cap_is_cut_where_it_enters_and_counted():
    data = test_config().model_dump()
    data["assembly"]["max_attribute_chars"] = 1000
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, sink):
        rng = random.Random(6)
        from tests.support.otlp_payloads import rag_trace_spans
        import time
        spans = rag_trace_spans(rng, rng.randbytes(16), 5, time.time_ns())
        spans[0].attributes.append(KeyValue(key="app.blob", value=AnyValue(string_value="x" * 50_000)))
        status, _ = await post(sc.http.port, request(spans).SerializeToString(), PB)
        assert status == 200  # counted while the request is handled
        assert metric_value(sc, "rag_monitor_text_truncated_total") >= 1


async def test_late_spans_are_reported_as_late_not_overload(sidecar):
    sc, sink = sidecar
    body = good_body(8)
    status, _ = await post(sc.http.port, body, PB)
    assert status == 200
    await sink.wait_turns(1)
    status, payload = await post(sc.http.port, body, PB)  # the same trace again, after assembly
    resp = ExportTraceServiceResponse.FromString(payload)
    assert resp.partial_success.rejected_spans > 0
    assert "late" in resp.partial_success.error_message and "overload" not in resp.partial_success.error_message


async def test_a_lone_surrogate_escape_in_otlp_json_becomes_a_replacement_character(caplog):
    """JSON may escape a lone surrogate ("\\ud800"); parsed as is it is a str no UTF-8 encoder takes
    (protobuf export, SQLite, the local tier's hashing would each fail on it, far from here)."""
    from monitor.model import SamplingDecision
    from monitor.turn_codec import encode_pending
    from tests.receivers.test_ingest_offload import _otlp_json
    from tests.support.otlp_payloads import rag_spans

    caplog.set_level(logging.WARNING)
    rng = random.Random(11)
    import time
    docs = [{"id": "d1", "content": "The Alpine tent is waterproof."}]
    spans = rag_spans(rng, rng.randbytes(16), rng.randbytes(8), 3, time.time_ns(), "conv-s", docs=docs,
                      question="Is the tent waterproof? MARKQ", system="Answer from the documents.",
                      answer="Yes MARKA", input_tokens=10)
    text = _otlp_json(request(spans).SerializeToString()).decode()
    text = text.replace("MARKQ", "\\ud800MARKQ").replace("MARKA", "MARKA\\udfff")
    assert "\\ud800MARKQ" in text
    async with running_sidecar() as (sc, sink):
        status, _ = await post(sc.http.port, text.encode(), JS)
        assert status == 200
        (turn,) = await sink.wait_turns(1)
    assert "\ufffdMARKQ" in turn.question and "MARKA\ufffd" in (turn.answer or "")
    # The durable queue stores a turn as UTF-8 text: with a lone surrogate left, this would raise.
    encode_pending(turn, SamplingDecision(sampled=True, policy="always", probability=1.0)).encode("utf-8")
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
