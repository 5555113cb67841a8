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

import os
import sys
from typing import Any

# Before haystack is imported: no PostHog telemetry upload.
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"

from tests.frameworks import app_common as common  # noqa: E402
from tests.frameworks.truth import ChatCallLog  # noqa: E402
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
COMBINATIONS = [("openinference", "conversation"), ("native", "conversation")]

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
        api_key=Secret.from_token(common.API_KEY), model=common.CHAT_MODEL, api_base_url=openai_base_url,
        generation_kwargs={"temperature": 0.2, "max_tokens": 400}, max_retries=0, timeout=30))
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.messages")
    return pipe


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.split("\n")[0])

    telemetry = common.Telemetry(args.endpoint)
    provider = telemetry.tracer_provider
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
    calls = ChatCallLog(args.openai_base_url)
    history: list[ChatMessage] = []  # the app's conversation memory, as Haystack ChatMessages

    for question in CONVERSATION_QUESTIONS:
        history_before = [{"role": m.role.value, "content": m.text} for m in history]
        root_attrs = dict(common.ROOT_SPAN_ATTRIBUTES)
        if args.instrumentation == "native":
            root_attrs["gen_ai.conversation.id"] = args.conversation_id
        if args.instrumentation == "openinference":
            from openinference.instrumentation import using_session

            session_cm: Any = using_session(args.conversation_id)
        else:
            from contextlib import nullcontext

            session_cm = nullcontext()

        with session_cm, common.chat_request_span(telemetry.tracer, root_attrs) as root:
            trace_id = common.trace_id_of(root)
            result = pipe.run(
                {"retriever": {"query": question},
                 "prompt_builder": {"question": question, "history": list(history)}},
                include_outputs_from={"retriever", "prompt_builder"},
            )
            reply = result["llm"]["replies"][0]
            answer = reply.text

        prompt = result["prompt_builder"]["prompt"]
        system_prompt = prompt[0].text if prompt and prompt[0].role.value == "system" else None
        documents = [{"id": d.id, "title": d.meta.get("title"), "content": d.content, "score": d.score}
                     for d in result["retriever"]["documents"]]
        turn_calls = calls.since_last()
        sent = turn_calls[-1]["messages"] if turn_calls else []
        if sent and sent[0]["role"] == "system" and sent[0]["content"] != system_prompt:
            log("WARNING: rendered system prompt differs from the one the server got")
        common.emit_turn(args, trace_id=trace_id, question=question, answer=answer, history=history_before,
                         system_prompt=system_prompt, documents=documents, calls=turn_calls, retrieval_query=question)
        history.extend([ChatMessage.from_user(question), ChatMessage.from_assistant(answer)])

    telemetry.shutdown()
    if instrumentor is not None:
        instrumentor.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
