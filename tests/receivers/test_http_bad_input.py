"""Bad input gets its status code or a counted drop, and the server keeps serving."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import random
import time

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from google.rpc import status_pb2

from tests.support.otlp_payloads import rag_trace_spans, request
from tests.support.pipeline import metric_value, running_sidecar, test_config

PB = {"Content-Type": "application/x-protobuf"}
JS = {"Content-Type": "application/json"}


def good_body(seed: int = 1, n_spans: int = 5) -> bytes:
    rng = random.Random(seed)
    return request(rag_trace_spans(rng, rng.randbytes(16), n_spans, time.time_ns())).SerializeToString()


async def post(port: int, body: bytes, headers: dict[str, str], path: str = "/v1/traces") -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{port}{path}", data=io.BytesIO(body), headers=headers) as r:
            return r.status, await r.read()


async def assert_still_serving(sidecar, sink, seed: int) -> None:
    before = len(sink.turns)
    status, body = await post(sidecar.http.port, good_body(seed), PB)
    assert status == 200
    assert not ExportTraceServiceResponse.FromString(body).HasField("partial_success")
    await sink.wait_turns(before + 1)


@pytest.mark.parametrize("case", ["random_bytes", "truncated_protobuf", "json_wrong_types", "json_not_object",
                                  "json_bad_hex_id", "bad_gzip"])
async def test_undecodable_bodies_get_400_with_a_reason(sidecar, case):
    sc, sink = sidecar
    headers = PB
    if case == "random_bytes":
        body = random.Random(7).randbytes(4096)
    elif case == "truncated_protobuf":
        full = good_body()
        body = full[: len(full) // 2]
    elif case == "json_wrong_types":
        headers = JS
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
             "name": 42}]}]}]}).encode()
    elif case == "json_not_object":
        headers = JS
        body = b"[1, 2, 3]"
    elif case == "json_bad_hex_id":
        headers = JS
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "W4739/eYA4ED0mm2M4E/xg==", "spanId": "eee19b7ec3c1b174", "name": "x"}]}]}]}).encode()
    else:
        headers = {**PB, "Content-Encoding": "gzip"}
        body = b"\x1f\x8b\x08\x00garbage"
    status, payload = await post(sc.http.port, body, headers)
    assert status == 400
    media = headers["Content-Type"]
    if media == "application/json":
        message = json.loads(payload)["message"]
    else:
        message = status_pb2.Status.FromString(payload).message
    assert message  # says what was wrong
    if case == "json_wrong_types":
        assert "resourceSpans[0].scopeSpans[0].spans[0].name" in message
    if case == "json_bad_hex_id":
        assert "traceId" in message and "hex" in message
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http", reason="undecodable") == 1
    await assert_still_serving(sc, sink, seed=3)


async def test_wrong_content_type_is_415(sidecar):
    sc, sink = sidecar
    status, payload = await post(sc.http.port, good_body(), {"Content-Type": "text/plain"})
    assert status == 415
    assert "Content-Type" in status_pb2.Status.FromString(payload).message
    status, _ = await post(sc.http.port, good_body(), {**PB, "Content-Encoding": "br"})
    assert status == 415
    await assert_still_serving(sc, sink, seed=4)


async def test_oversized_and_gzip_bomb_are_413():
    config = test_config().model_copy(deep=True)
    http = config.receivers.http.model_copy(update={"max_request_bytes": 64 * 1024, "max_decompressed_bytes": 256 * 1024})
    config = config.model_copy(update={"receivers": config.receivers.model_copy(update={"http": http})})
    async with running_sidecar(config) as (sc, sink):
        status, _ = await post(sc.http.port, b"\x0a" * (100 * 1024), PB)
        assert status == 413
        bomb = gzip.compress(b"\x00" * (50 * 1024 * 1024))  # 50 MiB of zeros in ~50 KB
        assert len(bomb) < 64 * 1024
        status, payload = await post(sc.http.port, bomb, {**PB, "Content-Encoding": "gzip"})
        assert status == 413
        assert "decompressed" in status_pb2.Status.FromString(payload).message
        assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http", reason="too_large") == 2
        await assert_still_serving(sc, sink, seed=5)


async def test_default_limit_accepts_an_sdk_default_batch_of_512_rag_spans(sidecar):
    sc, sink = sidecar
    rng = random.Random(11)
    spans = []
    for _ in range(512 // 4):
        spans += rag_trace_spans(rng, rng.randbytes(16), 4, time.time_ns())
    body = request(spans).SerializeToString()
    assert len(body) > 1024 * 1024  # over aiohttp's default limit
    status, _ = await post(sc.http.port, body, PB)
    assert status == 200
    await sink.wait_turns(128)


async def test_spans_missing_ids_are_reported_in_partial_success(sidecar):
    sc, sink = sidecar
    rng = random.Random(2)
    spans = rag_trace_spans(rng, rng.randbytes(16), 5, time.time_ns())
    spans[0].trace_id = b""
    spans[1].span_id = b"\x00" * 8
    status, payload = await post(sc.http.port, request(spans).SerializeToString(), PB)
    assert status == 200
    resp = ExportTraceServiceResponse.FromString(payload)
    assert resp.partial_success.rejected_spans == 2
    assert "invalid_id" in resp.partial_success.error_message
    assert metric_value(sc, "rag_monitor_spans_dropped_total", reason="invalid_id") == 2


async def test_spans_missing_times_are_kept_and_assembled(sidecar):
    sc, sink = sidecar
    rng = random.Random(3)
    spans = rag_trace_spans(rng, rng.randbytes(16), 4, time.time_ns())
    for s in spans:
        s.start_time_unix_nano = 0
        s.end_time_unix_nano = 0
    status, _ = await post(sc.http.port, request(spans).SerializeToString(), PB)
    assert status == 200
    turns = await sink.wait_turns(1)
    assert turns[0].question.startswith("What does the monitor judge?")


async def test_ten_thousand_spans_in_one_trace_are_bounded_and_counted(sidecar):
    sc, sink = sidecar
    rng = random.Random(4)
    spans = rag_trace_spans(rng, rng.randbytes(16), 10_000, time.time_ns())
    status, payload = await post(sc.http.port, request(spans).SerializeToString(), PB)
    assert status == 200
    limit = sc.config.assembly.max_spans_per_trace
    resp = ExportTraceServiceResponse.FromString(payload)
    # The trace is assembled when it reaches the limit; the rest arrive late and are dropped.
    assert resp.partial_success.rejected_spans == 10_000 - limit
    assert metric_value(sc, "rag_monitor_traces_evicted_total", reason="max_spans_per_trace") == 1
    assert metric_value(sc, "rag_monitor_spans_dropped_total", reason="late") == 10_000 - limit
    assert sc.assembler.pending_spans == 0
    await assert_still_serving(sc, sink, seed=6)


async def test_json_body_with_string_int64_and_hex_ids_is_accepted(sidecar):
    sc, sink = sidecar
    now = time.time_ns()
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": [
            {"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "eee19b7ec3c1b174", "name": "POST /chat",
             "kind": 2, "startTimeUnixNano": str(now), "endTimeUnixNano": now + 5000,
             "attributes": [{"key": "gen_ai.conversation.id", "value": {"stringValue": "c-9"}}]},
            {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175",
             "parentSpanId": "eee19b7ec3c1b174", "name": "chat", "kind": 3,
             "startTimeUnixNano": str(now + 1), "endTimeUnixNano": str(now + 4000),
             "attributes": [
                 {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                 {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                 {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                     [{"role": "user", "parts": [{"type": "text", "content": "hi?"}]}])}},
                 {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                     [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])}}]}]}]}]}
    status, payload = await post(sc.http.port, json.dumps(doc).encode(), JS)
    assert status == 200
    assert json.loads(payload) == {}
    turn = (await sink.wait_turns(1))[0]
    assert (turn.trace_id, turn.conversation_id, turn.question, turn.answer, turn.usage.input_tokens) == (
        "5b8efff798038103d269b633813fc60c", "c-9", "hi?", "hello", 12)
    assert turn.service == "svc"


async def test_over_max_concurrent_uploads_answers_503_with_retry_after():
    data = test_config().model_dump()
    data["receivers"]["http"]["max_concurrent_uploads"] = 1
    from monitor.config import MonitorConfig

    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, sink):
        body = good_body(12)
        release = asyncio.Event()
        first_chunk_sent = asyncio.Event()

        async def slow_body():
            yield body[:10]
            first_chunk_sent.set()
            await release.wait()
            yield body[10:]

        url = f"http://127.0.0.1:{sc.http.port}/v1/traces"
        async with aiohttp.ClientSession() as s:
            async def first() -> int:
                async with s.post(url, data=slow_body(), headers=PB) as r:
                    return r.status

            task = asyncio.create_task(first())
            await first_chunk_sent.wait()
            while sc.http.uploads_in_flight == 0:  # the handler has the request once headers are parsed
                await asyncio.sleep(0.01)
            async with s.post(url, data=io.BytesIO(body), headers=PB) as r:
                assert r.status == 503
                assert r.headers["Retry-After"] == "1"
            release.set()
            assert await task == 200
        assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http", reason="overloaded") == 1
        await sink.wait_turns(1)
