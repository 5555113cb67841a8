"""A tool-calling RAG chat app on the OpenAI Agents SDK, traced by OpenInference's openai-agents instrumentation.

Stack ``openaiagents`` × instrumentation ``openinference``:

- ``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)``: it registers an
  ``OpenInferenceTracingProcessor`` with the SDK's tracing and, being exclusive by default,
  REPLACES the SDK's default processors, so nothing is uploaded to OpenAI's trace backend (the
  SDK's own exporter never runs; the OpenAI client is also not used for tracing).
- The model is the SDK default: ``OpenAIResponsesModel`` (``POST /v1/responses``) through
  ``set_default_openai_client(AsyncOpenAI(base_url=--openai-base-url), use_for_tracing=False)``.
- ``Agent(name="support_agent", instructions=...)`` (the system prompt, sent as the Responses
  API ``instructions``) with one ``@function_tool`` ``search_docs(query)`` returning the
  knowledge-base documents as a JSON string (``tests.support.rag_app.retrieve``: id, title,
  content, score). The fake OpenAI server always calls the first tool first, then answers.
- Conversation id: OpenInference's documented way, ``using_session(conversation_id)`` around each
  turn (its OITracer stamps ``session.id`` on every span it starts), plus the SDK's own
  ``RunConfig(group_id=conversation_id)`` (which the OpenInference processor does not export).
- History: ``result.to_input_list()`` of the previous turn + the new user message (the SDK's
  documented manual conversation management), so later requests carry the earlier user and
  assistant messages AND the earlier function calls and their outputs.

Scenarios: ``conversation`` (3 turns; ``search_docs`` is a TOOL span, the instrumentor's default)
and ``retriever`` (the same 3 turns with ``tool_span_kinds={"search_docs": "RETRIEVER"}``, which
makes the instrumentor emit the tool span as a RETRIEVER span with ``retrieval.documents.*``),
``stream`` (1 turn, ``Runner.run_streamed``: both model calls are streamed Responses API calls).

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

STACK = "openaiagents"
INSTRUMENTATION = "openinference"
SCENARIOS = ("conversation", "retriever", "stream")
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
    parser.add_argument("--conversation-id", default="conv-openaiagents")
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
    from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_client
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.trace import SpanKind

    provider = make_tracer_provider(args.endpoint)
    kinds = {"search_docs": "RETRIEVER"} if args.scenario == "retriever" else None
    # Exclusive (default): the OpenInference processor replaces the SDK's OpenAI-backend exporter.
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, tool_span_kinds=kinds)
    tracer = provider.get_tracer("rag_demo_app")

    set_default_openai_client(AsyncOpenAI(base_url=args.openai_base_url, api_key=API_KEY), use_for_tracing=False)
    retrieved: list[dict[str, Any]] = []
    queries: list[str] = []

    @function_tool
    def search_docs(query: str) -> str:
        """Search the Acme Cloud Backup help center.

        Args:
            query: what to look for, in the user's words.
        """
        documents = retrieve(query, TOP_K)
        queries.append(query)
        retrieved.extend(documents)
        return json.dumps(documents, ensure_ascii=False)

    agent = Agent(name="support_agent", instructions=INSTRUCTIONS, model=CHAT_MODEL, tools=[search_docs])
    run_config = RunConfig(workflow_name="Acme support chat", group_id=args.conversation_id)

    calls = ChatCallLog(args.openai_base_url)
    history: list[dict[str, str]] = []  # earlier user/assistant TEXT messages (truth only)
    items: list[Any] = []  # what the SDK carries from turn to turn (to_input_list())
    questions = CONVERSATION_QUESTIONS[:1] if args.scenario == "stream" else CONVERSATION_QUESTIONS
    for question in questions:
        retrieved.clear()
        queries.clear()
        root_attrs = {"http.request.method": "POST", "http.route": "/chat", "url.path": "/chat",
                      "url.scheme": "http", "server.address": "127.0.0.1", "server.port": 8080}
        with using_session(args.conversation_id), \
                tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER, attributes=root_attrs) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            turn_input = items + [{"role": "user", "content": question}]
            if args.scenario == "stream":
                result = Runner.run_streamed(agent, turn_input, run_config=run_config)
                async for _event in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, turn_input, run_config=run_config)
            root.set_attribute("http.response.status_code", 200)
        answer = str(result.final_output)
        items = result.to_input_list()
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
