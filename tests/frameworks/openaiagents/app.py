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

from tests.frameworks import app_common as common

STACK = "openaiagents"
COMBINATIONS = [("openinference", "conversation"), ("openinference", "retriever"), ("openinference", "stream")]


async def run(args: argparse.Namespace) -> None:
    from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_client
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    with common.Telemetry(args.endpoint) as telemetry:
        kinds = {"search_docs": "RETRIEVER"} if args.scenario == "retriever" else None
        # Exclusive (default): the OpenInference processor replaces the SDK's OpenAI-backend exporter.
        OpenAIAgentsInstrumentor().instrument(tracer_provider=telemetry.tracer_provider, tool_span_kinds=kinds)
        tracer = telemetry.tracer_provider.get_tracer(common.APP_TRACER)  # unversioned scope, as captured

        set_default_openai_client(AsyncOpenAI(base_url=args.openai_base_url, api_key=common.API_KEY),
                                  use_for_tracing=False)
        search = common.SearchTool()

        @function_tool
        def search_docs(query: str) -> str:
            """Search the Acme Cloud Backup help center.

            Args:
                query: what to look for, in the user's words.
            """
            return json.dumps(search(query), ensure_ascii=False)

        agent = Agent(name="support_agent", instructions=common.AGENT_INSTRUCTIONS, model=common.CHAT_MODEL,
                      tools=[search_docs])
        run_config = RunConfig(workflow_name="Acme support chat", group_id=args.conversation_id)
        items: list[Any] = []  # what the SDK carries from turn to turn (to_input_list())

        async def answer(question: str) -> str:
            nonlocal items
            turn_input = items + [{"role": "user", "content": question}]
            if args.scenario == "stream":
                result = Runner.run_streamed(agent, turn_input, run_config=run_config)
                async for _event in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, turn_input, run_config=run_config)
            items = result.to_input_list()
            return str(result.final_output)

        await common.agent_conversation(args, tracer, search, answer,
                                        session=lambda: using_session(args.conversation_id))


def main(argv: list[str] | None = None) -> int:
    asyncio.run(run(common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.splitlines()[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
