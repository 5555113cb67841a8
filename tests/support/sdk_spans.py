"""Spans produced by the real OpenTelemetry SDK and shipped by the real OTLP exporters."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind


def provider_with(exporter: SpanExporter, service: str = "sdk-app") -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def emit_genai_turn(provider: TracerProvider, conversation_id: str, question: str, answer: str,
                    root_attributes: dict[str, Any] | None = None) -> str:
    """One GenAI-convention turn written with the SDK API; returns the trace id (hex)."""
    tracer = provider.get_tracer("tests.sdk")
    with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER,
                                      attributes={"gen_ai.conversation.id": conversation_id,
                                                  **(root_attributes or {})}) as root:
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as chat:
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
            }
            chat.set_attributes(attrs)
        return format(root.get_span_context().trace_id, "032x")
