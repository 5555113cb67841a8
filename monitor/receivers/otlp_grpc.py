"""OTLP/gRPC receiver (grpc.aio): TraceService/Export and LogsService/Export.

gRPC decompresses gzip itself and enforces ``max_receive_message_length`` on the decompressed
message, so the limits match the HTTP receiver's. Dropped spans go into ``partial_success``;
a request whose records cannot be converted gets INVALID_ARGUMENT.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from monitor.config import GrpcReceiverConfig
from monitor.errors import DecodeError
from monitor.interfaces import Telemetry
from monitor.receivers.auth import bearer_ok
from monitor.receivers.decode import decode_logs_message, decode_trace_message
from monitor.receivers.ingest import Ingest, IngestOutcome
from monitor.receivers.otlp_http import BodySink

__all__ = ["OtlpGrpcReceiver"]

log = logging.getLogger(__name__)
_TRANSPORT = "grpc"
_PROTOBUF = "application/x-protobuf"


def _metadata(context: grpc.aio.ServicerContext, key: str) -> str | None:
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return v if isinstance(v, str) else v.decode()
    return None


class _Base:
    """One OTLP Export method; subclasses name the path, converter and response fields."""

    path = ""
    rejected_field = ""

    def __init__(self, owner: "OtlpGrpcReceiver") -> None:
        self._owner = owner

    def _convert(self, request: Any) -> Any:
        raise NotImplementedError

    def _accept(self, decoded: Any) -> IngestOutcome:
        raise NotImplementedError

    def _response(self) -> Any:
        raise NotImplementedError

    async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        owner = self._owner
        if not bearer_ok(owner.token, _metadata(context, "authorization")):
            owner.telemetry.requests_rejected(_TRANSPORT, "unauthenticated")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        if owner.forward is not None:
            owner.forward.offer(self.path, request.SerializeToString(), _PROTOBUF, None)
        try:
            decoded = await owner.ingest.convert(request.ByteSize(), self._convert, request)
        except DecodeError as exc:
            owner.telemetry.requests_rejected(_TRANSPORT, "undecodable")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        outcome = self._accept(decoded)
        resp = self._response()
        if outcome.rejected:
            setattr(resp.partial_success, self.rejected_field, outcome.rejected)
            resp.partial_success.error_message = outcome.message
        return resp


class _TraceService(_Base, trace_service_pb2_grpc.TraceServiceServicer):
    path = "/v1/traces"
    rejected_field = "rejected_spans"

    def _convert(self, request: Any) -> Any:
        return decode_trace_message(request)

    def _accept(self, decoded: Any) -> IngestOutcome:
        return self._owner.ingest.accept_spans(decoded, _TRANSPORT)

    def _response(self) -> Any:
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsService(_Base, logs_service_pb2_grpc.LogsServiceServicer):
    path = "/v1/logs"
    rejected_field = "rejected_log_records"

    def _convert(self, request: Any) -> Any:
        return decode_logs_message(request)

    def _accept(self, decoded: Any) -> IngestOutcome:
        return self._owner.ingest.accept_logs(decoded, _TRANSPORT)

    def _response(self) -> Any:
        return logs_service_pb2.ExportLogsServiceResponse()


class OtlpGrpcReceiver:
    """Component wrapping a ``grpc.aio`` server with the two OTLP services."""

    def __init__(self, config: GrpcReceiverConfig, ingest: Ingest, telemetry: Telemetry,
                 forward: BodySink | None = None) -> None:
        self.config = config
        self.ingest = ingest
        self.telemetry = telemetry
        self.forward = forward
        self.token = config.bearer_token.get_secret_value() if config.bearer_token else None
        self._server: grpc.aio.Server | None = None
        self.port: int | None = None

    async def start(self) -> None:
        if self._server is not None:
            return
        limit = self.config.max_message_bytes
        server = grpc.aio.server(maximum_concurrent_rpcs=self.config.max_concurrent_requests, options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.so_reuseport", 0),
        ])
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(self), server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(self), server)
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
