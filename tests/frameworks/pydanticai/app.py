"""A tool-calling RAG chat app on pydantic-ai, traced by pydantic-ai's OWN OpenTelemetry instrumentation.

Stack ``pydanticai`` × instrumentation ``native``:

- ``Agent.instrument_all(InstrumentationSettings(tracer_provider=..., include_content=True))``,
  instrumentation data-format ``version`` left at its default (5 in pydantic-ai-slim 2.68.0): one
  ``invoke_agent`` span per run, one ``chat`` span per model request, one ``execute_tool`` span
  per tool call, messages as ``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON strings.
- The model is ``OpenAIChatModel`` (chat completions) pointed at ``--openai-base-url``.
- Retrieval is a tool: ``search_docs(query)`` returns the knowledge-base documents
  (``tests.support.rag_app.retrieve``: id, title, content, score). The agent decides to call it;
  the fake OpenAI server always calls the first tool first, then answers.
- Conversation id: pydantic-ai 2.68 has a native one, ``agent.run(..., conversation_id=...)``,
  which it writes as ``gen_ai.conversation.id`` on the ``invoke_agent`` span (and, through OTel
  baggage, on the ``chat`` and ``execute_tool`` spans). The app passes it on every turn.
- History: ``message_history=result.all_messages()`` of the previous turn (pydantic-ai's own
  mechanism), so turn N's request carries the earlier user/assistant messages AND the earlier
  tool calls and tool results.

Scenarios: ``conversation`` (3 turns, ``agent.run``) and ``stream`` (1 turn, ``agent.run_stream``:
both chat calls are streamed with ``stream_options.include_usage``).

Stdout: one truth line per turn (``tests.frameworks.truth``); everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from tests.frameworks.truth import ChatCallLog, emit, truth_line
from tests.support.rag_app import CONVERSATION_QUESTIONS, retrieve

STACK = "pydanticai"
INSTRUMENTATION = "native"
SCENARIOS = ("conversation", "stream")
SERVICE_NAME = "rag-demo-app"
CHAT_MODEL = "gpt-4o-mini"
TOP_K = 3
API_KEY = "sk-test-not-a-real-key"
INSTRUCTIONS = (
    "You are the Acme Cloud Backup support assistant. Always call the search_docs tool to look the "
    "question up in the help center, then answer using only the documents it returns. Cite document "
    "ids in square brackets. If the documents do not contain the answer, say you don't know."
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--instrumentation", default=INSTRUMENTATION, choices=[INSTRUMENTATION])
    parser.add_argument("--scenario", default="conversation", choices=SCENARIOS)
    parser.add_argument("--endpoint", default="http://127.0.0.1:4318")
    parser.add_argument("--openai-base-url")
    parser.add_argument("--conversation-id", default="conv-pydanticai")
    parser.add_argument("--exporter", default="http-protobuf", choices=["http-protobuf"])
    return parser.parse_args(argv)


def make_tracer_provider(endpoint: str) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": SERVICE_NAME, "service.version": "1.4.2",
                                "deployment.environment.name": "test"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")))
    return provider


async def run(args: argparse.Namespace) -> None:
    from opentelemetry.trace import SpanKind
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = make_tracer_provider(args.endpoint)
    # pydantic-ai's own instrumentation, on our provider (not the global one), content included.
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=True))
    tracer = provider.get_tracer("rag_demo_app")

    model = OpenAIChatModel(CHAT_MODEL, provider=OpenAIProvider(base_url=args.openai_base_url, api_key=API_KEY))
    agent = Agent(model, instructions=INSTRUCTIONS, name="support_agent")
    retrieved: list[dict[str, Any]] = []
    queries: list[str] = []

    @agent.tool_plain
    def search_docs(query: str) -> list[dict[str, Any]]:
        """Search the Acme Cloud Backup help center.

        Args:
            query: what to look for, in the user's words.
        """
        documents = retrieve(query, TOP_K)
        queries.append(query)
        retrieved.extend(documents)
        return documents

    calls = ChatCallLog(args.openai_base_url)
    history: list[dict[str, str]] = []  # earlier user/assistant TEXT messages (truth only)
    message_history: list[Any] = []  # what pydantic-ai carries from turn to turn
    questions = CONVERSATION_QUESTIONS[:1] if args.scenario == "stream" else CONVERSATION_QUESTIONS
    for question in questions:
        retrieved.clear()
        queries.clear()
        root_attrs = {"http.request.method": "POST", "http.route": "/chat", "url.path": "/chat",
                      "url.scheme": "http", "server.address": "127.0.0.1", "server.port": 8080}
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER, attributes=root_attrs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            if args.scenario == "stream":
                async with agent.run_stream(question, message_history=message_history,
                                            conversation_id=args.conversation_id) as result:
                    async for _text in result.stream_output():
                        pass
                    answer = await result.get_output()
            else:
                result = await agent.run(question, message_history=message_history,
                                         conversation_id=args.conversation_id)
                answer = result.output
            root.set_attribute("http.response.status_code", 200)
        message_history = result.all_messages()
        turn_calls = calls.since_last()
        final_messages = turn_calls[-1]["messages"] if turn_calls else []
        system = next((m["content"] for m in final_messages if m["role"] == "system"), None)
        emit(truth_line(
            trace_id=trace_id, conversation_id=args.conversation_id, stack=STACK,
            instrumentation=args.instrumentation, scenario=args.scenario, service=SERVICE_NAME,
            question=question, answer=answer, history=history, system_prompt=system,
            documents=list(retrieved), calls=turn_calls, retrieval_query=queries[0] if queries else None,
            root_span_name="POST /chat",
        ))
        history = history + [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    provider.force_flush()
    provider.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(json.dumps([[INSTRUMENTATION, s] for s in SCENARIOS]))
        return 0
    if not args.openai_base_url:
        print("--openai-base-url is required", file=sys.stderr)
        return 2
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
