"""A small, realistic RAG chat app instrumented with a REAL GenAI instrumentation library.

Run as a subprocess, one process per instrumentation (each one patches ``openai`` globally)::

    python -m tests.support.rag_app --instrumentation genai --exporter http-protobuf \
        --endpoint http://127.0.0.1:4318 --openai-base-url http://127.0.0.1:PORT/v1 \
        --scenario conversation --content span --conversation-id conv-1

Per turn the app does what a RAG service does: an HTTP-server root span (``POST /chat``), an
embeddings call through the ``openai`` client, a retrieval step (written the way the chosen
convention writes retrieval), then a chat completion whose system prompt embeds the retrieved
documents, followed by the earlier turns of the conversation and the question.

Instrumentations (``--instrumentation``):

- ``genai``: ``opentelemetry-instrumentation-openai-v2`` + ``opentelemetry-util-genai``. The
  conversation id is ``gen_ai.conversation.id`` on the app's root span; retrieval is a
  ``retrieval`` span from util-genai's ``TelemetryHandler.retrieval()``.
- ``openinference``: ``openinference-instrumentation-openai``; the app uses OpenInference's
  ``TracerProvider``/``OITracer`` (CHAIN root, RETRIEVER span) and ``using_session``.
- ``openllmetry``: ``opentelemetry-instrumentation-openai`` via ``Traceloop.init``; ``@workflow``,
  ``@task`` (retrieval returns document dicts), ``@agent``, association property ``session_id``.

Content modes (``--content``):

- genai: ``span`` = SPAN_ONLY, ``event`` = EVENT_ONLY, ``both`` = SPAN_AND_EVENT
  (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
- openllmetry: ``span`` = ``use_attributes=True`` (default), ``event`` = ``use_attributes=False``.
- openinference: ``span`` = OpenInference attributes only, ``both`` = also the GenAI semconv
  attributes (``OPENINFERENCE_ENABLE_GENAI_SEMCONV=true``).

Scenarios: ``conversation`` (3 turns, 3 traces), ``stream`` (1 streamed turn), ``agent`` (1 trace,
two chat calls: a query rewrite, then the final answer).

Stdout carries only the ground truth: one JSON object per turn (trace id, question, answer,
history, documents, system prompt, models, usage, response id). Anything the libraries print
goes to stderr. If ``--openai-base-url`` is omitted the app starts its own fake OpenAI server
(``tests.support.fake_openai``) with :data:`ANSWERS`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

SERVICE_NAME = "rag-demo-app"
CHAT_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"
DATA_SOURCE_ID = "acme-help-center"
TOP_K = 3

INSTRUMENTATIONS = ("genai", "openinference", "openllmetry")
EXPORTERS = ("http-protobuf", "http-json", "grpc")
SCENARIOS = ("conversation", "stream", "agent")
CONTENT_MODES = ("span", "event", "both")
SUPPORTED_CONTENT = {
    "genai": ("span", "event", "both"),
    "openinference": ("span", "both"),
    "openllmetry": ("span", "event"),
}

# ------------------------------------------------------------------------------------------------
# Knowledge base and script (deterministic)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KBDoc:
    id: str
    title: str
    keywords: tuple[str, ...]
    content: str


def _para(*sentences: str) -> str:
    return " ".join(sentences)


KNOWLEDGE_BASE: tuple[KBDoc, ...] = (
    KBDoc(
        id="kb-refunds-001",
        title="Refund policy for Acme Cloud Backup subscriptions",
        keywords=("refund", "refunds", "cancel", "cancelled", "cancelling", "annual", "money", "plan", "billing"),
        content=_para(
            "Acme Cloud Backup offers a full refund for annual plans cancelled within 30 days of the",
            "initial purchase or of the most recent renewal. Monthly plans are not refunded, but",
            "cancelling stops the next charge immediately and the service stays active until the end of",
            "the paid period. Refunds are issued to the original payment method. Once a refund is",
            "approved, card refunds take 5 to 7 business days to appear on the statement and bank",
            "transfers can take up to 10 business days, depending on the bank. Refund requests are",
            "made from the Billing page of the admin console by selecting the subscription and",
            "choosing Request refund; the account owner receives a confirmation email with a case",
            "number. Partial refunds are not offered for unused seats on team plans, but seats can be",
            "removed at any time and the change applies from the next billing cycle. Promotional",
            "credits and gift cards are not refundable. If a payment failed and the plan was",
            "downgraded automatically, no refund is needed because no charge was captured. For",
            "invoices paid by purchase order, the finance team processes refunds manually within 15",
            "business days. Customers in the European Union keep their statutory 14-day withdrawal",
            "right in addition to this policy.",
        ),
    ),
    KBDoc(
        id="kb-retention-002",
        title="What happens to your backups after cancellation",
        keywords=("cancel", "cancelled", "cancelling", "cancellation", "backups", "back", "retention", "deleted", "keep", "restore", "files", "after", "data"),
        content=_para(
            "When a subscription is cancelled, Acme Cloud Backup keeps every backup in read-only mode",
            "for 30 days. During this grace period the account owner can sign in, browse snapshots and",
            "restore or download any file, but no new backups are taken and retention rules are",
            "frozen. Reactivating the subscription within the 30 days restores full service with all",
            "version history intact. After the grace period the data is scheduled for deletion: it is",
            "removed from primary storage on day 31 and purged from the replicated archive tier by day",
            "45, after which it cannot be recovered by support. Accounts closed for non-payment follow",
            "the same schedule, starting from the date the plan was suspended. Administrators can",
            "export a complete archive as encrypted ZIP files from the Snapshots page before the",
            "deadline; large exports are split into 50 GB parts and the download links stay valid",
            "for seven days. Legal hold placed on a workspace before cancellation suspends deletion",
            "until the hold is released. A deletion certificate is emailed to the account owner when",
            "the purge completes.",
        ),
    ),
    KBDoc(
        id="kb-encryption-003",
        title="Encryption at rest and in transit",
        keywords=("encrypted", "encryption", "rest", "transit", "keys", "key", "security", "aes", "tls", "data"),
        content=_para(
            "All backup data is encrypted before it leaves the device with AES-256 in GCM mode, and",
            "it stays encrypted at rest in every storage tier. Each workspace has its own data",
            "encryption key, which is wrapped by a key-encryption key held in a hardware security",
            "module; keys are rotated every 90 days and old keys are kept only to decrypt existing",
            "snapshots. Data in transit is protected with TLS 1.3, and the desktop agent pins the",
            "service certificate. Business plans can enable customer-managed keys: the customer keeps",
            "the key-encryption key in their own cloud key management service and can revoke access",
            "at any time, which makes the stored backups unreadable until access is restored. With a",
            "private passphrase enabled, the passphrase never leaves the device and Acme support",
            "cannot reset it, so losing it means losing access to the backups. Encryption cannot be",
            "turned off. Independent auditors review the key management controls every year as part",
            "of the SOC 2 Type II report, which customers can request from the Trust Center.",
        ),
    ),
    KBDoc(
        id="kb-restore-004",
        title="Restoring files and folders",
        keywords=("restore", "restoring", "file", "files", "folder", "week", "version", "versions", "snapshot", "recover", "single", "back"),
        content=_para(
            "To restore a single file, open the Acme Cloud Backup app, choose Restore, and pick the",
            "device the file came from. Use the timeline at the top of the window to select the",
            "snapshot date, for example last Tuesday, then browse to the folder, tick the file and",
            "choose Restore to original location or Restore to a new folder. Snapshots are taken every",
            "hour and kept for 30 days on the Personal plan and for one year on the Business plan,",
            "so any version from last week is available. Deleted files are shown when the Show deleted",
            "items toggle is on. Large restores run in the background and can be paused; the app",
            "notifies you when they finish. From a browser, the web console offers the same timeline",
            "and downloads up to 5 GB at a time as a ZIP file. Restoring to a different computer",
            "requires signing in with the same account and, if a private passphrase is set, entering",
            "the passphrase on the new device. Restores never overwrite newer files without asking",
            "first. Administrators on the Business plan can restore files on behalf of a user from",
            "the admin console; every such restore is recorded in the audit log.",
        ),
    ),
    KBDoc(
        id="kb-pricing-005",
        title="Plans and pricing",
        keywords=("price", "pricing", "plan", "plans", "annual", "monthly", "cost", "seats", "business", "personal"),
        content=_para(
            "Acme Cloud Backup has two plans. Personal costs 6 dollars per month or 60 dollars per",
            "year for one user with unlimited devices and 2 TB of storage. Business costs 12 dollars",
            "per seat per month, or 120 dollars per seat per year, with pooled storage of 5 TB per",
            "seat, admin console, single sign-on and one-year version history. Annual plans are billed",
            "upfront and renew automatically on the anniversary date; the renewal reminder is emailed",
            "30 days in advance. Seats can be added at any time and are prorated for the rest of the",
            "term. Nonprofit and education customers get a 30 percent discount after verification.",
            "Prices exclude taxes, which are calculated from the billing address at checkout. Storage",
            "above the plan allowance is billed at 5 dollars per additional terabyte per month.",
            "Switching from monthly to annual billing takes effect at the end of the current month,",
            "and the unused part of the monthly charge is credited. Downgrading from Business to",
            "Personal is possible only for workspaces with a single seat. Invoices are available",
            "from the Billing page and can be paid by card, bank transfer or, for Business plans",
            "with at least 20 seats, by purchase order.",
        ),
    ),
)

CONVERSATION_QUESTIONS: tuple[str, ...] = (
    "How long does a refund take for the annual plan?",
    "And can I still get my backups back after cancelling?",
    "Is my data encrypted at rest?",
)
STREAM_QUESTION = "How do I restore a single file from last week?"
AGENT_QUESTION = "I cancelled yesterday. Can I still restore my files, and will I get a refund?"

REWRITE_PREFIX = "Rewrite this as a standalone search query:"

# Scripted answers for the fake OpenAI server: first matching (case-insensitive) substring of the
# last user message wins, so the rewrite key must stay first.
ANSWERS: dict[str, str] = {
    REWRITE_PREFIX: "cancelled subscription restore files grace period refund annual plan",
    "refund take": (
        "Annual plans cancelled within 30 days get a full refund to the original payment method. "
        "Once approved, card refunds take 5 to 7 business days and bank transfers up to 10 "
        "business days [kb-refunds-001]."
    ),
    "backups back": (
        "Yes. After cancelling, your backups stay available in read-only mode for 30 days, so you "
        "can still restore or download files; after that they are deleted [kb-retention-002]."
    ),
    "encrypted at rest": (
        "Yes. Your backups are encrypted at rest with AES-256 in GCM mode, using a per-workspace "
        "key wrapped by a key held in a hardware security module [kb-encryption-003]."
    ),
    "single file": (
        "Open the app, choose Restore, pick the device, select last week's snapshot on the "
        "timeline, tick the file and choose Restore to original location [kb-restore-004]."
    ),
    "cancelled yesterday": (
        "Yes. Your backups stay readable for 30 days after cancellation, so you can restore your "
        "files now [kb-retention-002]. Because you cancelled within 30 days of the annual renewal, "
        "you also qualify for a full refund, which takes 5 to 7 business days once approved "
        "[kb-refunds-001]."
    ),
}

SYSTEM_TEMPLATE = (
    "You are the Acme Cloud Backup support assistant. Answer the user's question using only the "
    "documents below. Cite document ids in square brackets. If the documents do not contain the "
    "answer, say you don't know.\n\n{documents}"
)
REWRITE_SYSTEM = (
    "You turn the user's latest message into a standalone search query for the help-center "
    "search index. Reply with the query only."
)


def retrieve(query: str, top_k: int = TOP_K) -> list[dict[str, Any]]:
    """Deterministic keyword retriever: returns [{id, title, content, score}] best first."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    ranked = []
    for order, doc in enumerate(KNOWLEDGE_BASE):
        hits = len(words & set(doc.keywords))
        if hits:
            ranked.append((hits, -order, doc))
    ranked.sort(reverse=True)
    out = []
    for rank, (hits, _, doc) in enumerate(ranked[:top_k]):
        score = round(min(0.97, 0.55 + 0.1 * hits) - 0.03 * rank, 4)
        out.append({"id": doc.id, "title": doc.title, "content": doc.content, "score": score})
    return out


