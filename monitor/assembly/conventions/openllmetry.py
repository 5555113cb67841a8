"""OpenLLMetry (Traceloop): ``traceloop.*`` workflow/task/agent spans from its decorators and
framework instrumentations, ``llm.request.type`` on model calls, and before 0.5x the indexed
``gen_ai.prompt.N.*``/``gen_ai.completion.N.*`` message keys. Newer releases write GenAI message
attributes, which the GenAI convention reads.
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.assembly.conventions.base import (
    CHAT, EMBEDDING, ENTRY, RETRIEVAL, TOOL, LlmCall, Retrieval, TraceView, attr_str)
from monitor.assembly.messages import as_int, documents_from_value, indexed_messages, input_text, load_json
from monitor.model import AttributeSelection, Message, SpanRecord

__all__ = ["CONVENTION", "OpenLLMetry"]

PROMPT_PREFIX = "gen_ai.prompt"  # gen_ai.prompt.N.role/content (≤0.54)
COMPLETION_PREFIX = "gen_ai.completion"
REQUEST_TYPE = "llm.request.type"
SPAN_KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
ASSOCIATION_PREFIX = "traceloop.association.properties."
SESSION_KEYS = tuple(ASSOCIATION_PREFIX + k for k in ("session_id", "conversation_id", "thread_id", "chat_id"))
PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"

_CHAT_TYPES = frozenset({"chat", "completion"})
_FIRST_INDEXED = (PROMPT_PREFIX + ".0.content", PROMPT_PREFIX + ".0.role", COMPLETION_PREFIX + ".0.content")
_HINT = ("OpenLLMetry: set TRACELOOP_TRACE_CONTENT=true (or Traceloop.init(trace_content=True)); with "
         "use_attributes=False the content is in log records: export logs to the sidecar too")


def _entity_output(a: Mapping[str, Any]) -> Any:
    out = load_json(a.get(ENTITY_OUTPUT))
    # traceloop wraps some outputs as {"output": …} / {"outputs": …} / {"result": …}
    while isinstance(out, dict) and len(out) == 1 and next(iter(out)) in ("output", "outputs", "result", "return"):
        out = load_json(next(iter(out.values())))
    return out


class OpenLLMetry:
    name = "openllmetry"
    role_keys = frozenset({REQUEST_TYPE, SPAN_KIND})
    reads = AttributeSelection(
        frozenset({REQUEST_TYPE, SPAN_KIND, ENTITY_INPUT, ENTITY_OUTPUT, *SESSION_KEYS, PROMPT_TOKENS, COMPLETION_TOKENS}),
        (PROMPT_PREFIX + ".", COMPLETION_PREFIX + "."))

    def role(self, span: SpanRecord) -> str | None:
        a = span.attributes
        req = a.get(REQUEST_TYPE)
        if req in _CHAT_TYPES:
            return CHAT
        if req == "embedding":
            return EMBEDDING
        kind = a.get(SPAN_KIND)
        if kind in ("task", "tool") and documents_from_value(_entity_output(a)):
            return RETRIEVAL if kind == "task" else TOOL
        if kind in ("workflow", "agent"):
            return ENTRY
        return None

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        a = span.attributes
        # The indexed keys start at 0: test for those before scanning every attribute.
        indexed_keys = any(k in a for k in _FIRST_INDEXED)
        if not (indexed_keys or REQUEST_TYPE in a):
            return None
        inputs = indexed_messages(a, PROMPT_PREFIX, "role", "content") if indexed_keys else []
        outputs = indexed_messages(a, COMPLETION_PREFIX, "role", "content") if indexed_keys else []
        return LlmCall(self.name, inputs, [Message(m.role or "assistant", m.content) for m in outputs],
                       input_tokens=as_int(a.get(PROMPT_TOKENS)), output_tokens=as_int(a.get(COMPLETION_TOKENS)))

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        a = span.attributes
        if a.get(SPAN_KIND) not in ("task", "tool"):
            return None
        docs = documents_from_value(_entity_output(a))
        return Retrieval(docs, input_text(a.get(ENTITY_INPUT))) if docs else None

    def user_input(self, span: SpanRecord) -> str | None:
        a = span.attributes
        if a.get(SPAN_KIND) not in ("workflow", "agent", "task"):
            return None
        return input_text(a.get(ENTITY_INPUT))

    def conversation_id(self, span: SpanRecord) -> str | None:
        for key in SESSION_KEYS:
            v = attr_str(span.attributes, key)
            if v:
                return v
        return None

    def content_hint(self, span: SpanRecord) -> str | None:
        return _HINT if self.role(span) == CHAT else None

    def diagnose(self, span: SpanRecord) -> str | None:
        req = span.attributes.get(REQUEST_TYPE)
        if isinstance(req, str) and req not in _CHAT_TYPES and req != "embedding":
            return f"an OpenLLMetry span with llm.request.type '{req}', which is no chat or completion call"
        return None


CONVENTION = OpenLLMetry()
