"""OTLP request bodies for the ingest benchmark: RAG traces of a chosen turn size whose trace ids
and conversation ids are rewritten on every send, and the parse+walk anchor over the same bodies.

A *turn size* is the text one trace carries for its turn: the retrieved documents (retrieval
span), the chat input messages (system prompt with the first document, the question) and the
chat output. Each trace is 5 spans (root with ``gen_ai.conversation.id``, retrieval, chat, two
DB spans) and a body holds 20 traces (100 spans), like ``ingest.build_bodies``.

Every body is kept as a :class:`BodyTemplate`: the serialised bytes cut at each conversation id,
so a sender fills in fresh ids of the same width with one ``bytes.join`` and fresh trace ids with
one ``bytes.replace`` of the shared 8-byte prefix (a re-sent trace id would be a late span).
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.otlp_payloads import rag_spans, request, text

__all__ = ["BodyTemplate", "SPANS_PER_TRACE", "TRACES_PER_BODY", "build_templates", "conversation_id",
           "parse_walk_rate", "render"]

SPANS_PER_TRACE = 5
TRACES_PER_BODY = 20
ID_WIDTH = 13  # "conv-" + 8 digits: fixed, so a filled-in body keeps its protobuf lengths
_SLOT = re.compile(rb"#slot(\d\d)######")
_POOL_BYTES = 1 << 20


def conversation_id(k: int) -> bytes:
    return b"conv-%08d" % k


def _slot(t: int) -> str:
    s = f"#slot{t:02d}######"
    assert len(s) == ID_WIDTH
    return s


@dataclass(frozen=True, slots=True)
class BodyTemplate:
    prefix: bytes  # shared by the body's trace ids
    parts: tuple[bytes, ...]  # body bytes between the conversation ids
    slots: tuple[int, ...]  # which trace each gap belongs to, in byte order
    spans: int
    turn_text_bytes: int  # mean over the body's traces

    @property
    def size(self) -> int:
        return sum(map(len, self.parts)) + ID_WIDTH * len(self.slots)

    def body(self) -> bytes:
        """The body with its template ids (for the anchor: same bytes, same sizes)."""
        return self.fill([conversation_id(t) for t in range(TRACES_PER_BODY)])

    def fill(self, ids: list[bytes]) -> bytes:
        out = [self.parts[0]]
        for slot, part in zip(self.slots, self.parts[1:]):
            out.append(ids[slot])
            out.append(part)
        return b"".join(out)


def render(template: BodyTemplate, ids: list[bytes], new_prefix: bytes) -> bytes:
    """The body to send: conversation ``ids[t]`` for trace ``t``, trace ids under ``new_prefix``."""
    return template.fill(ids).replace(template.prefix, new_prefix)


def _slice(rng: random.Random, pool: str, n: int) -> str:
    start = rng.randrange(0, len(pool) - n)
    return pool[start:start + n]


def _trace(rng: random.Random, pool: str, trace_id: bytes, turn_bytes: int, slot: str, t0: int) -> tuple[list[Span], int]:
    """One RAG trace carrying about ``turn_bytes`` of text; returns the spans and the text size."""
    # Three documents, the first also in the system prompt (as RAG prompts quote them), the rest
    # is the answer: 4 × 20 % + ~20 % ≈ turn_bytes.
    doc_bytes = max(64, turn_bytes // 5)
    answer_bytes = max(32, turn_bytes - 4 * doc_bytes - 120)
    docs = [{"id": f"doc-{i}", "score": round(rng.random(), 3), "content": _slice(rng, pool, doc_bytes)}
            for i in range(3)]
    question = "What does the monitor judge? " + _slice(rng, pool, 64)
    system = "Answer from the documents.\n" + docs[0]["content"]
    answer = _slice(rng, pool, answer_bytes)
    text_bytes = sum(len(d["content"]) for d in docs) + len(system) + len(question) + len(answer)
    spans = rag_spans(rng, trace_id, rng.randbytes(8), SPANS_PER_TRACE, t0, slot, docs=docs, question=question,
                      system=system, answer=answer, input_tokens=turn_bytes // 4)
    return spans, text_bytes


def build_templates(turn_kib: float, n: int, seed: int = 1) -> list[BodyTemplate]:
    rng = random.Random(seed)
    pool = text(rng, _POOL_BYTES)  # word salad from the test payloads; slices of it are the texts
    turn_bytes = int(turn_kib * 1024)
    templates = []
    for _ in range(n):
        prefix = rng.randbytes(8)
        spans: list[Span] = []
        text_bytes = 0
        for t in range(TRACES_PER_BODY):
            trace_spans, size = _trace(rng, pool, prefix + t.to_bytes(8, "big"), turn_bytes, _slot(t), time.time_ns())
            spans += trace_spans
            text_bytes += size
        pieces = _SLOT.split(request(spans).SerializeToString())
        templates.append(BodyTemplate(prefix, tuple(pieces[0::2]), tuple(int(s) for s in pieces[1::2]),
                                      len(spans), text_bytes // TRACES_PER_BODY))
    return templates


def parse_walk(body: bytes) -> int:
    """The anchor's unit of work: parse the request and read every attribute of every span (key,
    which value field is set, the value), inline so the anchor pays no call per span."""
    spans = 0
    for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
        for kv in rs.resource.attributes:
            kv.key  # noqa: B018 - reading is the work measured
            which = kv.value.WhichOneof("value")
            if which is not None:
                getattr(kv.value, which)
        for ss in rs.scope_spans:
            for span in ss.spans:
                spans += 1
                for kv in span.attributes:
                    kv.key  # noqa: B018
                    value = kv.value
                    which = value.WhichOneof("value")
                    if which is not None:
                        getattr(value, which)
    return spans


def parse_walk_rate(bodies: list[bytes], cpu_seconds: float = 2.0) -> float:
    """Spans per CPU-second of this process for :func:`parse_walk` over ``bodies``, round robin."""
    spans, start = 0, time.process_time()
    while time.process_time() - start < cpu_seconds:
        for body in bodies:
            spans += parse_walk(body)
    return spans / (time.process_time() - start)
