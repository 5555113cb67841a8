"""OTLP receivers for exporter tests: decode what rag-monitor pushes, keep it, and let a test wait.

``OtlpHttpSink`` (aiohttp) answers ``POST /v1/metrics`` and ``/v1/logs`` (protobuf) and records
each request with its headers; ``hold()`` makes it keep requests waiting until ``release()``, to
stall an exporter. ``OtlpGrpcSink`` (grpc.aio) serves MetricsService/Export and LogsService/Export
and records the call metadata. Both bind 127.0.0.1 on a free port. ``wait_until`` wakes on each
arrival instead of sleeping.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import grpc
from aiohttp import web
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

__all__ = ["Received", "OtlpHttpSink", "OtlpGrpcSink", "attributes", "value_of", "latest_metrics", "log_records"]

_MESSAGES = {"metrics": metrics_service_pb2.ExportMetricsServiceRequest,
             "logs": logs_service_pb2.ExportLogsServiceRequest}


@dataclass(frozen=True)
class Received:
    signal: str  # metrics | logs
    headers: Mapping[str, str]  # lower-case names (HTTP headers or gRPC metadata)
    message: Any  # ExportMetricsServiceRequest | ExportLogsServiceRequest


class _Recorder:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self._arrived = asyncio.Event()

    def _record(self, item: Received) -> None:
        self.received.append(item)
        self._arrived.set()

    def of(self, signal: str) -> list[Received]:
        return [r for r in self.received if r.signal == signal]

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Returns once ``predicate()`` holds, re-checking at each arrival; fails after ``timeout``."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not predicate():
            self._arrived.clear()
            if predicate():
                return
            remaining = end - loop.time()
            if remaining <= 0:
                raise AssertionError(f"condition not met within {timeout}s; received {len(self.received)} requests")
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                pass


class OtlpHttpSink(_Recorder):
    def __init__(self) -> None:
        super().__init__()
        self._runner: web.AppRunner | None = None
        self._open = asyncio.Event()
        self._open.set()
        self.in_flight = 0
        self.base_url = ""

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def start(self) -> str:
        app = web.Application()
        for signal in _MESSAGES:
            app.router.add_post(f"/v1/{signal}", self._handler(signal))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _handler(self, signal: str) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.Response:
            message = _MESSAGES[signal]()
            message.ParseFromString(await request.read())
            self.in_flight += 1
            self._arrived.set()
            try:
                await self._open.wait()
            finally:
                self.in_flight -= 1
            self._record(Received(signal, {k.lower(): v for k, v in request.headers.items()}, message))
            return web.Response(body=b"", content_type="application/x-protobuf")

        return handle


class OtlpGrpcSink(_Recorder):
    def __init__(self) -> None:
        super().__init__()
        self._server: grpc.aio.Server | None = None
        self.endpoint = ""

    async def start(self) -> str:
        server = grpc.aio.server()
        sink = self

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
                sink._record(Received("metrics", _metadata(context), request))
                return metrics_service_pb2.ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
                sink._record(Received("logs", _metadata(context), request))
                return logs_service_pb2.ExportLogsServiceResponse()

        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self._server = server
        self.endpoint = f"http://127.0.0.1:{port}"
        return self.endpoint

    async def close(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None


def _metadata(context: grpc.aio.ServicerContext) -> dict[str, str]:
    return {k: (v if isinstance(v, str) else v.decode()) for k, v in context.invocation_metadata() or ()}


# -- decoding helpers ------------------------------------------------------------------------

def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    """``repeated KeyValue`` → dict of plain values."""
    return {kv.key: value_of(kv.value) for kv in kvs}


def latest_metrics(received: list[Received]) -> dict[str, tuple[Resource, str, Metric]]:
    """name → (resource, scope name, metric) from the last request that carried it (cumulative
    temporality: the last one holds the totals)."""
    out: dict[str, tuple[Resource, str, Metric]] = {}
    for item in received:
        for rm in item.message.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out[metric.name] = (rm.resource, sm.scope.name, metric)
    return out


def log_records(received: list[Received]) -> Iterator[tuple[Resource, str, LogRecord]]:
    for item in received:
        for rl in item.message.resource_logs:
            for sl in rl.scope_logs:
                for record in sl.log_records:
                    yield rl.resource, sl.scope.name, record

