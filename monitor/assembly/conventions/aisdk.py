"""The Vercel AI SDK's own telemetry (``experimental_telemetry: { isEnabled: true }``), majors 4–6.

Spans of scope ``ai``, each keyed by ``ai.operationId``:

- ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject``: one per
  call of the SDK function, wrapping its steps (``ai.prompt`` = the function's arguments as JSON,
  ``ai.usage.*`` = the sum over the steps). Read as the entry span: it is not a model call.
- ``….doGenerate`` / ``….doStream``: one per model call (step). ``ai.prompt.messages`` (JSON, the
  AI SDK's message shape: ``content`` a string or a list of ``text`` / ``tool-call`` /
  ``tool-result`` parts), ``ai.response.text`` (or ``ai.response.object``), ``ai.model.id`` (the
  requested model), ``ai.response.model`` (the served one), ``ai.response.id``,
  ``ai.model.provider`` (``openai.chat``, ``anthropic.messages``…), and usage as
  ``ai.usage.inputTokens``/``outputTokens`` (5+) or ``promptTokens``/``completionTokens`` (4).
  A multi-step call has one per step; the answer is the last step's text.
- ``ai.toolCall``: ``ai.toolCall.args`` and ``ai.toolCall.result`` (``.output`` in some
  releases); a tool that returns a list of documents is the retrieval step.

There is no ``gen_ai.operation.name`` and no ``gen_ai.*.messages``: without this module nothing
here is a chat call. The conversation id is whatever the app passes in
``experimental_telemetry.metadata`` (``ai.telemetry.metadata.<key>``) or, with AI SDK 7's runtime
context, ``ai.settings.context.<key>``; the keys read are :data:`CONVERSATION_KEYS`; an app using
another key names it in ``assembly.mapping.conversation_id``.

Also read here: spans that OpenLLMetry-JS or OpenInference rewrote keep ``ai.operationId``,
which says which span is the wrapper and which the model call.
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.assembly.conventions.base import (
    CHAT, EMBEDDING, ENTRY, TOOL, LlmCall, Retrieval, TraceView, attr_str)
from monitor.assembly.messages import as_int, as_str, documents_from_value, load_json
from monitor.model import AttributeSelection, Message, SpanRecord

__all__ = ["CONVENTION", "AISDK", "CONVERSATION_KEYS", "ai_sdk_messages"]

OPERATION_ID = "ai.operationId"
PROMPT = "ai.prompt"
PROMPT_MESSAGES = "ai.prompt.messages"
RESPONSE_TEXT = "ai.response.text"
RESPONSE_OBJECT = "ai.response.object"
RESPONSE_MODEL = "ai.response.model"
RESPONSE_ID = "ai.response.id"
MODEL_ID = "ai.model.id"
MODEL_PROVIDER = "ai.model.provider"
INPUT_TOKENS = ("ai.usage.inputTokens", "ai.usage.promptTokens")
OUTPUT_TOKENS = ("ai.usage.outputTokens", "ai.usage.completionTokens")
TOOL_ARGS = "ai.toolCall.args"
TOOL_INPUT = "ai.toolCall.input"
TOOL_RESULT = "ai.toolCall.result"
TOOL_OUTPUT = "ai.toolCall.output"
METADATA_PREFIX = "ai.telemetry.metadata."
CONTEXT_PREFIX = "ai.settings.context."
_ID_NAMES = ("sessionId", "conversationId", "threadId", "chatId",
             "session_id", "conversation_id", "thread_id", "chat_id")
CONVERSATION_KEYS: tuple[str, ...] = tuple(p + k for p in (METADATA_PREFIX, CONTEXT_PREFIX) for k in _ID_NAMES)

_FUNCTIONS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_MODEL_CALLS = frozenset(f + suffix for f in _FUNCTIONS for suffix in (".doGenerate", ".doStream"))
_EMBEDDINGS = frozenset({"ai.embed", "ai.embedMany", "ai.embed.doEmbed", "ai.embedMany.doEmbed"})
_TOOL_CALL = "ai.toolCall"
# The AI SDK's provider ids are "<provider>.<api>"; the GenAI convention's names where they differ.
_PROVIDERS = {"azure": "azure.ai.openai", "google": "gcp.gemini", "vertex": "gcp.vertex_ai",
              "amazon-bedrock": "aws.bedrock", "mistral": "mistral_ai", "xai": "x_ai"}
_HINT = ("AI SDK: pass experimental_telemetry: { isEnabled: true } to generateText/streamText and leave "
         "recordInputs/recordOutputs on (AI SDK 7: the same in telemetry); with OpenLLMetry-JS also "
         "traceContent: true (TRACELOOP_TRACE_CONTENT)")


def _operation(span: SpanRecord) -> str:
    op = span.attributes.get(OPERATION_ID)
    return op if isinstance(op, str) else ""


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
        return str(part["text"])
    return None


def ai_sdk_messages(value: Any) -> list[Message]:
    """``ai.prompt.messages``: ``[{role, content}]`` with ``content`` a string or a list of parts;
    only text parts are text (a tool-call or tool-result message without text is left out)."""
    data = load_json(value)
    if not isinstance(data, list):
        return []
    out = []
    for item in data:
        if not isinstance(item, dict):
            continue
        role = as_str(item.get("role")) or "user"
        content = item.get("content")
        parts = content if isinstance(content, list) else [content]
        texts = [t for t in (_part_text(p) for p in parts) if t is not None]
        if texts:
            out.append(Message(role, "\n".join(texts)))
    return out


def _first_int(a: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for k in keys:
        v = as_int(a.get(k))
        if v is not None:
            return v
    return None


def _provider(a: Mapping[str, Any]) -> str | None:
    raw = attr_str(a, MODEL_PROVIDER)
    if raw is None:
        return None
    name = raw.split(".", 1)[0]
    return _PROVIDERS.get(name, name)


def _answer(a: Mapping[str, Any]) -> list[Message]:
    text = a.get(RESPONSE_TEXT)
    if isinstance(text, str) and text:
        return [Message("assistant", text)]
    obj = a.get(RESPONSE_OBJECT)  # generateObject / streamObject: the object's JSON is the answer
    if isinstance(obj, str) and obj:
        return [Message("assistant", obj)]
    return []


def _tool_query(arguments: Any) -> str | None:
    args = load_json(arguments)
    if isinstance(args, dict):
        return next((v for v in args.values() if isinstance(v, str) and v), None)
    return as_str(arguments)


class AISDK:
    name = "aisdk"
    role_keys = frozenset({OPERATION_ID})
    reads = AttributeSelection(frozenset({
        OPERATION_ID, PROMPT, PROMPT_MESSAGES, RESPONSE_TEXT, RESPONSE_OBJECT, RESPONSE_MODEL, RESPONSE_ID, MODEL_ID,
        MODEL_PROVIDER, *INPUT_TOKENS, *OUTPUT_TOKENS, TOOL_ARGS, TOOL_INPUT, TOOL_RESULT, TOOL_OUTPUT,
        *CONVERSATION_KEYS}))

    def role(self, span: SpanRecord) -> str | None:
        op = _operation(span)
        if op in _MODEL_CALLS:
            return CHAT
        if op == _TOOL_CALL:
            return TOOL
        if op in _FUNCTIONS:
            return ENTRY
        if op in _EMBEDDINGS:
            return EMBEDDING
        return None

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        a = span.attributes
        if _operation(span) not in _MODEL_CALLS:
            return None
        return LlmCall(
            self.name,
            ai_sdk_messages(a.get(PROMPT_MESSAGES)),
            _answer(a),
            request_model=attr_str(a, MODEL_ID),
            response_model=attr_str(a, RESPONSE_MODEL),
            provider=_provider(a),
            response_id=attr_str(a, RESPONSE_ID),
            input_tokens=_first_int(a, INPUT_TOKENS),
            output_tokens=_first_int(a, OUTPUT_TOKENS),
        )

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        a = span.attributes
        if _operation(span) != _TOOL_CALL:
            return None
        result = a.get(TOOL_RESULT, a.get(TOOL_OUTPUT))
        docs = documents_from_value(result)
        if not docs:
            return None
        return Retrieval(docs, _tool_query(a.get(TOOL_ARGS, a.get(TOOL_INPUT))))

    def user_input(self, span: SpanRecord) -> str | None:
        if _operation(span) not in _FUNCTIONS:
            return None
        prompt = load_json(span.attributes.get(PROMPT))
        if not isinstance(prompt, dict):
            return None
        if isinstance(prompt.get("prompt"), str) and prompt["prompt"].strip():
            return str(prompt["prompt"])
        messages = ai_sdk_messages(prompt.get("messages"))
        return next((m.content for m in reversed(messages) if m.role == "user"), None)

    def conversation_id(self, span: SpanRecord) -> str | None:
        a = span.attributes
        for key in CONVERSATION_KEYS:
            v = attr_str(a, key)
            if v:
                return v
        return None

    def content_hint(self, span: SpanRecord) -> str | None:
        return _HINT if _operation(span) in _MODEL_CALLS else None

    def diagnose(self, span: SpanRecord) -> str | None:
        op = _operation(span)
        if op and self.role(span) is None:
            return (f"an AI SDK span with ai.operationId '{op}', which is no text or object generation, tool "
                    f"call or embedding that rag-monitor reads")
        # The AI SDK names its spans after the operation (OpenLLMetry-JS renames them: its GenAI
        # attributes then speak for the span).
        if not op and span.name.startswith(("ai.generate", "ai.stream")):
            return ("an AI SDK span without ai.operationId: its attributes were dropped or renamed on the way "
                    "(a span processor or collector that filters attributes?)")
        return None


CONVENTION = AISDK()
