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
import os
import sys
from typing import Any

from tests.frameworks import app_common as common

STACK = "langchain"
COMBINATIONS = [(i, s) for i in ("openinference", "traceloop") for s in ("conversation", "stuffed")]
STUFFED_TEMPLATE = "Answer using the context.\nQuestion: {question}\nContext: {context}\nAnswer:"
STUFFED_QUESTIONS = (
    "How do I restore a single file from last week?",
    "Is my data encrypted at rest?",
)


# ------------------------------------------------------------------------------------------------
# Telemetry
# ------------------------------------------------------------------------------------------------


def setup_telemetry(instrumentation: str, endpoint: str) -> common.Telemetry:
    """The global provider, instrumented: OpenInference's, or the SDK's under Traceloop."""
    if instrumentation == "openinference":
        from openinference.instrumentation import TracerProvider as OITracerProvider
        from openinference.instrumentation.langchain import LangChainInstrumentor

        telemetry = common.Telemetry(endpoint, tracer_provider_class=OITracerProvider, set_global=True)
        LangChainInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    elif instrumentation == "traceloop":
        os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
        os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
        os.environ.setdefault("TRACELOOP_METRICS_ENABLED", "false")
        os.environ.setdefault("TRACELOOP_LOGGING_ENABLED", "false")
        from traceloop.sdk import Traceloop
        from traceloop.sdk.instruments import Instruments

        telemetry = common.Telemetry(endpoint, export_spans=False, set_global=True)
        # Reuses the global provider; adds BatchSpanProcessor(span_exporter) whose on_start
        # stamps association properties. api_endpoint points at our collector too, so
        # nothing can ever default to api.traceloop.com.
        Traceloop.init(
            app_name=common.SERVICE_NAME,
            api_endpoint=telemetry.endpoint,
            exporter=telemetry.span_exporter,
            telemetry_enabled=False,
            instruments={Instruments.LANGCHAIN, Instruments.OPENAI},
        )
    else:
        raise ValueError(instrumentation)
    return telemetry


# ------------------------------------------------------------------------------------------------
# The LangChain app
# ------------------------------------------------------------------------------------------------


def build_retriever() -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from tests.support.rag_app import DATA_SOURCE_ID, TOP_K, retrieve

    class HelpCenterRetriever(BaseRetriever):
        """Keyword retriever over the Acme help center (tests.support.rag_app.retrieve)."""

        top_k: int = TOP_K

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [
                Document(
                    id=d["id"],
                    page_content=d["content"],
                    metadata={"id": d["id"], "title": d["title"], "score": d["score"], "source": DATA_SOURCE_ID},
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
    def __init__(self, args: argparse.Namespace, telemetry: common.Telemetry) -> None:
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
        self.calls = ChatCallLog(args.openai_base_url)
        self.llm = ChatOpenAI(model=common.CHAT_MODEL, temperature=0.2, max_tokens=400,
                              base_url=args.openai_base_url, api_key=common.API_KEY)
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
        conv = self.args.conversation_id
        kind = self.args.instrumentation
        scenario = self.args.scenario
        history_before: list[dict[str, str]] = []
        if scenario == "conversation" and conv in self.histories:
            history_before = [{"role": "user" if m.type == "human" else "assistant", "content": m.content}
                              for m in self.histories[conv].messages]

        if kind == "openinference":
            from openinference.instrumentation import using_session

            session_cm: Any = using_session(conv)
        else:
            from contextlib import nullcontext

            session_cm = nullcontext()

        with session_cm, common.chat_request_span(self.telemetry.tracer) as root:
            trace_id = common.trace_id_of(root)
            if kind == "traceloop":
                from traceloop.sdk import Traceloop

                Traceloop.set_association_properties({"session_id": conv})
            if scenario == "conversation":
                result = self.conversation_chain.invoke(
                    {"question": question}, config={"configurable": {"session_id": conv}})
            else:
                result = self.stuffed_chain.invoke(question)

        docs = result["docs"] if scenario == "conversation" else result["context"]
        answer = result["answer"]
        calls = self.calls.since_last()
        final_msgs = calls[-1]["messages"] if calls else []
        system_prompt = common.system_prompt_of(calls)
        if scenario == "conversation":
            from tests.support.rag_app import SYSTEM_TEMPLATE, format_documents

            assert final_msgs[0]["role"] == "system"
            assert system_prompt == SYSTEM_TEMPLATE.format(documents=format_documents(doc_dicts(docs)))
            assert [m for m in final_msgs[1:-1]] == history_before, (final_msgs, history_before)
        else:
            assert system_prompt is None and len(final_msgs) == 1
        assert answer == calls[-1]["answer"], (answer, calls[-1]["answer"])
        from tests.support.rag_app import ANSWERS

        assert answer in ANSWERS.values(), f"fake server fell back to its default answer: {answer!r}"
        common.emit_turn(self.args, trace_id=trace_id, question=question, answer=answer, history=history_before,
                         system_prompt=system_prompt, documents=doc_dicts(docs), calls=calls, retrieval_query=question)

    def run(self) -> None:
        from tests.support.rag_app import CONVERSATION_QUESTIONS

        questions = CONVERSATION_QUESTIONS if self.args.scenario == "conversation" else STUFFED_QUESTIONS
        for q in questions:
            self.turn(q)


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.split("\n")[0])
    common.guard_network(STACK)
    # Library chatter (traceloop banners, deprecation warnings) goes to stderr; stdout = truth only.
    common.stdout_to_stderr()
    with setup_telemetry(args.instrumentation, args.endpoint) as telemetry:
        App(args, telemetry).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
