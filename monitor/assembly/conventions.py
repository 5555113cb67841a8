"""One complete trace (spans + log records) → one :class:`Turn`, whatever the convention.

The final answer is the one of the *last* chat call in the trace (an agent makes several); the
question is the last user message sent to that call; the history is everything before it except
system messages; documents come from the last retrieval (or reranker) step before that call.
Each field is looked up in the app's own mapping first, then in the conventions, most
specific first. Embedding calls are never chat calls, even when they carry "messages".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from monitor.assembly import semconv as sc
from monitor.assembly.messages import (
    as_int,
    as_str,
    documents_from_value,
    genai_messages,
    genai_text,
    indexed_documents,
    indexed_messages,
    load_json,
)
from monitor.config import AttributeMapping
from monitor.model import Document, LogRecord, Message, SpanRecord, StatusCode, TokenUsage, Turn

__all__ = ["NoTurn", "classify", "build_turn"]

CHAT, EMBEDDING, RETRIEVAL, RERANK, OTHER = "chat", "embedding", "retrieval", "reranker", "other"


class NoTurn(Exception):
    """The trace holds no turn; ``reason`` is the counted label (no_chat_call, no_question…)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def classify(span: SpanRecord) -> str:
    a = span.attributes
    op = a.get(sc.GEN_AI_OPERATION_NAME)
    oi = a.get(sc.OI_SPAN_KIND)
    req = a.get(sc.TL_REQUEST_TYPE)
    if op in sc.EMBEDDING_OPERATIONS or oi == sc.OI_KIND_EMBEDDING or req == sc.TL_EMBEDDING_TYPE:
        return EMBEDDING
    if op in sc.CHAT_OPERATIONS or oi == sc.OI_KIND_LLM or req in sc.TL_CHAT_TYPES:
        return CHAT
    if oi == sc.OI_KIND_RERANKER:
        return RERANK
    if op == sc.RETRIEVAL_OPERATION or oi == sc.OI_KIND_RETRIEVER or sc.GEN_AI_RETRIEVAL_DOCUMENTS in a:
        return RETRIEVAL
    if a.get(sc.TL_SPAN_KIND) in ("task", "tool") and documents_from_value(_traceloop_output(a)):
        return RETRIEVAL
    return OTHER


def _traceloop_output(a: Mapping[str, Any]) -> Any:
    out = load_json(a.get(sc.TL_ENTITY_OUTPUT))
    # traceloop wraps some outputs as {"output": …} / {"result": …}
    if isinstance(out, dict) and len(out) == 1 and next(iter(out)) in ("output", "result", "return"):
        out = next(iter(out.values()))
    return out


@dataclass(slots=True)
class _Exchange:
    """What one chat call sent and got back."""

    inputs: list[Message]
    outputs: list[Message]
    system: list[str]
    convention: str


def _event_name(r: LogRecord) -> str:
    return r.event_name or as_str(r.attributes.get(sc.EVENT_NAME_ATTRIBUTE)) or ""


def _span_exchange(span: SpanRecord) -> _Exchange | None:
    a = span.attributes
    system: list[str] = []
    instr = load_json(a.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS))
    if instr is not None:
        text = genai_text(instr)
        if text:
            system.append(text)
    if sc.GEN_AI_INPUT_MESSAGES in a or sc.GEN_AI_OUTPUT_MESSAGES in a:
        return _Exchange(genai_messages(a.get(sc.GEN_AI_INPUT_MESSAGES)),
                         genai_messages(a.get(sc.GEN_AI_OUTPUT_MESSAGES)), system, "genai")
    oi_in = indexed_messages(a, sc.OI_INPUT_MESSAGES, sc.OI_MESSAGE_ROLE, sc.OI_MESSAGE_CONTENT, sc.OI_MESSAGE_CONTENTS)
    oi_out = indexed_messages(a, sc.OI_OUTPUT_MESSAGES, sc.OI_MESSAGE_ROLE, sc.OI_MESSAGE_CONTENT, sc.OI_MESSAGE_CONTENTS)
    if oi_in or oi_out:
        return _Exchange(oi_in, oi_out, system, "openinference")
    tl_in = indexed_messages(a, sc.TL_PROMPT_PREFIX, "role", "content")
    tl_out = indexed_messages(a, sc.TL_COMPLETION_PREFIX, "role", "content")
    if tl_in or tl_out:
        return _Exchange(tl_in, [Message(m.role or "assistant", m.content) for m in tl_out], system, "openllmetry")
    return None


