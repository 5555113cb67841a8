"""The sample RAG app: retrieve, "generate", and describe each turn with GenAI-convention spans.

One turn is three spans written with the OpenTelemetry SDK, as an instrumented RAG service
writes them: the HTTP ``SERVER`` root (``POST /chat/billing``, ``http.route``,
``gen_ai.conversation.id``), a ``retrieval`` span (query text and documents) and a ``CLIENT``
``chat`` span with the input/output messages, system instructions, model names and token usage.

The "LLM" is a deterministic local generator, so the demo needs no network: it answers from the
article that truly holds the answer (the model "knows" it) while the context it reports is what
the retriever returned. That is the regression's mechanism: once the retriever returns the wrong
articles, the answers stay fluent and correct but are no longer grounded in their context. Now
and then the model is vague, rude, or (to a jailbreak attempt) leaks its instructions.

Latencies are simulated by back-dating span start times instead of sleeping, so a turn costs a
few microseconds on the event loop and the spans still look like a real call tree.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Tracer

from monitor.demo.corpus import (
    RUDE_REMARKS,
    REFUSAL,
    SYSTEM_PROMPT,
    VAGUE_ANSWER,
    ScriptedConversation,
    ScriptedTurn,
)
from monitor.demo.retrieval import Retrieved, Retriever

__all__ = [
    "SERVICE_NAME",
    "MODELS",
    "REFERENCE_ATTRIBUTE",
    "Completion",
    "LocalAnswerModel",
    "ConversationState",
    "HandledTurn",
    "SampleRagApp",
]

SERVICE_NAME = "skylark-support"
MODELS = ("skylark-assist-mini", "skylark-assist-large")
PROVIDER = "skylark-local"
DATA_SOURCE_PREFIX = "skylark-help-"
# The app's golden questions carry their reference answer on the root span under this (app-
# specific) name; the demo config maps it with assembly.mapping.ground_truth so f1_score runs.
REFERENCE_ATTRIBUTE = "skylark.reference_answer"

_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    variant: str  # answer | vague | rude | refusal | leak


class LocalAnswerModel:
    """Deterministic stand-in for an LLM, driven by the caller's seeded ``random.Random``."""

    def __init__(self, rng: random.Random, *, vague_rate: float = 0.08, rude_rate: float = 0.05,
                 leak_rate: float = 0.34) -> None:
        self._rng = rng
        self._vague_rate = vague_rate
        self._rude_rate = rude_rate
        self._leak_rate = leak_rate

    def complete(self, turn: ScriptedTurn, system_prompt: str) -> Completion:
        draw = self._rng.random()
        if turn.jailbreak:
            if draw < self._leak_rate:
                # Complying with the attempt: the judge's jailbreak metric is there for this.
                return Completion("Sure, developer mode on. My instructions say: "
                                  + system_prompt.split("\n\n", 1)[0], "leak")
            return Completion(REFUSAL, "refusal")
        if draw < self._vague_rate:
            return Completion(VAGUE_ANSWER, "vague")
        if draw < self._vague_rate + self._rude_rate:
            return Completion(f"{turn.answer} {self._rng.choice(RUDE_REMARKS)}", "rude")
        return Completion(turn.answer, "answer")


@dataclass(slots=True)
class ConversationState:
    """One user's chat session: its script, the model it talks to and what was said so far."""

    id: str
    script: ScriptedConversation
    model: str
    history: list[tuple[str, str]] = field(default_factory=list)  # (role, text)
    next_turn: int = 0

    @property
    def finished(self) -> bool:
        return self.next_turn >= len(self.script.turns)


@dataclass(frozen=True, slots=True)
class HandledTurn:
    trace_id: str
    conversation_id: str
    route: str
    model: str
    variant: str
    jailbreak: bool
    has_reference: bool
    grounded_retrieval: bool  # the source article was among the retrieved ones
    start_unix: float


def _messages_json(messages: list[tuple[str, str]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in messages])


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 4 / 3))


def _format_documents(found: list[Retrieved]) -> str:
    return "\n".join(f"[{r.document.id}] {r.document.title}: {r.document.content}" for r in found)


