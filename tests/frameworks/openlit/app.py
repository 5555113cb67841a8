"""Plain ``openai`` RAG chat app auto-instrumented by OpenLIT, for the framework captures.

Per turn, inside the app's ``POST /chat`` SERVER span (same TracerProvider as OpenLIT's spans):

1. ``AsyncOpenAI.embeddings.create`` (``POST /v1/embeddings`` on the fake server), traced by OpenLIT;
2. retrieval, written by the app with OpenLIT's manual-tracing API ``openlit.start_trace(name)`` +
   ``TracedSpan.set_metadata({...})``: OpenLIT has no generic retriever/vector-store API for custom
   retrievers, so the attributes are the ones OpenLIT's own retrieval instrumentations (e.g. its
   DigitalOcean Gradient knowledge-base wrapper) write, which are the GenAI semconv retrieval keys:
   ``gen_ai.operation.name=retrieval``, ``gen_ai.data_source.id``, ``gen_ai.request.top_k``,
   ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents`` (JSON ``[{id, score, content,
   metadata:{title}}]``). Span name ``retrieval <data_source_id>`` as the semconv says;
3. ``AsyncOpenAI.chat.completions.create`` with [system prompt with the documents, history..., question].

Instrumentation ``native`` = ``openlit.init(...)`` (openlit 1.45.0):

- Telemetry: the app builds its own SDK ``TracerProvider``/``LoggerProvider`` with the OTLP/HTTP
  protobuf exporters and sets them global BEFORE ``openlit.init``; ``openlit.init`` detects and reuses
  them (``otel/tracing.py`` / ``otel/events.py``: "Detected existing TracerProvider, reusing it"), so
  ``otlp_endpoint`` is not passed and OpenLIT adds no exporter of its own. OpenLIT emits one
  ``gen_ai.client.inference.operation.details`` log record per chat/embedding call (``disable_events``
  default False), exported to ``/v1/logs``.
- No network besides the fake server: ``pricing_json`` = a local file written to /tmp at runtime
  (default would GET raw.githubusercontent.com/openlit/openlit/main/assets/pricing.json),
  ``disable_metrics=True`` (no MeterProvider/OTLP metrics), ``collect_gpu_stats=False``,
  ``collect_system_metrics=False``; ``openlit_url``/``openlit_api_key`` unset (only used by
  ``openlit.eval``/``get_prompt``, never called).
- ``openlit.init`` also turns on the standard OTel HTTP instrumentors it bundles (httpx, requests,
  urllib3, aiohttp-client, ...). httpx stays on (the ``openai`` client uses it: a production OpenLIT
  app gets those ``POST`` CLIENT spans under each OpenLIT span); ``urllib`` is disabled only because
  the harness's truth reader (``tests/frameworks/truth.py``) uses urllib and would add stray traces.
- Content capture: ON by default (``capture_message_content=True``); switch off with
  ``openlit.init(capture_message_content=False)`` or env
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false``.
- Conversation id: OpenLIT has no session/conversation API for the openai instrumentation (its
  ``gen_ai.conversation.id`` support is only inside agent-framework instrumentations). The app puts
  ``gen_ai.conversation.id`` on its root span and wraps the turn in OpenLIT's documented
  ``openlit.using_attributes({"gen_ai.conversation.id": id})``, which stamps it on every span
  OpenLIT auto-instruments inside the block (embeddings + chat spans and their
  ``gen_ai.client.inference.operation.details`` log records; not the app's own spans, not the httpx
  spans).

Scenarios: ``conversation`` (3 turns, history kept by the app as openai messages), ``stream``
(1 streamed turn, ``stream_options={"include_usage": True}``). One truth line per turn on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from tests.frameworks import app_common as common
from tests.frameworks.truth import ChatCallLog
from tests.support.rag_app import (
    CONVERSATION_QUESTIONS,
    DATA_SOURCE_ID,
    EMBEDDING_MODEL,
    STREAM_QUESTION,
    SYSTEM_TEMPLATE,
    TOP_K,
    format_documents,
    retrieve,
)

STACK = "openlit"
COMBINATIONS = [("native", "conversation"), ("native", "stream")]

# A local price table in OpenLIT's pricing.json format (USD per 1k tokens): without pricing_json,
# openlit.init downloads the table from GitHub.
PRICING = {
    "chat": {common.CHAT_MODEL: {"promptPrice": 0.00015, "completionPrice": 0.0006}},
    "embeddings": {EMBEDDING_MODEL: 0.00002},
    "images": {},
    "audio": {},
}


def setup_telemetry(endpoint: str) -> common.Telemetry:
    """Global tracer + logger providers first; ``openlit.init`` detects and reuses them."""
    telemetry = common.Telemetry(endpoint, logs=True, set_global=True)
    pricing_path = f"/tmp/openlit-pricing-{os.getpid()}.json"
    with open(pricing_path, "w", encoding="utf-8") as fh:
        json.dump(PRICING, fh)

    import openlit

    openlit.init(
        service_name=common.SERVICE_NAME,
        environment="test",
        pricing_json=pricing_path,
        disable_metrics=True,
        collect_gpu_stats=False,
        collect_system_metrics=False,
        capture_message_content=True,  # the default, spelled out
        disabled_instrumentors=["urllib"],  # harness-only traffic (truth.py), see docstring
    )
    os.unlink(pricing_path)
    return telemetry


class RagChat:
    def __init__(self, args: argparse.Namespace, telemetry: common.Telemetry) -> None:
        from openai import AsyncOpenAI

        self.args = args
        self.telemetry = telemetry
        self.client = AsyncOpenAI(base_url=args.openai_base_url, api_key=common.API_KEY)
        self.history: list[dict[str, str]] = []  # the conversation memory: openai messages
        self.calls = ChatCallLog(args.openai_base_url)

    def retrieve_documents(self, query: str) -> list[dict[str, Any]]:
        import openlit

        with openlit.start_trace(f"retrieval {DATA_SOURCE_ID}") as span:
            documents = retrieve(query, TOP_K)
            span.set_metadata({
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": DATA_SOURCE_ID,
                "gen_ai.request.top_k": TOP_K,
                "gen_ai.retrieval.query.text": query,
                "gen_ai.retrieval.documents": json.dumps([
                    {"id": d["id"], "score": d["score"], "content": d["content"],
                     "metadata": {"title": d["title"]}}
                    for d in documents
                ]),
            })
        return documents

    async def chat(self, messages: list[dict[str, str]], stream: bool) -> str:
        if not stream:
            response = await self.client.chat.completions.create(
                model=common.CHAT_MODEL, messages=messages, temperature=0.2, max_tokens=400)
            return response.choices[0].message.content or ""
        response = await self.client.chat.completions.create(
            model=common.CHAT_MODEL, messages=messages, temperature=0.2, max_tokens=400,
            stream=True, stream_options={"include_usage": True})
        parts: list[str] = []
        async for chunk in response:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    async def turn(self, question: str, stream: bool) -> None:
        import openlit

        history = list(self.history)
        # This app's root span: method, route and the conversation id (none of the url/server keys).
        attributes = {"http.request.method": "POST", "http.route": "/chat",
                      "gen_ai.conversation.id": self.args.conversation_id}
        with common.chat_request_span(self.telemetry.tracer, attributes) as root:
            with openlit.using_attributes({"gen_ai.conversation.id": self.args.conversation_id}):
                await self.client.embeddings.create(model=EMBEDDING_MODEL, input=question)
                documents = self.retrieve_documents(question)
                system = SYSTEM_TEMPLATE.format(documents=format_documents(documents))
                messages = [{"role": "system", "content": system}, *history,
                            {"role": "user", "content": question}]
                answer = await self.chat(messages, stream)
            trace_id = common.trace_id_of(root)
        self.history += common.exchange(question, answer)
        common.emit_turn(self.args, trace_id=trace_id, question=question, answer=answer, history=history,
                         system_prompt=system, documents=documents, calls=self.calls.since_last(),
                         retrieval_query=question)


async def run(args: argparse.Namespace) -> None:
    with setup_telemetry(args.endpoint) as telemetry:
        app = RagChat(args, telemetry)
        if args.scenario == "conversation":
            for question in CONVERSATION_QUESTIONS:
                await app.turn(question, stream=False)
        else:
            await app.turn(STREAM_QUESTION, stream=True)
        await app.client.close()


def main(argv: list[str] | None = None) -> int:
    asyncio.run(run(common.parse_args(STACK, COMBINATIONS, argv, description=__doc__.split("\n")[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
