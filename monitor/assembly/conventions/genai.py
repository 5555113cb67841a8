"""OpenTelemetry GenAI semantic conventions (1.3x+): spans, and content in log records.

Covers opentelemetry-instrumentation-openai-v2 / util-genai, OpenLLMetry ≥0.5x (which writes GenAI
message attributes), pydantic-ai's own instrumentation, OpenLIT and any emitter that follows the
GenAI semconv: ``gen_ai.operation.name`` says what a span is; messages are JSON in
``gen_ai.input.messages``/``gen_ai.output.messages`` (or structured, in log records).
"""

from __future__ import annotations

from typing import Any, Sequence

from monitor.assembly.conventions.base import (
    CHAT, EMBEDDING, ENTRY, RETRIEVAL, TOOL, LlmCall, Retrieval, TraceView, attr_str)
from monitor.assembly.messages import as_int, as_str, documents_from_value, genai_messages, genai_text, load_json
from monitor.model import AttributeSelection, LogRecord, Message, SpanRecord

__all__ = ["CONVENTION", "GenAI"]

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # ≤1.36 name of the provider
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
CONVERSATION_ID = "gen_ai.conversation.id"
INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
RETRIEVAL_QUERY = "gen_ai.retrieval.query.text"
TOOL_RESULT = "gen_ai.tool.call.result"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"

CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "responses"})
EMBEDDING_OPERATIONS = frozenset({"embeddings", "embedding", "create_embeddings"})
RETRIEVAL_OPERATIONS = frozenset({"retrieval", "retrieve", "vector_db_retrieve"})
ENTRY_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})

EVENT_OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_CHOICE = "gen_ai.choice"
EVENT_NAME_ATTRIBUTE = "event.name"  # before LogRecord.event_name existed
MESSAGE_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}

# Scope name prefix → the switch that makes that library record message content.
_CONTENT_SWITCHES = (
    ("opentelemetry.instrumentation.openai_v2",
     "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT / EVENT_ONLY "
     "and export logs to the sidecar too)"),
    ("opentelemetry.util.genai",
     "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT / EVENT_ONLY "
     "and export logs to the sidecar too)"),
    ("opentelemetry.instrumentation.",
     "OpenLLMetry: set TRACELOOP_TRACE_CONTENT=true (or Traceloop.init(trace_content=True)); with "
     "use_attributes=False the content is in log records: export logs to the sidecar too"),
    ("pydantic-ai", "pydantic-ai: InstrumentationSettings(include_content=True)"),
    ("openlit", "OpenLIT: openlit.init(capture_message_content=True)"),
)
_GENERIC_SWITCH = ("enable message-content capture in the GenAI instrumentation (for the OpenTelemetry "
                   "contrib instrumentations: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY); "
                   "if content goes to log records, export logs to the sidecar too")


def _event_name(r: LogRecord) -> str:
    return r.event_name or as_str(r.attributes.get(EVENT_NAME_ATTRIBUTE)) or ""


def _first_int(a: Any, keys: Sequence[str]) -> int | None:
    for k in keys:
        v = as_int(a.get(k))
        if v is not None:
            return v
    return None