def format_documents(documents: Sequence[dict[str, Any]]) -> str:
    return "\n\n".join(f"[{d['id']}] {d['title']}\n{d['content']}" for d in documents)


# ------------------------------------------------------------------------------------------------
# Telemetry setup
# ------------------------------------------------------------------------------------------------


def _make_exporters(kind: str, endpoint: str, compression: str) -> tuple[Any, Any]:
    if kind == "http-protobuf":
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        comp = Compression.Gzip if compression == "gzip" else Compression.NoCompression
        base = endpoint.rstrip("/")
        return (
            OTLPSpanExporter(endpoint=f"{base}/v1/traces", compression=comp),
            OTLPLogExporter(endpoint=f"{base}/v1/logs", compression=comp),
        )
    if kind == "http-json":
        from opentelemetry.exporter.otlp.common.http import Compression as JsonCompression
        from opentelemetry.exporter.otlp.json.http._log_exporter import (
            OTLPLogExporter as JsonLogExporter,
        )
        from opentelemetry.exporter.otlp.json.http.trace_exporter import (
            OTLPSpanExporter as JsonSpanExporter,
        )

        comp = JsonCompression.from_str(compression)
        base = endpoint.rstrip("/")
        return (
            JsonSpanExporter(endpoint=f"{base}/v1/traces", compression=comp),
            JsonLogExporter(endpoint=f"{base}/v1/logs", compression=comp),
        )
    if kind == "grpc":
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        target = endpoint.split("://", 1)[-1].rstrip("/")
        comp = GrpcCompression.Gzip if compression == "gzip" else GrpcCompression.NoCompression
        return (
            GrpcSpanExporter(endpoint=target, insecure=True, compression=comp),
            GrpcLogExporter(endpoint=target, insecure=True, compression=comp),
        )
    raise ValueError(f"unknown exporter {kind!r}")


