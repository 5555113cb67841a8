"""Haystack 3.x RAG chat app, traced two ways, for the framework captures.

Pipeline (one ``Pipeline.run`` per turn, inside the app's ``POST /chat`` SERVER span)::

    retriever (KnowledgeBaseRetriever, custom @component -> list[Document])
        -> prompt_builder (ChatPromptBuilder: system message with the documents via Jinja,
                          the history ChatMessages, the user question)
        -> llm (OpenAIChatGenerator, api_base_url = --openai-base-url)

Instrumentations (``--instrumentation``):

- ``openinference``: ``openinference-instrumentation-haystack`` (``HaystackInstrumentor``) on a
  plain SDK ``TracerProvider``; conversation id via ``openinference.instrumentation.using_session``
  (becomes ``session.id`` on every OpenInference span).
- ``native``: Haystack's own tracer, ``haystack.tracing.enable_tracing(OpenTelemetryTracer(...))``
  (Haystack 3.x ships it in ``opentelemetry-haystack``), content tracing on
  (``tracing.tracer.is_content_tracing_enabled = True``); conversation id = ``gen_ai.conversation.id`` on the
  app's root span (Haystack has no session concept of its own).

Scenario ``conversation``: 3 turns; the app keeps the history as ``ChatMessage``s and passes it to
the prompt builder. One truth line per turn on stdout; everything else on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

# Before haystack is imported: no PostHog telemetry upload.
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"

from tests.frameworks.truth import ChatCallLog, emit, truth_line  # noqa: E402
from tests.support.rag_app import (  # noqa: E402
    CONVERSATION_QUESTIONS,
    SYSTEM_TEMPLATE,
    TOP_K,
    retrieve,
)
from haystack import Document, component  # noqa: E402


@component
class KnowledgeBaseRetriever:
    """Retriever over the help-center knowledge base (deterministic keyword scoring).

    Named ``*Retriever``, returns ``documents: list[Document]`` and takes no ``documents`` input:
    that is what openinference-instrumentation-haystack needs to classify it as a RETRIEVER.
    Module-level on purpose: the instrumentor re-wraps ``<module>.<Class>.run`` by name.
    """

    def __init__(self, top_k: int = TOP_K) -> None:
        self.top_k = top_k

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        hits = retrieve(query, top_k or self.top_k)
        return {"documents": [Document(id=h["id"], content=h["content"], score=h["score"],
                                       meta={"title": h["title"]}) for h in hits]}


STACK = "haystack"
SERVICE_NAME = "rag-demo-app"
CHAT_MODEL = "gpt-4o-mini"
API_KEY = "sk-test-not-a-real-key"
COMBINATIONS = [["openinference", "conversation"], ["native", "conversation"]]

# The rag_app system prompt, written as Haystack users write it: a ChatPromptBuilder string template
# whose system message renders the retrieved Documents with Jinja, then the history ChatMessages,
# then the question. Renders to exactly SYSTEM_TEMPLATE.format(documents=format_documents(docs)).
_SYSTEM_INTRO = SYSTEM_TEMPLATE.split("{documents}")[0]
PROMPT_TEMPLATE = (
    '{% message role="system" %}'
    + _SYSTEM_INTRO
    + "{% for doc in documents %}[{{ doc.id }}] {{ doc.meta.title }}\n{{ doc.content }}"
    "{% if not loop.last %}\n\n{% endif %}{% endfor %}"
    "{% endmessage %}\n"
    "{% for msg in history %}{% message role=msg.role.value %}{{ msg.text }}{% endmessage %}\n{% endfor %}"
    '{% message role="user" %}{{ question }}{% endmessage %}'
)


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--list", action="store_true")
    p.add_argument("--instrumentation", choices=[c[0] for c in COMBINATIONS])
    p.add_argument("--scenario", choices=["conversation"])
    p.add_argument("--endpoint")
    p.add_argument("--openai-base-url")
    p.add_argument("--conversation-id")
    p.add_argument("--exporter", default="http-protobuf", choices=["http-protobuf"])
    return p.parse_args(argv)


def make_tracer_provider(endpoint: str) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({
        "service.name": SERVICE_NAME,
        "service.version": "1.4.2",
        "deployment.environment.name": "test",
    })
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")))
    return provider


def build_pipeline(openai_base_url: str) -> Any:
    from haystack import Pipeline
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    pipe = Pipeline()
    pipe.add_component("retriever", KnowledgeBaseRetriever())
    pipe.add_component("prompt_builder", ChatPromptBuilder(
        template=PROMPT_TEMPLATE, required_variables=["documents", "question"]))
    pipe.add_component("llm", OpenAIChatGenerator(
        api_key=Secret.from_token(API_KEY), model=CHAT_MODEL, api_base_url=openai_base_url,
        generation_kwargs={"temperature": 0.2, "max_tokens": 400}, max_retries=0, timeout=30))
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.messages")
    return pipe


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(json.dumps(COMBINATIONS))
        return 0
    for name in ("instrumentation", "scenario", "endpoint", "openai_base_url", "conversation_id"):
        if not getattr(args, name):
            raise SystemExit(f"--{name.replace('_', '-')} is required")

    from opentelemetry.trace import SpanKind

    provider = make_tracer_provider(args.endpoint)
    instrumentor = None
    if args.instrumentation == "openinference":
        from openinference.instrumentation.haystack import HaystackInstrumentor

        instrumentor = HaystackInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
    else:
        from haystack import tracing
        from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

        tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer("haystack")))
        # Content tracing: HAYSTACK_CONTENT_TRACING_ENABLED is read once, when haystack.tracing is
        # imported (already done above), so switch it on the documented way on the proxy tracer.
        tracing.tracer.is_content_tracing_enabled = True

    from haystack.dataclasses import ChatMessage

    pipe = build_pipeline(args.openai_base_url)
    app_tracer = provider.get_tracer("rag_demo_app", "1.4.2")
    calls = ChatCallLog(args.openai_base_url)
    history: list[ChatMessage] = []  # the app's conversation memory, as Haystack ChatMessages

    for question in CONVERSATION_QUESTIONS:
        history_before = [{"role": m.role.value, "content": m.text} for m in history]
        root_attrs: dict[str, Any] = {
            "http.request.method": "POST",
            "http.route": "/chat",
            "url.path": "/chat",
            "url.scheme": "http",
            "server.address": "127.0.0.1",
            "server.port": 8080,
        }
        if args.instrumentation == "native":
            root_attrs["gen_ai.conversation.id"] = args.conversation_id
        if args.instrumentation == "openinference":
            from openinference.instrumentation import using_session

            session_cm: Any = using_session(args.conversation_id)
        else:
            from contextlib import nullcontext

            session_cm = nullcontext()

        with session_cm, app_tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER,
                                                          attributes=root_attrs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            result = pipe.run(
                {"retriever": {"query": question},
                 "prompt_builder": {"question": question, "history": list(history)}},
                include_outputs_from={"retriever", "prompt_builder"},
            )
            reply = result["llm"]["replies"][0]
            answer = reply.text
            root.set_attribute("http.response.status_code", 200)

        prompt = result["prompt_builder"]["prompt"]
        system_prompt = prompt[0].text if prompt and prompt[0].role.value == "system" else None
        documents = [{"id": d.id, "title": d.meta.get("title"), "content": d.content, "score": d.score}
                     for d in result["retriever"]["documents"]]
        turn_calls = calls.since_last()
        sent = turn_calls[-1]["messages"] if turn_calls else []
        if sent and sent[0]["role"] == "system" and sent[0]["content"] != system_prompt:
            log("WARNING: rendered system prompt differs from the one the server got")
        emit(truth_line(
            trace_id=trace_id, conversation_id=args.conversation_id, stack=STACK,
            instrumentation=args.instrumentation, scenario=args.scenario, service=SERVICE_NAME,
            question=question, answer=answer, history=history_before, system_prompt=system_prompt,
            documents=documents, calls=turn_calls, retrieval_query=question,
            root_span_name="POST /chat"))
        history.extend([ChatMessage.from_user(question), ChatMessage.from_assistant(answer)])

    provider.force_flush()
    provider.shutdown()
    if instrumentor is not None:
        instrumentor.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
