"""The gRPC receiver through the real OTLP gRPC exporter; forwarding to a downstream collector."""

from __future__ import annotations

import asyncio
import io
import logging
import random
import time

import aiohttp
import grpc
import pytest
from aiohttp import web
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from monitor.config import MonitorConfig
from tests.support.otlp_payloads import rag_trace_spans, request
from tests.support.pipeline import metric_value, running_sidecar, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with


async def test_grpc_exporter_with_gzip_reaches_the_assembler(sidecar):
    sc, sink = sidecar
    exporter = GrpcSpanExporter(endpoint=f"127.0.0.1:{sc.grpc.port}", insecure=True, compression=Compression.Gzip)
    provider = provider_with(exporter)
    trace_id = emit_genai_turn(provider, "conv-g", "Is gRPC supported?", "Yes, with gzip.")
    # The SDK exporter blocks; the server runs on this loop, so flush from a thread.
    assert await asyncio.to_thread(provider.force_flush, 10_000)
    await asyncio.to_thread(provider.shutdown)
    turn = (await sink.wait_turns(1))[0]
    assert (turn.trace_id, turn.conversation_id, turn.question, turn.answer, turn.service) == (
        trace_id, "conv-g", "Is gRPC supported?", "Yes, with gzip.", "sdk-app")
    assert metric_value(sc, "rag_monitor_spans_received_total", transport="grpc") == 2