class GenAI:
    name = "genai"
    role_keys = frozenset({OPERATION, RETRIEVAL_DOCUMENTS, INPUT_MESSAGES, OUTPUT_MESSAGES})
    reads = AttributeSelection(frozenset({
        OPERATION, PROVIDER, SYSTEM, REQUEST_MODEL, RESPONSE_MODEL, RESPONSE_ID, CONVERSATION_ID, *INPUT_TOKENS,
        *OUTPUT_TOKENS, INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, RETRIEVAL_DOCUMENTS, RETRIEVAL_QUERY,
        TOOL_RESULT, TOOL_ARGUMENTS}))

    def role(self, span: SpanRecord) -> str | None:
        a = span.attributes
        op = a.get(OPERATION)
        if op in CHAT_OPERATIONS:
            return CHAT
        if op in EMBEDDING_OPERATIONS:
            return EMBEDDING
        if op in RETRIEVAL_OPERATIONS or RETRIEVAL_DOCUMENTS in a:
            return RETRIEVAL
        if op == "execute_tool":
            return TOOL
        if op in ENTRY_OPERATIONS:
            return ENTRY
        if op is None and (INPUT_MESSAGES in a or OUTPUT_MESSAGES in a):
            # Messages without an operation name are a model call: OpenLLMetry-JS writes them on
            # the AI SDK's spans and names the operation only in the span name.
            return CHAT
        return None

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        a = span.attributes
        call = LlmCall(
            self.name,
            request_model=attr_str(a, REQUEST_MODEL),
            response_model=attr_str(a, RESPONSE_MODEL),
            provider=attr_str(a, PROVIDER) or attr_str(a, SYSTEM),
            response_id=attr_str(a, RESPONSE_ID),
            input_tokens=_first_int(a, INPUT_TOKENS),
            output_tokens=_first_int(a, OUTPUT_TOKENS),
        )
        instr = genai_text(load_json(a.get(SYSTEM_INSTRUCTIONS)))
        if instr:
            call.system = [instr]
        if INPUT_MESSAGES in a or OUTPUT_MESSAGES in a:
            call.inputs = genai_messages(a.get(INPUT_MESSAGES))
            call.outputs = genai_messages(a.get(OUTPUT_MESSAGES))
        if not call.inputs or not call.outputs:
            from_logs = self._from_logs(span, trace)
            if from_logs is not None:
                call = call.merge(from_logs) if call.has_content else from_logs.merge(call)
        return call

    def _from_logs(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        """Content sent as log records: the operation-details record, or the older per-message
        events. Records point at the chat span; a streamed ``gen_ai.choice`` may point at an
        ancestor or nowhere, so such records count when they fall inside the call's time."""
        mine = list(trace.logs_by_span.get(span.span_id, ()))
        if not any(_event_name(r) in (EVENT_CHOICE, EVENT_OPERATION_DETAILS) for r in mine):
            parents = set(trace.ancestors(span))
            lo, hi = span.start_time_unix_nano, span.end_time_unix_nano + 1_000_000_000
            mine += [r for r in trace.logs
                     if (not r.span_id or r.span_id in parents) and lo <= r.time_unix_nano <= hi]
        inputs: list[Message] = []
        outputs: list[Message] = []
        for r in sorted(mine, key=lambda r: r.time_unix_nano):
            name = _event_name(r)
            if name == EVENT_OPERATION_DETAILS:
                text = genai_text(load_json(r.attributes.get(SYSTEM_INSTRUCTIONS)))
                return LlmCall("genai-log", genai_messages(r.attributes.get(INPUT_MESSAGES)),
                               genai_messages(r.attributes.get(OUTPUT_MESSAGES)), [text] if text else [])
            body = r.body if isinstance(r.body, dict) else {}
            if name in MESSAGE_EVENT_ROLES:
                text = genai_text(body.get("content")) if body else as_str(r.body)
                if text is not None:
                    inputs.append(Message(as_str(body.get("role")) or MESSAGE_EVENT_ROLES[name], text))
            elif name == EVENT_CHOICE:
                inner = body.get("message")
                msg: dict[str, Any] = inner if isinstance(inner, dict) else body
                text = genai_text(msg.get("content"))
                if text is not None:
                    outputs.append(Message(as_str(msg.get("role")) or "assistant", text))
        if inputs or outputs:
            return LlmCall("genai-events", inputs, outputs)
        return None

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        a = span.attributes
        if RETRIEVAL_DOCUMENTS in a:
            docs = documents_from_value(a.get(RETRIEVAL_DOCUMENTS))
            return Retrieval(docs, attr_str(a, RETRIEVAL_QUERY)) if docs else None
        if TOOL_RESULT in a:
            docs = documents_from_value(a.get(TOOL_RESULT))
            if docs:
                return Retrieval(docs, _tool_query(a.get(TOOL_ARGUMENTS)))
        return None

    def user_input(self, span: SpanRecord) -> str | None:
        if span.attributes.get(OPERATION) not in ENTRY_OPERATIONS:
            return None
        msgs = genai_messages(span.attributes.get(INPUT_MESSAGES))
        return next((m.content for m in reversed(msgs) if m.role == "user"), None)

    def conversation_id(self, span: SpanRecord) -> str | None:
        return attr_str(span.attributes, CONVERSATION_ID)

    def diagnose(self, span: SpanRecord) -> str | None:
        return _diagnose(span)

    def content_hint(self, span: SpanRecord) -> str | None:
        if self.role(span) != CHAT:
            return None
        for prefix, hint in _CONTENT_SWITCHES:
            if span.scope_name.startswith(prefix):
                return hint
        return _GENERIC_SWITCH


def _diagnose(span: SpanRecord) -> str | None:
    a = span.attributes
    op = a.get(OPERATION)
    described = any(k in a for k in (REQUEST_MODEL, RESPONSE_MODEL, *INPUT_TOKENS, *OUTPUT_TOKENS))
    if op is None and described:
        switch = next((hint for prefix, hint in _CONTENT_SWITCHES if span.scope_name.startswith(prefix)),
                      _GENERIC_SWITCH)
        return ("a GenAI span with a model and token counts but neither gen_ai.operation.name nor "
                f"gen_ai.input/output.messages, so it cannot be told from a wrapper: {switch}")
    if isinstance(op, str) and described and op not in _KNOWN_OPERATIONS:
        return f"a GenAI span whose gen_ai.operation.name '{op}' is not a chat, retrieval, tool or agent operation"
    return None


_KNOWN_OPERATIONS = CHAT_OPERATIONS | EMBEDDING_OPERATIONS | RETRIEVAL_OPERATIONS | ENTRY_OPERATIONS | {"execute_tool"}


def _tool_query(arguments: Any) -> str | None:
    args = load_json(arguments)
    if isinstance(args, dict):
        return next((v for v in args.values() if isinstance(v, str) and v), None)
    return as_str(arguments)


CONVENTION = GenAI()
