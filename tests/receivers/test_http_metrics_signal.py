"""``POST /v1/metrics``: an app exporting every signal to the sidecar gets 200, not 404; its
metrics are forwarded when forwarding is on, otherwise acknowledged and counted as discarded."""

from __future__ import annotations

import asyncio

from aiohttp import web
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult

from monitor.config import MonitorConfig
from tests.support.pipeline import metric_value, running_sidecar, test_config


def _export_once(endpoint: str, headers: dict[str, str] | None = None) -> MetricExportResult:
    """The real OTLP/HTTP metric exporter, as an app configured with OTEL_EXPORTER_OTLP_ENDPOINT uses it."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("app").create_counter("app_requests").add(3, {"route": "/chat"})
    data = reader.get_metrics_data()
    exporter = OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics", headers=headers, timeout=5)
    try:
        return exporter.export(data)
    finally:
        exporter.shutdown()
        provider.shutdown()


async def test_metrics_are_acknowledged_and_counted_as_discarded(sidecar):
    sc, _ = sidecar
    result = await asyncio.to_thread(_export_once, f"http://127.0.0.1:{sc.http.port}")
    assert result is MetricExportResult.SUCCESS
    assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="discarded") == 1
    assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http", reason="unsupported_media_type") == 0


async def test_metrics_are_forwarded_unchanged_when_forwarding_is_on():
    bodies: list[tuple[str, bytes]] = []
    arrived = asyncio.Event()

    async def downstream(request: web.Request) -> web.Response:
        bodies.append((request.path, await request.read()))
        arrived.set()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/metrics", downstream)
    runner = web.AppRunner(app, auto_decompress=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    data = test_config().model_dump()
    data["forward"] = {"endpoint": f"http://127.0.0.1:{port}", "timeout_seconds": 2}
    try:
        async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, _):
            result = await asyncio.to_thread(_export_once, f"http://127.0.0.1:{sc.http.port}")
            assert result is MetricExportResult.SUCCESS
            await asyncio.wait_for(arrived.wait(), 10)
            assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="forwarded") == 1
    finally:
        await runner.cleanup()
    path, body = bodies[0]
    names = [m.name for rm in ExportMetricsServiceRequest.FromString(body).resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics]
    assert path == "/v1/metrics" and names == ["app_requests"]


async def test_metrics_need_the_receivers_token_like_every_signal():
    data = test_config().model_dump()
    data["receivers"]["http"]["bearer_token"] = "tok"
    async with running_sidecar(MonitorConfig.model_validate(data)) as (sc, _):
        refused = await asyncio.to_thread(_export_once, f"http://127.0.0.1:{sc.http.port}")
        accepted = await asyncio.to_thread(_export_once, f"http://127.0.0.1:{sc.http.port}",
                                           {"Authorization": "Bearer tok"})
        assert refused is MetricExportResult.FAILURE and accepted is MetricExportResult.SUCCESS
        assert metric_value(sc, "rag_monitor_requests_rejected_total", transport="http",
                            reason="unauthenticated") == 1
        assert metric_value(sc, "rag_monitor_otlp_metrics_requests_total", outcome="discarded") == 1
