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
import sys
from typing import Any

from tests.frameworks import app_common as common

STACK = "pydanticai"
COMBINATIONS = [("native", "conversation"), ("native", "stream")]


async def run(args: argparse.Namespace) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with common.Telemetry(args.endpoint) as telemetry:
        # pydantic-ai's own instrumentation, on our provider (not the global one), content included.
        Agent.instrument_all(InstrumentationSettings(tracer_provider=telemetry.tracer_provider,
                                                     include_content=True))
        tracer = telemetry.tracer_provider.get_tracer(common.APP_TRACER)  # unversioned scope, as captured

        model = OpenAIChatModel(common.CHAT_MODEL,
                                provider=OpenAIProvider(base_url=args.openai_base_url, api_key=common.API_KEY))
        agent = Agent(model, instructions=common.AGENT_INSTRUCTIONS, name="support_agent")
        search = common.SearchTool()

        @agent.tool_plain
        def search_docs(query: str) -> list[dict[str, Any]]:
            """Search the Acme Cloud Backup help center.

            Args:
                query: what to look for, in the user's words.
            """
            return search(query)

        message_history: list[Any] = []  # what pydantic-ai carries from turn to turn

        async def answer(question: str) -> str:
            nonlocal message_history
            if args.scenario == "stream":
                async with agent.run_stream(question, message_history=message_history,
                                            conversation_id=args.conversation_id) as result:
                    async for _text in result.stream_output():
                        pass
                    output = await result.get_output()
            else:
                result = await agent.run(question, message_history=message_history,
                                         conversation_id=args.conversation_id)
                output = result.output
            message_history = result.all_messages()
            return output

        await common.agent_conversation(args, tracer, search, answer)


def main(argv: list[str] | None = None) -> int:
    asyncio.run(run(common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.splitlines()[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