async def test_grpc_message_over_the_limit_is_resource_exhausted():
    data = test_config().model_dump()
    data["receivers"]["grpc"]["max_message_bytes"] = 64 * 1024
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, sink):
        rng = random.Random(1)
        spans = []
        for _ in range(10):
            spans += rag_trace_spans(rng, rng.randbytes(16), 4, time.time_ns())
        req = request(spans)
        assert req.ByteSize() > 64 * 1024
        async with grpc.aio.insecure_channel(f"127.0.0.1:{sc.grpc.port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Export(req)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            small = request(rag_trace_spans(rng, rng.randbytes(16), 3, time.time_ns()))
            resp = await stub.Export(small)
            assert not resp.HasField("partial_success")
        await sink.wait_turns(1)


async def test_bearer_token_is_required_when_configured():
    data = test_config().model_dump()
    data["receivers"]["http"]["bearer_token"] = "s3cret"
    data["receivers"]["grpc"]["bearer_token"] = "s3cret"
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, sink):
        rng = random.Random(2)
        body = request(rag_trace_spans(rng, rng.randbytes(16), 3, time.time_ns())).SerializeToString()
        url = f"http://127.0.0.1:{sc.http.port}/v1/traces"
        async with aiohttp.ClientSession() as s:
            async with s.post(url, data=io.BytesIO(body), headers={"Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 401
            async with s.post(url, data=io.BytesIO(body), headers={"Content-Type": "application/x-protobuf",
                                                                  "Authorization": "Bearer s3cret"}) as r:
                assert r.status == 200
        async with grpc.aio.insecure_channel(f"127.0.0.1:{sc.grpc.port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Export(request(rag_trace_spans(rng, rng.randbytes(16), 3, time.time_ns())))
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "s3cret" not in repr(sc.config)


class Downstream:
    """A stand-in collector: records bodies, optionally stalls."""

    def __init__(self, stall: bool = False) -> None:
        self.bodies: list[tuple[str, bytes, str | None]] = []
        self.stall = stall
        self.received = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append((request.path, await request.read(), request.headers.get("Content-Encoding")))
        self.received.set()
        if self.stall:
            await self.release.wait()
        return web.Response(body=b"", content_type="application/x-protobuf")


async def _serve(down: Downstream) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_post("/v1/traces", down.handle)
    app.router.add_post("/v1/logs", down.handle)
    runner = web.AppRunner(app, auto_decompress=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1]


def _with_forward(endpoint: str, **extra: object) -> MonitorConfig:
    data = test_config().model_dump()
    data["forward"] = {"endpoint": endpoint, "timeout_seconds": 2, **extra}
    return MonitorConfig.model_validate(data)


async def test_forwarder_sends_the_same_bytes_downstream():
    down = Downstream()
    runner, port = await _serve(down)
    try:
        async with running_sidecar(_with_forward(f"http://127.0.0.1:{port}")) as (sc, sink):
            import gzip

            rng = random.Random(3)
            raw = request(rag_trace_spans(rng, rng.randbytes(16), 4, time.time_ns())).SerializeToString()
            body = gzip.compress(raw)
            async with aiohttp.ClientSession() as s:
                async with s.post(f"http://127.0.0.1:{sc.http.port}/v1/traces", data=io.BytesIO(body),
                                  headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}) as r:
                    assert r.status == 200
            await asyncio.wait_for(down.received.wait(), 10)
            assert down.bodies == [("/v1/traces", body, "gzip")]
            await sink.wait_turns(1)
    finally:
        await runner.cleanup()


async def test_a_stalled_downstream_never_delays_the_app_and_overflow_is_counted():
    down = Downstream(stall=True)
    runner, port = await _serve(down)
    try:
        config = _with_forward(f"http://127.0.0.1:{port}", max_queue_requests=2, concurrency=1, max_attempts=1)
        async with running_sidecar(config) as (sc, sink):
            rng = random.Random(4)
            async with aiohttp.ClientSession() as s:
                for i in range(6):
                    raw = request(rag_trace_spans(rng, rng.randbytes(16), 3, time.time_ns())).SerializeToString()
                    async with s.post(f"http://127.0.0.1:{sc.http.port}/v1/traces", data=io.BytesIO(raw),
                                      headers={"Content-Type": "application/x-protobuf"}) as r:
                        assert r.status == 200
            await sink.wait_turns(6)
            # One in flight (stalled), two queued, the rest dropped and counted.
            assert metric_value(sc, "rag_monitor_forward_total", outcome="queue_full") == 3
            down.release.set()
    finally:
        await runner.cleanup()


async def test_a_dead_downstream_is_counted_not_retried_forever():
    async with running_sidecar(_with_forward("http://127.0.0.1:9", max_attempts=2)) as (sc, sink):
        rng = random.Random(5)
        raw = request(rag_trace_spans(rng, rng.randbytes(16), 3, time.time_ns())).SerializeToString()
        async with aiohttp.ClientSession() as s:
            async with s.post(f"http://127.0.0.1:{sc.http.port}/v1/traces", data=io.BytesIO(raw),
                              headers={"Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 200
        await sink.wait_turns(1)
        await asyncio.wait_for(sc.forwarder.drained(), 10)
        assert metric_value(sc, "rag_monitor_forward_total", outcome="failed") == 1
        assert metric_value(sc, "rag_monitor_forward_total", outcome="retried") == 1


def _raw_export(channel: grpc.aio.Channel) -> grpc.aio.UnaryUnaryMultiCallable:
    # No serializer: the test sends whatever bytes it likes, as a hostile client would.
    return channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")


async def test_malformed_grpc_messages_are_invalid_argument_counted_and_quiet(caplog):
    rng = random.Random(7)
    bodies = [rng.randbytes(rng.randint(1, 300)) for _ in range(200)] + [b"\x0a\xff\xff\xff\xff\x0f"]
    async with running_sidecar() as (sc, sink):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{sc.grpc.port}") as channel:
            export = _raw_export(channel)
            codes = []
            for body in bodies:
                try:
                    await export(body)
                    codes.append(grpc.StatusCode.OK)  # random bytes can happen to be a valid (empty) request
                except grpc.aio.AioRpcError as err:
                    codes.append(err.code())
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT}
    invalid = codes.count(grpc.StatusCode.INVALID_ARGUMENT)
    assert invalid > 100
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="grpc", reason="undecodable") == invalid
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_grpc_token_is_checked_before_the_message_is_parsed():
    data = test_config().model_dump()
    data["receivers"]["grpc"]["bearer_token"] = "s3cret-token"
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, _):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{sc.grpc.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await _raw_export(channel)(b"\xff\xff\xff not protobuf")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="grpc", reason="undecodable") == 0
