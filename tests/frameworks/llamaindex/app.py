"""LlamaIndex RAG capture app (llama-index-core + llama-index-llms-openai), two instrumentations.

Runs in its own venv (``.venv-frameworks/llamaindex``, see ``requirements.txt``) under
``tests/frameworks/harness.py``; see the harness docstring for the command-line contract.

Instrumentations:

- ``openinference``: ``openinference-instrumentation-llama-index`` (LlamaIndex dispatcher span and
  event handlers) on OpenInference's ``TracerProvider``; conversation id via ``using_session``.
- ``traceloop``: ``traceloop-sdk`` ``Traceloop.init(exporter=…)`` with the LlamaIndex and OpenAI
  instruments (``opentelemetry-instrumentation-llamaindex`` + ``-openai``); conversation id via
  ``Traceloop.set_association_properties({"session_id": …})``. Traceloop only instruments
  LlamaIndex when a distribution named ``llama-index`` is installed
  (``traceloop.sdk.tracing.tracing.init_llama_index_instrumentor``), so the requirements pin the
  small ``llama-index`` meta package.

Scenarios:

- ``chat``: ``CondensePlusContextChatEngine`` over the KB retriever, 3 turns of
  ``CONVERSATION_QUESTIONS`` with the engine's own memory (turns 2-3 make an extra "condense"
  LLM call first; the answering call is the last one).
- ``query``: ``RetrieverQueryEngine`` with the default text-QA template, 2 independent questions.

Each turn runs inside the app's own ``POST /chat`` SERVER span; the conversation id is set the
stack's way inside that span (as a web handler would do it). One truth line per turn on stdout.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from typing import Any

COMBINATIONS = [
    ["openinference", "chat"],
    ["openinference", "query"],
    ["traceloop", "chat"],
    ["traceloop", "query"],
]
STACK = "llamaindex"
SERVICE_NAME = "rag-demo-app"
CHAT_MODEL = "gpt-4o-mini"
TOP_K = 3


# ------------------------------------------------------------------------------------------------
# No internet: anything but loopback fails loudly (tiktoken BPE, nltk data, telemetry, ...)
# ------------------------------------------------------------------------------------------------


def _is_loopback(host: Any) -> bool:
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def guard_network() -> None:
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            print(f"[llamaindex app] BLOCKED name lookup of {host!r}", file=sys.stderr)
            raise socket.gaierror(f"network blocked in capture app: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
            print(f"[llamaindex app] BLOCKED connect to {address!r}", file=sys.stderr)
            raise OSError(f"network blocked in capture app: {address}")
        return real_connect(self, address)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]


# ------------------------------------------------------------------------------------------------
# Telemetry
# ------------------------------------------------------------------------------------------------


class Telemetry:
    def __init__(self, instrumentation: str, endpoint: str) -> None:
        from opentelemetry import _logs, trace
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        base = endpoint.rstrip("/")
        span_exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces")
        log_exporter = OTLPLogExporter(endpoint=f"{base}/v1/logs")
        resource = Resource.create({
            "service.name": SERVICE_NAME,
            "service.version": "1.4.2",
            "deployment.environment.name": "test",
        })
        self.instrumentation = instrumentation
        if instrumentation == "openinference":
            # OpenInference's provider: OITracers add session.id etc. from context and the
            # attribute-count limit is raised (flattened llm.input_messages.N.* keys).
            from openinference.instrumentation import TracerProvider as OITracerProvider

            self.tracer_provider = OITracerProvider(resource=resource)
        else:
            self.tracer_provider = TracerProvider(resource=resource)
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
        trace.set_tracer_provider(self.tracer_provider)
        _logs.set_logger_provider(self.logger_provider)

        if instrumentation == "openinference":
            from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            LlamaIndexInstrumentor().instrument(tracer_provider=self.tracer_provider)
        elif instrumentation == "traceloop":
            os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
            os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
            os.environ.setdefault("TRACELOOP_SUPPRESS_WARNINGS", "true")
            from traceloop.sdk import Traceloop
            from traceloop.sdk.instruments import Instruments

            # Reuses the global TracerProvider set above and adds its own BatchSpanProcessor
            # around our exporter. A custom exporter without metrics/logging exporters turns
            # Traceloop's metrics and log pipelines off (nothing goes to api.traceloop.com).
            Traceloop.init(
                app_name=SERVICE_NAME,
                exporter=span_exporter,
                telemetry_enabled=False,
                instruments={Instruments.LLAMA_INDEX, Instruments.OPENAI},
            )
            from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor as TLInstr

            if not TLInstr().is_instrumented_by_opentelemetry:
                raise RuntimeError("traceloop did not instrument LlamaIndex (is `llama-index` installed?)")
        else:
            raise ValueError(instrumentation)
        self.tracer = self.tracer_provider.get_tracer("rag_demo_app", "1.4.2")

    def session(self, conversation_id: str) -> Any:
        """Set the conversation id the stack's documented way; returns a context manager."""
        from contextlib import contextmanager

        if self.instrumentation == "openinference":
            from openinference.instrumentation import using_session

            return using_session(conversation_id)

        @contextmanager
        def traceloop_session() -> Any:
            from traceloop.sdk import Traceloop

            Traceloop.set_association_properties({"session_id": conversation_id})
            yield

        return traceloop_session()

    def shutdown(self) -> None:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


# ------------------------------------------------------------------------------------------------
# The LlamaIndex app
# ------------------------------------------------------------------------------------------------