def _log_exchange(span: SpanRecord, logs: Sequence[LogRecord], parents: set[str]) -> _Exchange | None:
    """Content sent as log records: the operation-details record, or the ≤1.36 event form.

    Records are matched to the chat span by span id; a record pointing at an ancestor (seen for
    ``gen_ai.choice``) or at no span is matched when it falls inside the chat call's time span.
    """
    mine = [r for r in logs if r.span_id == span.span_id]
    if not any(_event_name(r) in (sc.EVENT_CHOICE, sc.EVENT_OPERATION_DETAILS) for r in mine):
        lo, hi = span.start_time_unix_nano, span.end_time_unix_nano + 1_000_000_000
        mine += [r for r in logs if (not r.span_id or r.span_id in parents) and lo <= r.time_unix_nano <= hi]
    inputs: list[Message] = []
    outputs: list[Message] = []
    system: list[str] = []
    for r in sorted(mine, key=lambda r: r.time_unix_nano):
        name = _event_name(r)
        if name == sc.EVENT_OPERATION_DETAILS:
            inputs = genai_messages(r.attributes.get(sc.GEN_AI_INPUT_MESSAGES))
            outputs = genai_messages(r.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES))
            text = genai_text(load_json(r.attributes.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS)))
            system = [text] if text else []
            return _Exchange(inputs, outputs, system, "genai-log")
        body = r.body if isinstance(r.body, dict) else {}
        if name in sc.MESSAGE_EVENT_ROLES:
            text = genai_text(body.get("content")) if body else as_str(r.body)
            if text is not None:
                inputs.append(Message(as_str(body.get("role")) or sc.MESSAGE_EVENT_ROLES[name], text))
        elif name == sc.EVENT_CHOICE:
            msg = body.get("message") if isinstance(body.get("message"), dict) else body
            text = genai_text(msg.get("content"))
            if text is not None:
                outputs.append(Message(as_str(msg.get("role")) or "assistant", text))
    if inputs or outputs:
        return _Exchange(inputs, outputs, system, "genai-events")
    return None


def _value_exchange(span: SpanRecord) -> _Exchange | None:
    """Last resort: OpenInference ``input.value``/``output.value`` holding the raw request."""
    req = load_json(span.attributes.get(sc.OI_INPUT_VALUE))
    if isinstance(req, dict) and isinstance(req.get("messages"), list):
        inputs = genai_messages(req["messages"])
        out = as_str(span.attributes.get(sc.OI_OUTPUT_VALUE))
        resp = load_json(out)
        answer = None
        if isinstance(resp, dict) and isinstance(resp.get("choices"), list) and resp["choices"]:
            choice = resp["choices"][-1]
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                answer = genai_text(choice["message"].get("content"))
        outputs = [Message("assistant", answer)] if answer else []
        return _Exchange(inputs, outputs, [], "openinference-value")
    return None


def _exchange(span: SpanRecord, logs: Sequence[LogRecord], parents: set[str]) -> _Exchange | None:
    ex = _span_exchange(span)
    if ex is None or not ex.outputs or not ex.inputs:
        from_logs = _log_exchange(span, logs, parents)
        if from_logs is not None:
            if ex is None:
                ex = from_logs
            else:
                ex = _Exchange(ex.inputs or from_logs.inputs, ex.outputs or from_logs.outputs,
                               ex.system or from_logs.system, ex.convention)
    if ex is None or not ex.outputs:
        ex = _value_exchange(span) or ex
    return ex


