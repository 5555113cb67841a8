"""Hand-built OTLP requests for receiver tests and benchmarks (GenAI-convention RAG traces)."""

from __future__ import annotations

import json
import random
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_WORDS = ("retrieval augmented generation answers questions using documents from an index "
          "the model cites sources and the monitor judges groundedness relevance coherence").split()


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def rag_trace_spans(rng: random.Random, trace_id: bytes, n_spans: int, t0: int,
                    conversation_id: str = "conv-1") -> list[Span]:
    """One RAG trace: root, retrieval (3 docs of 1–4 KB), chat (1–4 KB prompt), then filler
    spans (HTTP/DB-like) to reach ``n_spans``."""
    root_id = rng.randbytes(8)
    docs = [{"id": f"doc-{i}", "score": round(rng.random(), 3), "content": text(rng, rng.randint(1024, 4096))}
            for i in range(3)]
    question = "What does the monitor judge? " + text(rng, 64)
    answer = text(rng, rng.randint(256, 1024))
    return rag_spans(rng, trace_id, root_id, n_spans, t0, conversation_id, docs=docs, question=question,
                     system="Answer from the documents.\n" + docs[0]["content"], answer=answer, input_tokens=900)


def rag_spans(rng: random.Random, trace_id: bytes, root_id: bytes, n_spans: int, t0: int, conversation_id: str, *,
              docs: list[dict[str, Any]], question: str, system: str, answer: str, input_tokens: int) -> list[Span]:
    """The spans of one RAG trace with the given texts (GenAI conventions, filler DB spans)."""
    messages = [{"role": "system", "parts": [{"type": "text", "content": system}]},
                {"role": "user", "parts": [{"type": "text", "content": question}]}]
    output = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
    children = [
        ("retrieve", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": question,
                      "gen_ai.retrieval.documents": json.dumps(docs)}),
        ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                              "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini",
                              "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": 120,
                              "gen_ai.input.messages": json.dumps(messages),
                              "gen_ai.output.messages": json.dumps(output)}),
    ]
    for i in range(max(0, n_spans - 3)):
        children.append((f"db.query {i}", {"db.system": "postgresql", "db.statement": "SELECT 1",
                                           "server.address": "10.0.0.1", "server.port": 5432}))
    spans = []
    t = t0
    for name, attrs in children:
        spans.append(Span(trace_id=trace_id, span_id=rng.randbytes(8), parent_span_id=root_id, name=name,
                          kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=t, end_time_unix_nano=t + 1000,
                          attributes=[_kv(k, v) for k, v in attrs.items()]))
        t += 1000
    spans.append(Span(trace_id=trace_id, span_id=root_id, name="POST /chat", kind=Span.SPAN_KIND_SERVER,
                      start_time_unix_nano=t0, end_time_unix_nano=t + 1000,
                      attributes=[_kv("http.route", "/chat"), _kv("gen_ai.conversation.id", conversation_id)]))
    return spans


def request(spans: list[Span], service: str = "rag-app") -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", service))
    ss = rs.scope_spans.add()
    ss.scope.name = "tests"
    ss.spans.extend(spans)
    return req
