"""Lifecycle contract: restart on the same ports, shutdown twice, shutdown flushes."""

from __future__ import annotations

import random
import time

import aiohttp
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.support.otlp_payloads import rag_trace_spans, request
from tests.support.pipeline import RecordingSink, test_config


async def test_start_shutdown_start_again_on_the_same_ports():
    sidecar = Sidecar(test_config(), sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    ports = (sidecar.http.port, sidecar.grpc.port, sidecar.admin.port)
    await sidecar.shutdown()
    config = test_config().model_copy(deep=True)
    data = config.model_dump()
    data["receivers"]["http"]["port"], data["receivers"]["grpc"]["port"], data["admin"]["port"] = ports
    again = Sidecar(type(config).model_validate(data), sink=RecordingSink(), registry=CollectorRegistry())
    await again.start()
    try:
        assert (again.http.port, again.grpc.port, again.admin.port) == ports
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{ports[2]}/readyz") as r:
                assert r.status == 200
    finally:
        await again.shutdown()
    # The same object can start again too.
    await sidecar.start()
    await sidecar.shutdown()


async def _readyz(port: int) -> int | None:
    """/readyz's status, or None when nothing listens on the port any more."""
    try:
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                return r.status
    except aiohttp.ClientConnectionError:
        return None


async def test_shutdown_twice_and_without_start_is_safe():
    sidecar = Sidecar(test_config(), registry=CollectorRegistry())
    await sidecar.shutdown()  # before start: a no-op, and start still works afterwards
    assert not sidecar.ready()
    await sidecar.start()
    assert sidecar.ready() and await _readyz(sidecar.admin.port) == 200
    admin_port = sidecar.admin.port
    await sidecar.shutdown()
    await sidecar.shutdown()  # the second call neither raises nor reopens anything
    assert not sidecar.ready()
    assert await _readyz(admin_port) is None


async def test_shutdown_flushes_pending_traces():
    config = test_config(decision_wait_seconds=3600)  # would never complete on its own
    sink = RecordingSink()
    sidecar = Sidecar(config, sink=sink, registry=CollectorRegistry())
    await sidecar.start()
    rng = random.Random(9)
    body = request(rag_trace_spans(rng, rng.randbytes(16), 4, time.time_ns())).SerializeToString()
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{sidecar.http.port}/v1/traces", data=body,
                          headers={"Content-Type": "application/x-protobuf"}) as r:
            assert r.status == 200
    assert sink.turns == [] and sidecar.assembler.pending_traces == 1
    await sidecar.shutdown()
    assert len(sink.turns) == 1
    assert len(sink.closed) == 1 and sink.closed[0].complete


async def test_admin_endpoints(sidecar):
    sc, _ = sidecar
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{sc.admin.port}/healthz") as r:
            assert r.status == 200
        async with s.get(f"http://127.0.0.1:{sc.admin.port}/metrics") as r:
            text = await r.text()
            assert "rag_monitor_pending_traces" in text and "rag_monitor_spans_received_total" in text
        async with s.get(f"http://127.0.0.1:{sc.admin.port}/metrics",
                         headers={"Accept": "application/openmetrics-text; version=1.0.0"}) as r:
            assert r.headers["Content-Type"].startswith("application/openmetrics-text")
            assert (await r.text()).rstrip().endswith("# EOF")
