"""OTLP/gRPC receiver (grpc.aio): TraceService/Export and LogsService/Export, plus
MetricsService/Export so that an app exporting every signal over gRPC gets OK, not UNIMPLEMENTED:
like ``POST /v1/metrics``, metrics are not parsed or evaluated, only forwarded (the message bytes
are the OTLP/HTTP protobuf body, so the HTTP forwarder sends them on unchanged) or acknowledged and
discarded, each export counted by outcome (``rag_monitor_otlp_metrics_requests_total``).

The methods are registered with raw-bytes handlers: the bearer token is checked before a byte of
the message is parsed, the body is forwarded as received, and parsing goes through the same
decoder as OTLP/HTTP — so a malformed message is INVALID_ARGUMENT with the decoder's reason and a
counted rejection, never UNKNOWN with a logged traceback from grpc's own deserializer. gRPC
decompresses gzip itself and enforces ``max_receive_message_length`` on the decompressed message,
so the limits match the HTTP receiver's. Dropped spans go into ``partial_success``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from monitor.receivers.config import GrpcReceiverConfig
from monitor.errors import DecodeError
from monitor.telemetry import OTLP_METRICS_REQUESTS, REQUESTS_REJECTED, Telemetry
from monitor.receivers.auth import bearer_ok
from monitor.receivers.decode import PROTOBUF
from monitor.receivers.ingest import Ingest, IngestOutcome
from monitor.receivers.otlp_http import BodySink

__all__ = ["OtlpGrpcReceiver"]

log = logging.getLogger(__name__)
_TRANSPORT = "grpc"
_TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_METRICS_SERVICE = "opentelemetry.proto.collector.metrics.v1.MetricsService"


# path → (Ingest method, response type, partial_success field for the rejected count)
_SIGNALS: dict[str, tuple[Callable[..., Awaitable[IngestOutcome]], Callable[[], Any], str]] = {
    "/v1/traces": (Ingest.traces, trace_service_pb2.ExportTraceServiceResponse, "rejected_spans"),
    "/v1/logs": (Ingest.logs, logs_service_pb2.ExportLogsServiceResponse, "rejected_log_records"),
}


def _metadata(context: grpc.aio.ServicerContext, key: str) -> str | None:
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return v if isinstance(v, str) else v.decode()
    return None


class OtlpGrpcReceiver:
    """Component wrapping a ``grpc.aio`` server with the three OTLP services."""

    def __init__(self, config: GrpcReceiverConfig, ingest: Ingest, telemetry: Telemetry,
                 forward: BodySink | None = None) -> None:
        self.config = config
        self.ingest = ingest
        self.telemetry = telemetry
        self.forward = forward
        self.token = config.bearer_token.get_secret_value() if config.bearer_token else None
        self._server: grpc.aio.Server | None = None
        self.port: int | None = None

    async def _authorize(self, context: grpc.aio.ServicerContext) -> None:
        """Aborts the call (UNAUTHENTICATED, counted) unless it carries the bearer token; runs
        before a byte of the message is parsed."""
        if not bearer_ok(self.token, _metadata(context, "authorization")):
            self.telemetry.add(REQUESTS_REJECTED, transport=_TRANSPORT, reason="unauthenticated")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    async def _export(self, body: bytes, context: grpc.aio.ServicerContext, path: str) -> Any:
        await self._authorize(context)
        if self.forward is not None:
            self.forward.offer(path, body, PROTOBUF, None)
        ingest, response, rejected_field = _SIGNALS[path]
        try:
            outcome: IngestOutcome = await ingest(self.ingest, body, PROTOBUF, _TRANSPORT)
        except DecodeError as exc:
            self.telemetry.add(REQUESTS_REJECTED, transport=_TRANSPORT, reason="undecodable")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            raise AssertionError("unreachable: abort raises") from exc
        resp = response()
        if outcome.rejected:
            setattr(resp.partial_success, rejected_field, outcome.rejected)
            resp.partial_success.error_message = outcome.message
        return resp

    async def _traces(self, body: bytes, context: grpc.aio.ServicerContext) -> Any:
        return await self._export(body, context, "/v1/traces")

    async def _logs(self, body: bytes, context: grpc.aio.ServicerContext) -> Any:
        return await self._export(body, context, "/v1/logs")

    async def _metrics(self, body: bytes, context: grpc.aio.ServicerContext) -> Any:
        await self._authorize(context)
        # Not parsed: the bytes go on unchanged (gRPC has already decompressed them), or nowhere.
        if self.forward is not None:
            self.forward.offer("/v1/metrics", body, PROTOBUF, None)
            self.telemetry.add(OTLP_METRICS_REQUESTS, outcome="forwarded")
        else:
            self.telemetry.add(OTLP_METRICS_REQUESTS, outcome="discarded")
        return metrics_service_pb2.ExportMetricsServiceResponse()

    def _handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        def raw(fn: Callable[[bytes, grpc.aio.ServicerContext], Awaitable[Any]]) -> grpc.RpcMethodHandler:
            # No request_deserializer: the method receives the message bytes as sent.
            return grpc.unary_unary_rpc_method_handler(fn, response_serializer=lambda m: m.SerializeToString())

        return (grpc.method_handlers_generic_handler(_TRACE_SERVICE, {"Export": raw(self._traces)}),
                grpc.method_handlers_generic_handler(_LOGS_SERVICE, {"Export": raw(self._logs)}),
                grpc.method_handlers_generic_handler(_METRICS_SERVICE, {"Export": raw(self._metrics)}))

    async def start(self) -> None:
        if self._server is not None:
            return
        limit = self.config.max_message_bytes
        server = grpc.aio.server(maximum_concurrent_rpcs=self.config.max_concurrent_requests, options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.so_reuseport", 0),
        ])
        server.add_generic_rpc_handlers(self._handlers())
        address = f"{self.config.host}:{self.config.port}"
        port = server.add_insecure_port(address)
        if port == 0:
            raise OSError(f"cannot bind the OTLP/gRPC receiver to {address}")
        await server.start()
        self._server, self.port = server, port
        log.info("OTLP/gRPC receiver listening on %s:%s", self.config.host, port)

    async def shutdown(self, deadline: float) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        grace = max(0.0, deadline - asyncio.get_running_loop().time())
        await server.stop(grace)
