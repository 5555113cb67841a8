"""MetricsService/Export over gRPC: an app exporting every signal to the sidecar's gRPC port gets
OK, not UNIMPLEMENTED; its metrics are forwarded (as the OTLP/HTTP protobuf body) when forwarding
is on, otherwise acknowledged and counted as discarded — what ``POST /v1/metrics`` does. Driven by
the real OTLP/gRPC metric exporter of opentelemetry-exporter-otlp."""

from __future__ import annotations

import asyncio

from aiohttp import web
from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from tests.support.pipeline import RecordingSink, metric_value, running_sidecar, test_config


def _export_once(port: int, *, headers: dict[str, str] | None = None,
                 compression: Compression = Compression.NoCompression) -> MetricExportResult:
    """One export with the real gRPC metric exporter, as an app with OTEL_EXPORTER_OTLP_PROTOCOL=grpc does."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("app")
    meter.create_counter("app_requests").add(3, {"route": "/chat"})
    meter.create_histogram("app_latency_seconds").record(0.25)
    data = reader.get_metrics_data()
    assert data is not None
    # timeout bounds the exporter's own retries (it retries UNAVAILABLE, not UNAUTHENTICATED).
    exporter = OTLPMetricExporter(endpoint=f"127.0.0.1:{port}", insecure=True, headers=headers, timeout=5,
                                  compression=compression)
    try:
        return exporter.export(data)
    finally:
        exporter.shutdown()
        provider.shutdown()


def _port(sc: Sidecar) -> int:
    assert sc.grpc is not None and sc.grpc.port is not None, "the gRPC receiver is on in the test config"
    return sc.grpc.port


async def test_grpc_metrics_are_acknowledged_and_counted_as_discarded(sidecar: tuple[Sidecar, RecordingSink]) -> None:
    sc, _ = sidecar
    result = await asyncio.to_thread(_export_once, _port(sc))
    assert result is MetricExportResult.SUCCESS
    assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="discarded") == 1
    assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="forwarded") == 0
    # Metrics are not spans: nothing is counted as received or rejected.
    assert metric_value(sc, "rag_monitor_spans_received_total", transport="grpc") == 0
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="grpc", reason="undecodable") == 0


async def test_grpc_metrics_are_forwarded_as_the_otlp_http_body_when_forwarding_is_on() -> None:
    bodies: list[tuple[str, bytes, str | None, str | None]] = []
    arrived = asyncio.Event()

    async def downstream(request: web.Request) -> web.Response:
        bodies.append((request.path, await request.read(), request.headers.get("Content-Type"),
                       request.headers.get("Content-Encoding")))
        arrived.set()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/metrics", downstream)
    runner = web.AppRunner(app, auto_decompress=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    data = test_config().model_dump()
    data["forward"] = {"endpoint": f"http://127.0.0.1:{runner.addresses[0][1]}", "timeout_seconds": 2}
    try:
        async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, _):
            # gzip on the wire: gRPC decompresses, the downstream gets the plain protobuf message.
            result = await asyncio.to_thread(_export_once, _port(sc), compression=Compression.Gzip)
            assert result is MetricExportResult.SUCCESS
            await asyncio.wait_for(arrived.wait(), 10)
            assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="forwarded") == 1
            assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="discarded") == 0
    finally:
        await runner.cleanup()
    [(path, body, content_type, encoding)] = bodies
    assert (path, content_type, encoding) == ("/v1/metrics", "application/x-protobuf", None)
    request = ExportMetricsServiceRequest.FromString(body)
    names = sorted(m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics)
    assert names == ["app_latency_seconds", "app_requests"]
    counter = next(m for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                   if m.name == "app_requests")
    assert counter.sum.data_points[0].as_int == 3


async def test_grpc_metrics_need_the_receivers_token_like_every_signal() -> None:
    data = test_config().model_dump()
    data["receivers"]["grpc"]["bearer_token"] = "tok"
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, _):
        refused = await asyncio.to_thread(_export_once, _port(sc))
        accepted = await asyncio.to_thread(_export_once, _port(sc), headers={"authorization": "Bearer tok"})
        assert refused is MetricExportResult.FAILURE and accepted is MetricExportResult.SUCCESS
        assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="grpc", reason="unauthenticated") == 1
        assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="discarded") == 1
