"""LangChain RAG app (LCEL + ChatOpenAI + a custom BaseRetriever), instrumented for real.

Instrumentations (``--instrumentation``):

- ``openinference``: ``openinference-instrumentation-langchain`` (``LangChainInstrumentor``) on
  OpenInference's ``TracerProvider``; conversation id with ``using_session(id)`` around each turn.
- ``traceloop``: ``traceloop-sdk`` (``Traceloop.init``) with its LangChain instrumentation
  (``opentelemetry-instrumentation-langchain``; it is only enabled when the ``langchain`` or
  ``langgraph`` distribution is installed) and its OpenAI instrumentation, exporting to our
  OTLP exporter; telemetry off; conversation id with
  ``Traceloop.set_association_properties({"session_id": id})`` inside each request.

Scenarios (``--scenario``):

- ``conversation``: 3 turns, ``RunnableWithMessageHistory`` + ``InMemoryChatMessageHistory``
  around an LCEL chain: ``question -> retriever -> format`` then
  ``ChatPromptTemplate[system(documents), MessagesPlaceholder(history), human(question)] | llm |
  StrOutputParser``.
- ``stuffed``: 2 independent turns of the classic stuffed-prompt chain:
  ``{"context": retriever, "question": passthrough}`` then ``PromptTemplate("Answer using the
  context.\\nQuestion: {question}\\nContext: {context}\\nAnswer:") | llm | parser`` (one user
  message, no system message).

Stdout: one truth line per turn (``tests/frameworks/truth.py``); everything else to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

STACK = "langchain"
SERVICE_NAME = "rag-demo-app"
CHAT_MODEL = "gpt-4o-mini"
API_KEY = "sk-test-not-a-real-key"
INSTRUMENTATIONS = ("openinference", "traceloop")
SCENARIOS = ("conversation", "stuffed")
STUFFED_TEMPLATE = "Answer using the context.\nQuestion: {question}\nContext: {context}\nAnswer:"
STUFFED_QUESTIONS = (
    "How do I restore a single file from last week?",
    "Is my data encrypted at rest?",
)
DATA_SOURCE = "acme-help-center"


# ------------------------------------------------------------------------------------------------
# No internet: refuse (and report) any connection that is not to the loopback interface.
# ------------------------------------------------------------------------------------------------

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
_real_getaddrinfo = socket.getaddrinfo


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else host
    if name is not None and str(name) not in _LOCAL_HOSTS and not str(name).startswith("127."):
        print(f"[langchain-app] BLOCKED outbound lookup of {name!r}", file=sys.stderr)
        raise OSError(f"network access to {name!r} blocked by the capture app")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]


# ------------------------------------------------------------------------------------------------
# Telemetry
# ------------------------------------------------------------------------------------------------


class Telemetry:
    def __init__(self, instrumentation: str, endpoint: str, exporter: str) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        if exporter != "http-protobuf":
            print(f"[langchain-app] exporter {exporter!r} not supported; using http-protobuf", file=sys.stderr)
        self.instrumentation = instrumentation
        base = endpoint.rstrip("/")
        span_exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces")
        resource = Resource.create({"service.name": SERVICE_NAME, "service.version": "1.4.2",
                                    "deployment.environment.name": "test"})
        if instrumentation == "openinference":
            from openinference.instrumentation import TracerProvider as OITracerProvider
            from openinference.instrumentation.langchain import LangChainInstrumentor

            self.tracer_provider = OITracerProvider(resource=resource)
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            trace.set_tracer_provider(self.tracer_provider)
            LangChainInstrumentor().instrument(tracer_provider=self.tracer_provider)
        elif instrumentation == "traceloop":
            os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
            os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
            os.environ.setdefault("TRACELOOP_METRICS_ENABLED", "false")
            os.environ.setdefault("TRACELOOP_LOGGING_ENABLED", "false")
            from traceloop.sdk import Traceloop
            from traceloop.sdk.instruments import Instruments

            self.tracer_provider = TracerProvider(resource=resource)
            trace.set_tracer_provider(self.tracer_provider)
            # Reuses the global provider; adds BatchSpanProcessor(span_exporter) whose on_start
            # stamps association properties. api_endpoint points at our collector too, so
            # nothing can ever default to api.traceloop.com.
            Traceloop.init(
                app_name=SERVICE_NAME,
                api_endpoint=base,
                exporter=span_exporter,
                telemetry_enabled=False,
                instruments={Instruments.LANGCHAIN, Instruments.OPENAI},
            )
        else:
            raise ValueError(instrumentation)
        self.tracer = self.tracer_provider.get_tracer("rag_demo_app", "1.4.2")

    def shutdown(self) -> None:
        self.tracer_provider.force_flush()
        self.tracer_provider.shutdown()


# ------------------------------------------------------------------------------------------------
# The LangChain app
# ------------------------------------------------------------------------------------------------


def build_retriever() -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from tests.support.rag_app import TOP_K, retrieve

    class HelpCenterRetriever(BaseRetriever):
        """Keyword retriever over the Acme help center (tests.support.rag_app.retrieve)."""

        top_k: int = TOP_K

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [
                Document(
                    id=d["id"],
                    page_content=d["content"],
                    metadata={"id": d["id"], "title": d["title"], "score": d["score"], "source": DATA_SOURCE},
                )
                for d in retrieve(query, self.top_k)
            ]

    return HelpCenterRetriever()


def format_docs(docs: list[Any]) -> str:
    from tests.support.rag_app import format_documents

    return format_documents([{"id": d.metadata["id"], "title": d.metadata["title"]} | {"content": d.page_content}
                             for d in docs])


def doc_dicts(docs: list[Any]) -> list[dict[str, Any]]:
    return [{"id": d.metadata["id"], "title": d.metadata["title"], "content": d.page_content,
             "score": d.metadata["score"]} for d in docs]


class App:
    def __init__(self, args: argparse.Namespace, telemetry: Telemetry, truth_out: Any) -> None:
        from langchain_core.chat_history import InMemoryChatMessageHistory
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
        from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
        from langchain_core.runnables.history import RunnableWithMessageHistory
        from langchain_openai import ChatOpenAI

        from tests.frameworks.truth import ChatCallLog
        from tests.support.rag_app import SYSTEM_TEMPLATE

        self.args = args
        self.telemetry = telemetry
        self.truth_out = truth_out
        self.calls = ChatCallLog(args.openai_base_url)
        self.llm = ChatOpenAI(model=CHAT_MODEL, temperature=0.2, max_tokens=400,
                              base_url=args.openai_base_url, api_key=API_KEY)
        retriever = build_retriever()
        parser = StrOutputParser()

        # conversation: question -> retriever -> docs; docs -> format -> system prompt
        prompt = ChatPromptTemplate.from_messages([
            ("system", SYSTEM_TEMPLATE),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ])
        answer_chain = (
            RunnablePassthrough.assign(documents=RunnableLambda(lambda x: format_docs(x["docs"])))
            | prompt | self.llm | parser
        )
        rag_chain = (
            RunnablePassthrough.assign(docs=RunnableLambda(lambda x: x["question"]) | retriever)
            .assign(answer=answer_chain)
        )
        self.histories: dict[str, InMemoryChatMessageHistory] = {}

        def get_session_history(session_id: str) -> InMemoryChatMessageHistory:
            return self.histories.setdefault(session_id, InMemoryChatMessageHistory())

        self.conversation_chain = RunnableWithMessageHistory(
            rag_chain, get_session_history,
            input_messages_key="question", history_messages_key="history", output_messages_key="answer",
        )

        # stuffed: {"context": retriever, "question": passthrough}.assign(answer=prompt | llm | parser)
        stuffed_prompt = PromptTemplate.from_template(STUFFED_TEMPLATE)
        stuffed_answer = (
            RunnablePassthrough.assign(context=RunnableLambda(lambda x: format_docs(x["context"])))
            | stuffed_prompt | self.llm | parser
        )
        self.stuffed_chain = (
            RunnableParallel({"context": retriever, "question": RunnablePassthrough()})
            .assign(answer=stuffed_answer)
        )

    # ------------------------------------------------------------------ one HTTP request

    def turn(self, question: str) -> None:
        from opentelemetry.trace import SpanKind

        from tests.frameworks.truth import emit, truth_line

        conv = self.args.conversation_id
        kind = self.args.instrumentation
        scenario = self.args.scenario
        history_before: list[dict[str, str]] = []
        if scenario == "conversation" and conv in self.histories:
            history_before = [{"role": "user" if m.type == "human" else "assistant", "content": m.content}
                              for m in self.histories[conv].messages]

        root_attrs = {"http.request.method": "POST", "http.route": "/chat", "url.path": "/chat",
                      "url.scheme": "http", "server.address": "127.0.0.1", "server.port": 8080}
        if kind == "openinference":
            from openinference.instrumentation import using_session

            session_cm: Any = using_session(conv)
        else:
            from contextlib import nullcontext

            session_cm = nullcontext()

        with session_cm, self.telemetry.tracer.start_as_current_span(
                "POST /chat", kind=SpanKind.SERVER, attributes=root_attrs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            if kind == "traceloop":
                from traceloop.sdk import Traceloop

                Traceloop.set_association_properties({"session_id": conv})
            if scenario == "conversation":
                result = self.conversation_chain.invoke(
                    {"question": question}, config={"configurable": {"session_id": conv}})
            else:
                result = self.stuffed_chain.invoke(question)
            root.set_attribute("http.response.status_code", 200)

        docs = result["docs"] if scenario == "conversation" else result["context"]
        answer = result["answer"]
        calls = self.calls.since_last()
        final_msgs = calls[-1]["messages"] if calls else []
        system_prompt = final_msgs[0]["content"] if final_msgs and final_msgs[0]["role"] == "system" else None
        if scenario == "conversation":
            from tests.support.rag_app import SYSTEM_TEMPLATE, format_documents

            assert system_prompt == SYSTEM_TEMPLATE.format(documents=format_documents(doc_dicts(docs)))
            assert [m for m in final_msgs[1:-1]] == history_before, (final_msgs, history_before)
        else:
            assert system_prompt is None and len(final_msgs) == 1
        assert answer == calls[-1]["answer"], (answer, calls[-1]["answer"])
        from tests.support.rag_app import ANSWERS

        assert answer in ANSWERS.values(), f"fake server fell back to its default answer: {answer!r}"
        emit(truth_line(
            trace_id=trace_id, conversation_id=conv, stack=STACK, instrumentation=kind, scenario=scenario,
            service=SERVICE_NAME, question=question, answer=answer, history=history_before,
            system_prompt=system_prompt, documents=doc_dicts(docs), calls=calls, retrieval_query=question,
            root_span_name="POST /chat",
        ), self.truth_out)

    def run(self) -> None:
        from tests.support.rag_app import CONVERSATION_QUESTIONS

        questions = CONVERSATION_QUESTIONS if self.args.scenario == "conversation" else STUFFED_QUESTIONS
        for q in questions:
            self.turn(q)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--list", action="store_true")
    p.add_argument("--instrumentation", choices=INSTRUMENTATIONS)
    p.add_argument("--scenario", choices=SCENARIOS)
    p.add_argument("--endpoint")
    p.add_argument("--openai-base-url")
    p.add_argument("--conversation-id")
    p.add_argument("--exporter", default="http-protobuf")
    args = p.parse_args(argv)
    if args.list:
        print(json.dumps([[i, s] for i in INSTRUMENTATIONS for s in SCENARIOS]))
        return 0
    # Library chatter (traceloop banners, deprecation warnings) goes to stderr; stdout = truth only.
    truth_out = sys.stdout
    sys.stdout = sys.stderr
    telemetry = Telemetry(args.instrumentation, args.endpoint, args.exporter)
    try:
        App(args, telemetry, truth_out).run()
    finally:
        telemetry.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