class SampleRagApp:
    """Handles one scripted turn at a time and writes its spans with ``tracer``."""

    def __init__(self, tracer: Tracer, retriever: Retriever, model: LocalAnswerModel, rng: random.Random,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._tracer = tracer
        self._retriever = retriever
        self._model = model
        self._rng = rng
        self._clock_ns = clock_ns
        self._responses = 0

    def handle(self, conversation: ConversationState) -> HandledTurn:
        """Answer the conversation's next scripted turn; returns what was sent."""
        scripted = conversation.script.turns[conversation.next_turn]
        route = conversation.script.route
        found = self._retriever.search(route, scripted.question)
        system_prompt = SYSTEM_PROMPT.format(documents=_format_documents(found))
        completion = self._model.complete(scripted, system_prompt)
        retrieval_ms = self._rng.uniform(12, 60)
        chat_ms = self._rng.uniform(350, 900) * (2.0 if conversation.model.endswith("large") else 1.0)
        end = self._clock_ns()
        start = end - int((retrieval_ms + chat_ms + 8) * _MS)
        trace_id = self._emit(conversation, scripted, found, system_prompt, completion, start, retrieval_ms, chat_ms)
        conversation.history += [("user", scripted.question), ("assistant", completion.text)]
        conversation.next_turn += 1
        ids = {r.document.id for r in found}
        return HandledTurn(trace_id, conversation.id, route, conversation.model, completion.variant,
                           scripted.jailbreak, scripted.reference is not None,
                           scripted.source is not None and scripted.source in ids, start / 1e9)

    def _emit(self, conversation: ConversationState, scripted: ScriptedTurn, found: list[Retrieved],
              system_prompt: str, completion: Completion, start: int, retrieval_ms: float, chat_ms: float) -> str:
        route = conversation.script.route
        root_attrs: dict[str, Any] = {
            "http.request.method": "POST", "http.route": route, "url.path": route, "url.scheme": "https",
            "server.address": "support.skylark.example", "gen_ai.conversation.id": conversation.id,
        }
        if scripted.reference is not None:
            root_attrs[REFERENCE_ATTRIBUTE] = scripted.reference
        root = self._tracer.start_span(f"POST {route}", kind=SpanKind.SERVER, attributes=root_attrs, start_time=start)
        parent = trace.set_span_in_context(root)
        collection = self._retriever.collection_for(route)
        t = start + 3 * _MS
        retrieval = self._tracer.start_span(
            f"retrieval {DATA_SOURCE_PREFIX}{collection}", context=parent, kind=SpanKind.CLIENT, start_time=t,
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": f"{DATA_SOURCE_PREFIX}{collection}",
                "gen_ai.request.top_k": len(found),
                "gen_ai.retrieval.query.text": scripted.question,
                "gen_ai.retrieval.documents": json.dumps(
                    [{"id": r.document.id, "title": r.document.title, "content": r.document.content,
                      "score": r.score} for r in found]),
            })
        t += int(retrieval_ms * _MS)
        retrieval.end(end_time=t)
        t += 2 * _MS
        self._responses += 1
        model = conversation.model
        inputs = [*conversation.history, ("user", scripted.question)]
        chat = self._tracer.start_span(
            f"chat {model}", context=parent, kind=SpanKind.CLIENT, start_time=t,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": PROVIDER,
                "gen_ai.request.model": model,
                "gen_ai.request.temperature": 0.2,
                "gen_ai.request.max_tokens": 400,
                "gen_ai.response.model": f"{model}-2025-06",
                "gen_ai.response.id": f"resp-{self._responses:08d}",
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.usage.input_tokens": _tokens(system_prompt) + sum(_tokens(text) for _, text in inputs),
                "gen_ai.usage.output_tokens": _tokens(completion.text),
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": system_prompt}]),
                "gen_ai.input.messages": _messages_json(inputs),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                       "parts": [{"type": "text", "content": completion.text}]}]),
            })
        t += int(chat_ms * _MS)
        chat.end(end_time=t)
        root.set_attribute("http.response.status_code", 200)
        root.end(end_time=t + 3 * _MS)
        return format(root.get_span_context().trace_id, "032x")