def configure_llamaindex(openai_base_url: str) -> Any:
    from llama_index.core import Settings
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.llms.openai import OpenAI

    # The global tokenizer defaults to tiktoken (BPE file download for unknown encodings):
    # a local whitespace tokenizer instead. Embeddings are never needed (custom retriever), and
    # the default OpenAIEmbedding would be resolved lazily: a mock keeps it local.
    Settings.tokenizer = lambda text: text.split()
    Settings.embed_model = MockEmbedding(embed_dim=8)
    llm = OpenAI(
        model=CHAT_MODEL,
        api_key="sk-test-not-a-real-key",
        api_base=openai_base_url,
        temperature=0.2,
        max_tokens=400,
        max_retries=0,
    )
    Settings.llm = llm
    return llm


def make_retriever() -> Any:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from tests.support.rag_app import retrieve

    class KnowledgeBaseRetriever(BaseRetriever):
        """The help-center search as a LlamaIndex retriever (kb ids, content, score)."""

        def __init__(self, top_k: int = TOP_K) -> None:
            super().__init__()
            self.top_k = top_k
            self.last_query: str | None = None
            self.last_documents: list[dict[str, Any]] = []

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            documents = retrieve(query_bundle.query_str, self.top_k)
            self.last_query = query_bundle.query_str
            self.last_documents = documents
            return [
                NodeWithScore(
                    node=TextNode(id_=d["id"], text=d["content"], metadata={"title": d["title"]}),
                    score=d["score"],
                )
                for d in documents
            ]

    return KnowledgeBaseRetriever()


class App:
    def __init__(self, args: argparse.Namespace, telemetry: Telemetry) -> None:
        from tests.frameworks.truth import ChatCallLog

        self.args = args
        self.telemetry = telemetry
        self.llm = configure_llamaindex(args.openai_base_url)
        self.retriever = make_retriever()
        self.calls = ChatCallLog(args.openai_base_url)

    def turn(self, question: str, run: Any, history: list[dict[str, str]]) -> None:
        from opentelemetry.trace import SpanKind

        from tests.frameworks.truth import emit, truth_line

        tracer = self.telemetry.tracer
        attrs = {
            "http.request.method": "POST",
            "http.route": "/chat",
            "url.path": "/chat",
            "url.scheme": "http",
            "server.address": "127.0.0.1",
            "server.port": 8080,
        }
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER, attributes=attrs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            # The request handler sets the session, as a web app would (inside the server span).
            with self.telemetry.session(self.args.conversation_id):
                answer = run(question)
            root.set_attribute("http.response.status_code", 200)

        calls = self.calls.since_last()
        final_messages = calls[-1].get("messages") or [] if calls else []
        system = next((m["content"] for m in final_messages if m.get("role") == "system"), None)
        emit(truth_line(
            trace_id=trace_id,
            conversation_id=self.args.conversation_id,
            stack=STACK,
            instrumentation=self.args.instrumentation,
            scenario=self.args.scenario,
            service=SERVICE_NAME,
            root_span_name="POST /chat",
            question=question,
            answer=answer,
            history=history,
            system_prompt=system,
            documents=self.retriever.last_documents,
            retrieval_query=self.retriever.last_query,
            calls=calls,
            intermediate_answers=[c["answer"] for c in calls[:-1]],
        ), out=sys.__stdout__)

    def run_chat(self) -> None:
        from llama_index.core.chat_engine import CondensePlusContextChatEngine

        from tests.support.rag_app import CONVERSATION_QUESTIONS

        engine = CondensePlusContextChatEngine.from_defaults(retriever=self.retriever, llm=self.llm)
        for question in CONVERSATION_QUESTIONS:
            history = [{"role": m.role.value, "content": m.content or ""} for m in engine.chat_history]
            self.turn(question, lambda q: str(engine.chat(q).response), history)

    def run_query(self) -> None:
        from llama_index.core.query_engine import RetrieverQueryEngine

        from tests.support.rag_app import CONVERSATION_QUESTIONS, STREAM_QUESTION

        engine = RetrieverQueryEngine.from_args(retriever=self.retriever, llm=self.llm)
        for question in (CONVERSATION_QUESTIONS[0], STREAM_QUESTION):
            self.turn(question, lambda q: str(engine.query(q)), [])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--list", action="store_true")
    p.add_argument("--instrumentation", choices=sorted({c[0] for c in COMBINATIONS}))
    p.add_argument("--scenario", choices=sorted({c[1] for c in COMBINATIONS}))
    p.add_argument("--endpoint", default="http://127.0.0.1:4318")
    p.add_argument("--openai-base-url")
    p.add_argument("--conversation-id", default="conv-0001")
    p.add_argument("--exporter", choices=["http-protobuf"], default="http-protobuf")
    args = p.parse_args(argv)
    if not args.list and not (args.instrumentation and args.scenario and args.openai_base_url):
        p.error("--instrumentation, --scenario and --openai-base-url are required")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(json.dumps(COMBINATIONS))
        return 0
    guard_network()
    # Truth lines own stdout; libraries that print (Traceloop does) go to stderr.
    sys.stdout = sys.stderr
    telemetry = Telemetry(args.instrumentation, args.endpoint)
    try:
        app = App(args, telemetry)
        if args.scenario == "chat":
            app.run_chat()
        else:
            app.run_query()
    finally:
        telemetry.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