class Telemetry:
    """Tracer + logger providers with the real exporters; instrumentation applied."""

    def __init__(self, args: argparse.Namespace) -> None:
        from opentelemetry import _logs, trace
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.instrumentation = args.instrumentation
        # Content switches are read from the environment when providers/instrumentors are built.
        if args.instrumentation == "genai":
            mode = {"span": "SPAN_ONLY", "event": "EVENT_ONLY", "both": "SPAN_AND_EVENT"}[args.content]
            os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
            os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = mode
        elif args.instrumentation == "openinference" and args.content == "both":
            os.environ["OPENINFERENCE_ENABLE_GENAI_SEMCONV"] = "true"
        elif args.instrumentation == "openllmetry":
            os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
            os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
            os.environ.setdefault("TRACELOOP_SUPPRESS_WARNINGS", "true")
        resource = Resource.create(
            {
                "service.name": SERVICE_NAME,
                "service.version": "1.4.2",
                "deployment.environment.name": "test",
            }
        )
        span_exporter, log_exporter = _make_exporters(args.exporter, args.endpoint, args.compression)

        if args.instrumentation == "openinference":
            # OpenInference's provider: an SDK TracerProvider whose tracers are OITracers (they
            # add session.id etc. from context) with raised attribute-count limits.
            from openinference.instrumentation import TracerProvider as OITracerProvider

            self.tracer_provider = OITracerProvider(resource=resource)
        else:
            self.tracer_provider = TracerProvider(resource=resource)
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
        trace.set_tracer_provider(self.tracer_provider)
        _logs.set_logger_provider(self.logger_provider)

        if args.instrumentation == "genai":
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
            from opentelemetry.util.genai.handler import get_telemetry_handler

            OpenAIInstrumentor().instrument(
                tracer_provider=self.tracer_provider, logger_provider=self.logger_provider
            )
            self.genai_handler = get_telemetry_handler(
                tracer_provider=self.tracer_provider, logger_provider=self.logger_provider
            )
        elif args.instrumentation == "openinference":
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

            OIOpenAI().instrument(tracer_provider=self.tracer_provider)
        elif args.instrumentation == "openllmetry":
            from traceloop.sdk import Traceloop
            from traceloop.sdk.instruments import Instruments

            # Traceloop reuses the global provider set above and adds its own
            # BatchSpanProcessor(exporter) whose on_start stamps workflow/association attributes.
            Traceloop.init(
                app_name=SERVICE_NAME,
                exporter=span_exporter,
                telemetry_enabled=False,
                instruments={Instruments.OPENAI},
                use_attributes=(args.content == "span"),
            )
        else:
            raise ValueError(args.instrumentation)
        self.tracer = self.tracer_provider.get_tracer("rag_demo_app", "1.4.2")

    def shutdown(self) -> None:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


