"""OTLP/HTTP receiver (aiohttp): ``POST /v1/traces`` and ``POST /v1/logs``, plus ``POST /v1/metrics``
so that an app exporting every signal to ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets no 404: metrics
are not evaluated, only forwarded (when forwarding is on) or acknowledged and discarded, each
request counted by outcome (``rag_monitor_otlp_metrics_requests_total``).

Status codes follow the OTLP/HTTP specification: 200 with an ``Export*ServiceResponse`` (and
``partial_success`` for what we dropped on purpose), 400 for an undecodable body, 413 for a body
over the compressed or decompressed limit, 415 for an unsupported Content-Type or
Content-Encoding, 401 for a missing bearer token, 503 + Retry-After past
``max_concurrent_requests`` (bodies held in memory are bounded; exporters retry 503). Error bodies are ``google.rpc.Status`` in the
request's own encoding. Bodies still arriving are bounded apart (``max_concurrent_uploads``,
``body_timeout_seconds`` → 408), so stalled uploads never hold the slots of ready requests, and a
client that hangs up mid-body is counted, not logged. The receiver never answers 429/503 for our own overload: the app's
exporter would retry and back up into the app; we drop and report instead.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from aiohttp import ClientError, web
from aiohttp.http_exceptions import HttpProcessingError
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from monitor.receivers.config import HttpReceiverConfig
from monitor.net.http_site import start_site
from monitor.errors import DecodeError, PayloadTooLarge, UnsupportedMediaType
from monitor.telemetry import OTLP_METRICS_REQUESTS, REQUESTS_REJECTED, Telemetry
from monitor.receivers.auth import bearer_ok
from monitor.receivers.decode import JSON, PROTOBUF, media_type_of
from monitor.receivers.ingest import Ingest, IngestOutcome

__all__ = ["BodySink", "OtlpHttpReceiver"]

log = logging.getLogger(__name__)
_TRANSPORT = "http"
_GRPC_INVALID_ARGUMENT = 3
_GRPC_RESOURCE_EXHAUSTED = 8
_GRPC_UNAUTHENTICATED = 16
_GRPC_UNAVAILABLE = 14


class BodySink(Protocol):
    """Takes a received body unchanged (the forwarder). Never blocks."""

    def offer(self, path: str, body: bytes, content_type: str, content_encoding: str | None) -> None: ...


def _encode(message: Any, media_type: str) -> bytes:
    if media_type == JSON:
        return json_format.MessageToJson(message, indent=None).encode()
    return message.SerializeToString()


def _error(status: int, grpc_code: int, message: str, media_type: str) -> web.Response:
    body = _encode(status_pb2.Status(code=grpc_code, message=message), media_type)
    return web.Response(status=status, body=body, content_type=media_type)


class OtlpHttpReceiver:
    """Component: ``start`` binds the port, ``shutdown`` stops listening and finishes in-flight."""

    def __init__(self, config: HttpReceiverConfig, ingest: Ingest, telemetry: Telemetry,
                 forward: BodySink | None = None) -> None:
        self._config = config
        self._ingest = ingest
        self._telemetry = telemetry
        self._forward = forward
        self._token = config.bearer_token.get_secret_value() if config.bearer_token else None
        self._runner: web.AppRunner | None = None
        self._inflight = 0
        self._uploading = 0
        self.port: int | None = None

    @property
    def uploads_in_flight(self) -> int:
        """Request bodies being received now (bounded by ``max_concurrent_uploads``)."""
        return self._uploading

    def _app(self) -> web.Application:
        # aiohttp's own limit guards the read; the +1 lets our handler answer with a Status body.
        app = web.Application(client_max_size=self._config.max_request_bytes + 1)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/logs", self._logs)
        app.router.add_post("/v1/metrics", self._metrics)
        return app

    async def start(self) -> None:
        if self._runner is not None:
            return
        # auto_decompress off: we inflate ourselves, under the decompressed-size limit, so a
        # gzip bomb is refused after limit+1 bytes instead of being inflated by the parser.
        # lingering_time: after a refused or timed-out body, read on for at most 1 s (so an honest
        # client can still read the status) before closing, not aiohttp's default 10 s.
        self._runner, self.port = await start_site(self._app(), self._config.host, self._config.port,
                                                   shutdown_timeout=5.0, auto_decompress=False,
                                                   lingering_time=1.0)
        log.info("OTLP/HTTP receiver listening on %s:%s", self._config.host, self.port)

    async def shutdown(self, deadline: float) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        return await self._handle(request, "/v1/traces")

    async def _logs(self, request: web.Request) -> web.Response:
        return await self._handle(request, "/v1/logs")

    async def _metrics(self, request: web.Request) -> web.Response:
        return await self._handle(request, "/v1/metrics")

    async def _handle(self, request: web.Request, path: str) -> web.Response:
        try:
            media_type = media_type_of(request.headers.get("Content-Type"))
        except UnsupportedMediaType as exc:
            return self._reject(415, _GRPC_INVALID_ARGUMENT, str(exc), PROTOBUF, "unsupported_media_type")
        # Authentication before anything is read or parsed.
        if not bearer_ok(self._token, request.headers.get("Authorization")):
            return self._reject(401, _GRPC_UNAUTHENTICATED, "missing or wrong bearer token", media_type, "unauthenticated")
        limit = self._config.max_request_bytes
        if request.content_length is not None and request.content_length > limit:
            return self._reject(413, _GRPC_RESOURCE_EXHAUSTED,
                                f"body of {request.content_length} bytes exceeds the limit of {limit}",
                                media_type, "too_large")
        if self._uploading >= self._config.max_concurrent_uploads:
            return self._overloaded(media_type, "too many uploads in progress, retry later")
        self._uploading += 1
        try:
            raw = await asyncio.wait_for(request.read(), self._config.body_timeout_seconds)
        except web.HTTPRequestEntityTooLarge:
            return self._reject(413, _GRPC_RESOURCE_EXHAUSTED, f"body exceeds the limit of {limit} bytes",
                                media_type, "too_large")
        except TimeoutError:
            resp = self._reject(408, _GRPC_UNAVAILABLE, f"body not received within "
                                f"{self._config.body_timeout_seconds:g} s", media_type, "body_timeout")
            resp.force_close()
            return resp
        except (ConnectionError, ClientError, HttpProcessingError, asyncio.IncompleteReadError):
            # The client hung up mid-body: nobody to answer, nothing to log but a count.
            self._telemetry.add(REQUESTS_REJECTED, transport=_TRANSPORT, reason="client_disconnected")
            resp = web.Response(status=400)
            resp.force_close()
            return resp
        finally:
            self._uploading -= 1
        if self._inflight >= self._config.max_concurrent_requests:
            return self._overloaded(media_type, "receiver overloaded, retry later")
        self._inflight += 1
        try:
            return await self._process(request, path, raw, media_type)
        finally:
            self._inflight -= 1

    def _overloaded(self, media_type: str, message: str) -> web.Response:
        resp = self._reject(503, _GRPC_UNAVAILABLE, message, media_type, "overloaded")
        resp.headers["Retry-After"] = "1"
        return resp

    def _pass_metrics(self, request: web.Request, raw: bytes, media_type: str) -> web.Response:
        # Not parsed: the body goes on unchanged, or nowhere; either way the exporter is done.
        if self._forward is not None:
            self._forward.offer("/v1/metrics", raw, request.headers.get("Content-Type", media_type),
                                request.headers.get("Content-Encoding"))
            self._telemetry.add(OTLP_METRICS_REQUESTS, outcome="forwarded")
        else:
            self._telemetry.add(OTLP_METRICS_REQUESTS, outcome="discarded")
        return web.Response(body=_encode(ExportMetricsServiceResponse(), media_type), content_type=media_type)

    async def _process(self, request: web.Request, path: str, raw: bytes, media_type: str) -> web.Response:
        if path == "/v1/metrics":
            return self._pass_metrics(request, raw, media_type)
        encoding = request.headers.get("Content-Encoding")
        try:
            body = await self._ingest.decompress(raw, encoding, self._config.max_decompressed_bytes)
            if self._forward is not None:
                self._forward.offer(path, raw, request.headers.get("Content-Type", media_type), encoding)
            if path == "/v1/traces":
                outcome = await self._ingest.traces(body, media_type, _TRANSPORT)
            else:
                outcome = await self._ingest.logs(body, media_type, _TRANSPORT)
        except UnsupportedMediaType as exc:
            return self._reject(415, _GRPC_INVALID_ARGUMENT, str(exc), media_type, "unsupported_encoding")
        except PayloadTooLarge as exc:
            return self._reject(413, _GRPC_RESOURCE_EXHAUSTED, str(exc), media_type, "too_large")
        except DecodeError as exc:
            return self._reject(400, _GRPC_INVALID_ARGUMENT, str(exc), media_type, "undecodable")
        return web.Response(body=_encode(self._response(path, outcome), media_type), content_type=media_type)

    def _reject(self, status: int, grpc_code: int, message: str, media_type: str, reason: str) -> web.Response:
        self._telemetry.add(REQUESTS_REJECTED, transport=_TRANSPORT, reason=reason)
        return _error(status, grpc_code, message, media_type)

    @staticmethod
    def _response(path: str, outcome: IngestOutcome) -> Any:
        if path == "/v1/traces":
            resp = ExportTraceServiceResponse()
            if outcome.rejected:
                resp.partial_success.rejected_spans = outcome.rejected
                resp.partial_success.error_message = outcome.message
            return resp
        logs_resp = ExportLogsServiceResponse()
        if outcome.rejected:
            logs_resp.partial_success.rejected_log_records = outcome.rejected
            logs_resp.partial_success.error_message = outcome.message
        return logs_resp
