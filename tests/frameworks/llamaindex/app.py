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
import os
import sys
from typing import Any

from tests.frameworks import app_common as common

COMBINATIONS = [
    ("openinference", "chat"),
    ("openinference", "query"),
    ("traceloop", "chat"),
    ("traceloop", "query"),
]
STACK = "llamaindex"


# ------------------------------------------------------------------------------------------------
# Telemetry
# ------------------------------------------------------------------------------------------------


def setup_telemetry(instrumentation: str, endpoint: str) -> common.Telemetry:
    """Global tracer + logger providers, instrumented the stack's way."""
    if instrumentation == "openinference":
        # OpenInference's provider: OITracers add session.id etc. from context and the
        # attribute-count limit is raised (flattened llm.input_messages.N.* keys).
        from openinference.instrumentation import TracerProvider as OITracerProvider
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        telemetry = common.Telemetry(endpoint, tracer_provider_class=OITracerProvider, logs=True, set_global=True)
        LlamaIndexInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    elif instrumentation == "traceloop":
        os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
        os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
        os.environ.setdefault("TRACELOOP_SUPPRESS_WARNINGS", "true")
        from traceloop.sdk import Traceloop
        from traceloop.sdk.instruments import Instruments

        telemetry = common.Telemetry(endpoint, export_spans=False, logs=True, set_global=True)
        # Reuses the global TracerProvider set above and adds its own BatchSpanProcessor
        # around our exporter. A custom exporter without metrics/logging exporters turns
        # Traceloop's metrics and log pipelines off (nothing goes to api.traceloop.com).
        Traceloop.init(
            app_name=common.SERVICE_NAME,
            exporter=telemetry.span_exporter,
            telemetry_enabled=False,
            instruments={Instruments.LLAMA_INDEX, Instruments.OPENAI},
        )
        from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor as TLInstr

        if not TLInstr().is_instrumented_by_opentelemetry:
            raise RuntimeError("traceloop did not instrument LlamaIndex (is `llama-index` installed?)")
    else:
        raise ValueError(instrumentation)
    return telemetry


def session(instrumentation: str, conversation_id: str) -> Any:
    """Set the conversation id the stack's documented way; returns a context manager."""
    from contextlib import contextmanager

    if instrumentation == "openinference":
        from openinference.instrumentation import using_session

        return using_session(conversation_id)

    @contextmanager
    def traceloop_session() -> Any:
        from traceloop.sdk import Traceloop

        Traceloop.set_association_properties({"session_id": conversation_id})
        yield

    return traceloop_session()


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
        model=common.CHAT_MODEL,
        api_key=common.API_KEY,
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

    from tests.support.rag_app import TOP_K, retrieve

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
    def __init__(self, args: argparse.Namespace, telemetry: common.Telemetry) -> None:
        from tests.frameworks.truth import ChatCallLog

        self.args = args
        self.telemetry = telemetry
        self.llm = configure_llamaindex(args.openai_base_url)
        self.retriever = make_retriever()
        self.calls = ChatCallLog(args.openai_base_url)

    def turn(self, question: str, run: Any, history: list[dict[str, str]]) -> None:
        with common.chat_request_span(self.telemetry.tracer) as root:
            trace_id = common.trace_id_of(root)
            # The request handler sets the session, as a web app would (inside the server span).
            with session(self.args.instrumentation, self.args.conversation_id):
                answer = run(question)

        calls = self.calls.since_last()
        common.emit_turn(
            self.args,
            trace_id=trace_id,
            question=question,
            answer=answer,
            history=history,
            system_prompt=common.system_prompt_of(calls),
            documents=self.retriever.last_documents,
            retrieval_query=self.retriever.last_query,
            calls=calls,
            intermediate_answers=[c["answer"] for c in calls[:-1]],
        )

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


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.split("\n")[0])
    common.guard_network(STACK)
    # Truth lines own stdout; libraries that print (Traceloop does) go to stderr.
    common.stdout_to_stderr()
    with setup_telemetry(args.instrumentation, args.endpoint) as telemetry:
        app = App(args, telemetry)
        if args.scenario == "chat":
            app.run_chat()
        else:
            app.run_query()
    return 0


if __name__ == "__main__":
    sys.exit(main())
