"""Fixtures of the OTLP exporter tests: real receivers on 127.0.0.1, and an environment without
the ``OTEL_*`` settings the OpenTelemetry SDK would read over the config a test passes."""

from __future__ import annotations

import os
from typing import AsyncIterator

import pytest

from tests.support.otlp_sink import OtlpGrpcSink, OtlpHttpSink

# Endpoint, headers, batch processor (BLRP), metric reader, resource and service name settings.
_OTEL_PREFIXES = ("OTEL_EXPORTER_OTLP", "OTEL_BLRP", "OTEL_METRIC", "OTEL_RESOURCE", "OTEL_SERVICE")


@pytest.fixture
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_OTEL_PREFIXES):
            monkeypatch.delenv(name)


@pytest.fixture
async def http_sink() -> AsyncIterator[OtlpHttpSink]:
    sink = OtlpHttpSink()
    await sink.start()
    yield sink
    await sink.close()


@pytest.fixture
async def grpc_sink() -> AsyncIterator[OtlpGrpcSink]:
    sink = OtlpGrpcSink()
    await sink.start()
    yield sink
    await sink.close()