# ------------------------------------------------------------------------------------------------
# The app
# ------------------------------------------------------------------------------------------------


@dataclass
class ChatResult:
    answer: str
    response_id: str | None
    response_model: str | None
    input_tokens: int | None
    output_tokens: int | None


class RagApp:
    def __init__(self, args: argparse.Namespace, telemetry: Telemetry, client: Any) -> None:
        self.args = args
        self.telemetry = telemetry
        self.client = client
        self.kind = args.instrumentation
        self.conversation_id: str = args.conversation_id
        self.history: list[dict[str, str]] = []
        self.truth_out = args.truth_out
        self._decorated: dict[str, Callable[..., Awaitable[Any]]] = {}
        if self.kind == "openllmetry":
            self._build_traceloop_entities()

    # ---------------------------------------------------------------- openai calls

    async def embed(self, text: str) -> list[float]:
        response = await self.client.embeddings.create(model=EMBEDDING_MODEL, input=text)
        return list(response.data[0].embedding)

    async def chat(self, messages: list[dict[str, str]], *, stream: bool) -> ChatResult:
        if not stream:
            response = await self.client.chat.completions.create(
                model=CHAT_MODEL, messages=messages, temperature=0.2, max_tokens=400
            )
            usage = response.usage
            return ChatResult(
                answer=response.choices[0].message.content or "",
                response_id=response.id,
                response_model=response.model,
                input_tokens=usage.prompt_tokens if usage else None,
                output_tokens=usage.completion_tokens if usage else None,
            )
        stream_response = await self.client.chat.completions.create(
            model=CHAT_MODEL,
            messages=messages,
            temperature=0.2,
            max_tokens=400,
            stream=True,
            stream_options={"include_usage": True},
        )
        parts: list[str] = []
        response_id = response_model = None
        input_tokens = output_tokens = None
        async for chunk in stream_response:
            response_id = chunk.id or response_id
            response_model = chunk.model or response_model
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
            if chunk.usage:
                input_tokens = chunk.usage.prompt_tokens
                output_tokens = chunk.usage.completion_tokens
        return ChatResult("".join(parts), response_id, response_model, input_tokens, output_tokens)

    # ---------------------------------------------------------------- retrieval per convention

    async def retrieval_step(self, query: str) -> list[dict[str, Any]]:
        await self.embed(query)
        if self.kind == "genai":
            return self._retrieve_genai(query)
        if self.kind == "openinference":
            return self._retrieve_openinference(query)
        return await self._decorated["retrieve"](query, top_k=TOP_K)

    def _retrieve_genai(self, query: str) -> list[dict[str, Any]]:
        from opentelemetry.util.genai.utils import (
            gen_ai_json_dumps,
            should_capture_content_on_spans,
        )

        handler = self.telemetry.genai_handler
        with handler.retrieval(data_source_id=DATA_SOURCE_ID) as invocation:
            documents = retrieve(query)
            invocation.top_k = TOP_K
            invocation.query_text = query
            invocation.documents = documents
            if not should_capture_content_on_spans():
                # util-genai only writes query/documents on spans in SPAN_ONLY/SPAN_AND_EVENT
                # and has no retrieval event; the app records them itself in EVENT_ONLY mode.
                invocation.attributes["gen_ai.retrieval.query.text"] = query
                invocation.attributes["gen_ai.retrieval.documents"] = gen_ai_json_dumps(documents)
        return documents

    def _retrieve_openinference(self, query: str) -> list[dict[str, Any]]:
        from openinference.instrumentation import get_retriever_attributes
        from openinference.instrumentation import Document as OIDocument

        tracer = self.telemetry.tracer
        with tracer.start_as_current_span(
            "retrieve_documents", openinference_span_kind="retriever"
        ) as span:
            span.set_input(query)
            documents = retrieve(query)
            span.set_attributes(
                get_retriever_attributes(
                    documents=[
                        OIDocument(
                            id=d["id"],
                            content=d["content"],
                            score=d["score"],
                            metadata={"title": d["title"], "source": DATA_SOURCE_ID},
                        )
                        for d in documents
                    ]
                )
            )
        return documents

    def _build_traceloop_entities(self) -> None:
        from traceloop.sdk.decorators import agent, task, workflow

        @task(name="retrieve_documents")
        async def retrieve_documents(query: str, top_k: int = TOP_K) -> list[dict[str, Any]]:
            return retrieve(query, top_k)

        @workflow(name="rag_chat")
        async def rag_chat(question: str, history: list[dict[str, str]], stream: bool) -> str:
            from traceloop.sdk import Traceloop

            Traceloop.set_association_properties({"session_id": self.conversation_id})
            return await self._rag_core(question, stream=stream)

        @agent(name="support_agent")
        async def support_agent(question: str, history: list[dict[str, str]]) -> str:
            from traceloop.sdk import Traceloop

            Traceloop.set_association_properties({"session_id": self.conversation_id})
            return await self._agent_core(question)

        self._decorated = {"retrieve": retrieve_documents, "rag": rag_chat, "agent": support_agent}

    # ---------------------------------------------------------------- one turn

    def _messages(self, system: str, question: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, *self.history, {"role": "user", "content": question}]

    async def _rag_core(self, question: str, *, stream: bool) -> str:
        documents = await self.retrieval_step(question)
        system = SYSTEM_TEMPLATE.format(documents=format_documents(documents))
        result = await self.chat(self._messages(system, question), stream=stream)
        self._turn_state.update(documents=documents, system_prompt=system, result=result, calls=[result])
        return result.answer

    async def _agent_core(self, question: str) -> str:
        rewrite = await self.chat(
            [
                {"role": "system", "content": REWRITE_SYSTEM},
                *self.history,
                {"role": "user", "content": f"{REWRITE_PREFIX} {question}"},
            ],
            stream=False,
        )
        documents = await self.retrieval_step(rewrite.answer)
        system = SYSTEM_TEMPLATE.format(documents=format_documents(documents))
        result = await self.chat(self._messages(system, question), stream=False)
        self._turn_state.update(
            documents=documents,
            system_prompt=system,
            result=result,
            calls=[rewrite, result],
            retrieval_query=rewrite.answer,
            intermediate_answers=[rewrite.answer],
        )
        return result.answer

    async def turn(self, question: str, *, stream: bool = False, agent_mode: bool = False) -> dict[str, Any]:
        from opentelemetry.trace import SpanKind

        self._turn_state: dict[str, Any] = {"retrieval_query": question, "intermediate_answers": []}
        history_before = [dict(m) for m in self.history]
        tracer = self.telemetry.tracer
        root_attrs: dict[str, Any] = {
            "http.request.method": "POST",
            "http.route": "/chat",
            "url.path": "/chat",
            "url.scheme": "http",
            "server.address": "127.0.0.1",
            "server.port": 8080,
        }
        if self.kind == "genai":
            root_attrs["gen_ai.conversation.id"] = self.conversation_id
        start_kwargs: dict[str, Any] = {"kind": SpanKind.SERVER, "attributes": root_attrs}
        if self.kind == "openinference":
            start_kwargs["openinference_span_kind"] = "chain"

        if self.kind == "openinference":
            from openinference.instrumentation import using_session

            session_cm: Any = using_session(self.conversation_id)
        else:
            from contextlib import nullcontext

            session_cm = nullcontext()

        with session_cm, tracer.start_as_current_span("POST /chat", **start_kwargs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            if self.kind == "openinference":
                root.set_input(question)
            if self.kind == "openllmetry":
                key = "agent" if agent_mode else "rag"
                args = (question, history_before) if agent_mode else (question, history_before, stream)
                answer = await self._decorated[key](*args)
            elif self.kind == "genai" and agent_mode:
                from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

                handler = self.telemetry.genai_handler
                with handler.invoke_local_agent(agent_name="support_agent", request_model=CHAT_MODEL) as inv:
                    inv.conversation_id = self.conversation_id
                    inv.input_messages = [InputMessage(role="user", parts=[Text(content=question)])]
                    answer = await self._agent_core(question)
                    inv.output_messages = [
                        OutputMessage(role="assistant", parts=[Text(content=answer)], finish_reason="stop")
                    ]
            elif agent_mode:
                answer = await self._agent_core(question)
            else:
                answer = await self._rag_core(question, stream=stream)
            if self.kind == "openinference":
                root.set_output(answer)
            root.set_attribute("http.response.status_code", 200)

        state = self._turn_state
        result: ChatResult = state["result"]
        truth = {
            "trace_id": trace_id,
            "conversation_id": self.conversation_id,
            "instrumentation": self.kind,
            "content": self.args.content,
            "scenario": self.args.scenario,
            "service": SERVICE_NAME,
            "root_span_name": "POST /chat",
            "question": question,
            "answer": answer,
            "history": history_before,
            "system_prompt": state["system_prompt"],
            "documents": [
                {"id": d["id"], "title": d["title"], "content": d["content"], "score": d["score"]}
                for d in state["documents"]
            ],
            "retrieval_query": state["retrieval_query"],
            "request_model": CHAT_MODEL,
            "response_model": result.response_model,
            "embedding_model": EMBEDDING_MODEL,
            "provider": "openai",
            # usage/response id of the final (answering) chat call only
            "usage": {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens},
            "response_id": result.response_id,
            "streamed": stream,
            "chat_calls": len(state["calls"]),
            # every chat completion of the turn in call order (the last one is the answer)
            "chat_call_details": [
                {
                    "response_id": c.response_id,
                    "answer": c.answer,
                    "input_tokens": c.input_tokens,
                    "output_tokens": c.output_tokens,
                }
                for c in state["calls"]
            ],
            "intermediate_answers": state["intermediate_answers"],
        }
        self.truth_out.write(json.dumps(truth) + "\n")
        self.truth_out.flush()
        self.history.extend(
            [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        )
        return truth

    async def run(self, scenario: str) -> None:
        if scenario == "conversation":
            for question in CONVERSATION_QUESTIONS:
                await self.turn(question)
        elif scenario == "stream":
            await self.turn(STREAM_QUESTION, stream=True)
        elif scenario == "agent":
            await self.turn(AGENT_QUESTION, agent_mode=True)
        else:
            raise ValueError(scenario)


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.support.rag_app", description=__doc__.split("\n")[0])
    p.add_argument("--instrumentation", choices=INSTRUMENTATIONS, required=True)
    p.add_argument("--exporter", choices=EXPORTERS, default="http-protobuf")
    p.add_argument(
        "--endpoint",
        default=None,
        help="OTLP base endpoint: http://127.0.0.1:4318 (HTTP) or 127.0.0.1:4317 (gRPC)",
    )
    p.add_argument("--compression", choices=("none", "gzip"), default="none")
    p.add_argument("--openai-base-url", default=None, help="default: start a fake server in-process")
    p.add_argument("--scenario", choices=SCENARIOS, default="conversation")
    p.add_argument("--content", choices=CONTENT_MODES, default="span")
    p.add_argument("--conversation-id", default="conv-0001")
    args = p.parse_args(argv)
    if args.content not in SUPPORTED_CONTENT[args.instrumentation]:
        p.error(
            f"--content {args.content} is not supported by {args.instrumentation} "
            f"(choose from {', '.join(SUPPORTED_CONTENT[args.instrumentation])})"
        )
    if args.endpoint is None:
        args.endpoint = "127.0.0.1:4317" if args.exporter == "grpc" else "http://127.0.0.1:4318"
    return args


async def _main(args: argparse.Namespace) -> None:
    import openai

    stop = None
    base_url = args.openai_base_url
    if base_url is None:
        from tests.support.fake_openai import FakeOpenAI, run_in_thread

        base_url, stop = run_in_thread(FakeOpenAI(ANSWERS))
    telemetry = Telemetry(args)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test-not-a-real-key", max_retries=0)
    try:
        await RagApp(args, telemetry, client).run(args.scenario)
    finally:
        await client.close()
        telemetry.shutdown()
        if stop is not None:
            stop.set()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Ground truth owns stdout; libraries that print (Traceloop does) are sent to stderr.
    args.truth_out = sys.stdout
    sys.stdout = sys.stderr
    try:
        asyncio.run(_main(args))
    finally:
        sys.stdout = args.truth_out
    return 0


if __name__ == "__main__":
    sys.exit(main())