def _ancestors(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> set[str]:
    seen: set[str] = set()
    cur = span.parent_span_id
    while cur and cur not in seen and len(seen) < 256:
        seen.add(cur)
        parent = by_id.get(cur)
        cur = parent.parent_span_id if parent else ""
    return seen


def _documents(spans: Sequence[SpanRecord], kinds: Sequence[str], before_ns: int,
               mapping: AttributeMapping) -> list[Document]:
    """Documents of the last retrieval/rerank step that ended before the final chat call."""
    best: list[Document] = []
    best_end = -1
    for s, kind in zip(spans, kinds):
        if s.end_time_unix_nano > before_ns + 1 or s.end_time_unix_nano < best_end:
            continue
        a = s.attributes
        docs: list[Document] | None = None
        for key in mapping.documents:
            if key in a:
                docs = documents_from_value(a[key])
                break
        if docs is None:
            if kind == RERANK:
                docs = indexed_documents(a, sc.OI_RERANKER_OUTPUT_DOCUMENTS)
            elif kind == RETRIEVAL:
                docs = (documents_from_value(a.get(sc.GEN_AI_RETRIEVAL_DOCUMENTS))
                        or indexed_documents(a, sc.OI_RETRIEVAL_DOCUMENTS)
                        or documents_from_value(_traceloop_output(a)))
        if docs:
            best, best_end = docs, s.end_time_unix_nano
    return best


def _request_model(a: Mapping[str, Any]) -> str | None:
    params = load_json(a.get(sc.OI_INVOCATION_PARAMETERS))
    invoked = as_str(params.get("model")) if isinstance(params, dict) else None
    # OpenInference with GenAI attributes on writes the *response* model into
    # gen_ai.request.model; its invocation parameters hold what was asked for.
    if sc.OI_SPAN_KIND in a and invoked:
        return invoked
    return as_str(a.get(sc.GEN_AI_REQUEST_MODEL)) or invoked or as_str(a.get(sc.OI_MODEL_NAME))


def _output_value_id(a: Mapping[str, Any]) -> str | None:
    """OpenInference keeps the provider's response only as JSON in ``output.value``."""
    value = a.get(sc.OI_OUTPUT_VALUE)
    if not isinstance(value, str) or '"id"' not in value:
        return None
    resp = load_json(value)
    return as_str(resp.get("id")) if isinstance(resp, dict) else None


def _lookup(spans: Iterable[SpanRecord], keys: Sequence[str]) -> str | None:
    for key in keys:
        for s in spans:
            v = as_str(s.attributes.get(key))
            if v:
                return v
    return None


def _split_messages(inputs: list[Message]) -> tuple[str | None, list[Message], list[str]]:
    system = [m.content for m in inputs if m.role in ("system", "developer")]
    last_user = max((i for i, m in enumerate(inputs) if m.role == "user"), default=None)
    if last_user is None:
        return None, [], system
    history = [m for m in inputs[:last_user] if m.role not in ("system", "developer")]
    return inputs[last_user].content, history, system


def _usage(chats: Sequence[SpanRecord]) -> TokenUsage:
    def total(keys: Sequence[str]) -> int | None:
        vals = [next((as_int(s.attributes[k]) for k in keys if as_int(s.attributes.get(k)) is not None), None)
                for s in chats]
        present = [v for v in vals if v is not None]
        return sum(present) if present else None

    return TokenUsage(
        total((sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS, sc.OI_TOKEN_PROMPT)),
        total((sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_COMPLETION_TOKENS, sc.OI_TOKEN_COMPLETION)),
    )


def _error(spans: Sequence[SpanRecord]) -> str | None:
    for s in spans:
        if s.status_code == StatusCode.ERROR:
            for e in s.events:
                if e.name == sc.EXCEPTION_EVENT:
                    return as_str(e.attributes.get(sc.EXCEPTION_TYPE)) or s.status_message or "error"
            return s.status_message or f"error in span {s.name}"
    return None


def build_turn(spans: Sequence[SpanRecord], logs: Sequence[LogRecord], mapping: AttributeMapping,
               max_history: int = 50) -> Turn:
    """Assemble one trace. Raises NoTurn with a reason when the trace holds no usable turn."""
    if not spans:
        raise NoTurn("no_spans")
    ordered = sorted(spans, key=lambda s: (s.start_time_unix_nano, s.end_time_unix_nano))
    by_id = {s.span_id: s for s in ordered}
    kinds = [classify(s) for s in ordered]
    chats = [s for s, k in zip(ordered, kinds) if k == CHAT]
    root = next((s for s in ordered if s.is_root), None) or min(ordered, key=lambda s: s.start_time_unix_nano)
    if not chats:
        raise NoTurn("no_chat_call")
    final = max(chats, key=lambda s: (s.end_time_unix_nano, s.start_time_unix_nano))
    ex = _exchange(final, logs, _ancestors(final, by_id)) or _Exchange([], [], [], "unknown")
    question, history, system = _split_messages(ex.inputs)
    answer = next((m.content for m in reversed(ex.outputs) if m.role in ("assistant", "model")), None)
    if answer is None and ex.outputs:
        answer = ex.outputs[-1].content
    chat_first = [final, root] + [s for s in ordered if s is not final and s is not root]
    question = _lookup(chat_first, mapping.question) or question
    answer = _lookup(chat_first, mapping.answer) or answer
    if not question:
        raise NoTurn("no_question")
    if answer is None:
        raise NoTurn("no_answer")
    system_prompt = _lookup(chat_first, mapping.system_prompt) or ("\n\n".join(ex.system + system) or None)
    a = final.attributes
    conversation_id = (_lookup(chat_first, mapping.conversation_id)
                       or _lookup(chat_first, sc.CONVERSATION_ID_KEYS) or root.trace_id)
    labels = {}
    for label, key in mapping.labels.items():
        v = _lookup(chat_first, (key,))
        if v:
            labels[label] = v
    return Turn(
        trace_id=root.trace_id,
        conversation_id=conversation_id,
        question=question,
        answer=answer,
        documents=tuple(_documents(ordered, kinds, final.start_time_unix_nano, mapping)),
        history=tuple(history[-max_history:]),
        system_prompt=system_prompt,
        ground_truth=_lookup(chat_first, mapping.ground_truth),
        request_model=_request_model(a),
        response_model=as_str(a.get(sc.GEN_AI_RESPONSE_MODEL)) or as_str(a.get(sc.OI_MODEL_NAME)),
        provider=(as_str(a.get(sc.GEN_AI_PROVIDER_NAME)) or as_str(a.get(sc.GEN_AI_SYSTEM))
                  or as_str(a.get(sc.OI_PROVIDER)) or as_str(a.get(sc.OI_SYSTEM))),
        service=as_str(root.resource.get(sc.SERVICE_NAME)) or as_str(final.resource.get(sc.SERVICE_NAME)) or "unknown",
        labels=labels,
        start_time_unix_nano=root.start_time_unix_nano,
        latency_seconds=root.duration_seconds,
        usage=_usage(chats),
        error=_error(ordered),
        response_id=as_str(a.get(sc.GEN_AI_RESPONSE_ID)) or _output_value_id(a),
        chat_span_id=final.span_id,
        convention=ex.convention,
    )

