"""One complete trace (spans + log records) → one :class:`Turn`, whatever the convention.

The builder names no attribute: it asks the conventions (``conventions/``, in precedence order)
what each span is and holds, and applies the rules that are the same for every framework:

- the answering call is the *innermost* chat call with message content that ended last (a
  framework's wrapper LLM span around the real client call is not a chat call; an agent's
  earlier calls are not the answer);
- the question is the last user message of that call — unless that message is a templated
  prompt that embeds the user's request, which then comes from the chain/workflow/pipeline input
  or the retrieval query;
- the history is the earlier user/assistant text messages (no system, tool or tool-call-only
  messages); documents come from the last retrieval/rerank/search-tool step before the call.

Every decision is also written as a plain-language note, which ``rag-monitor inspect --explain``
prints and the sidecar's warnings draw on.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, TypeVar

from monitor.assembly.config import AttributeMapping
from monitor.assembly.conventions import CONVENTIONS
from monitor.assembly.conventions.base import (
    CHAT, ENTRY, RERANK, RETRIEVAL, TOOL, Convention, LlmCall, Retrieval, TraceView)
from monitor.assembly.duplicates import one_call_twice
from monitor.assembly.messages import as_str, documents_from_value
from monitor.model import AttributeSelection, Document, LogRecord, Message, SpanRecord, StatusCode, TokenUsage, Turn

__all__ = ["NoTurn", "Explanation", "build_turn", "span_attributes_read", "NO_TURN_REASONS"]

T = TypeVar("T")

# reason → what to do about it (the sidecar's rate-limited warning; ``inspect --explain``).
NO_TURN_REASONS: dict[str, str] = {
    "no_spans": "the trace had no spans",
    "no_chat_call": ("no LLM chat span in the trace: is a GenAI/LLM instrumentation installed and exporting "
                     "to the sidecar (the same trace as the app's spans)?"),
    "no_message_content": "the chat span carries no message content",
    "no_question": "the chat call has no user message and no chain/workflow input names the question",
    "no_answer": "the chat call has no output message",
    "internal_error": "assembling the trace failed (a bug: please report it with `rag-monitor inspect`)",
}
_MS = 1_000_000
_HISTORY_ROLES = frozenset({"user", "assistant", "human", "ai", "model"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_ROLE_NAMES = {"human": "user", "ai": "assistant", "model": "assistant"}


class NoTurn(Exception):
    """The trace holds no turn; ``reason`` is the counted label, ``hint`` what to change."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint or NO_TURN_REASONS.get(reason, reason)


@dataclass(slots=True)
class Explanation:
    """What the builder found and decided, in order; ``missing`` lists absent turn fields."""

    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    instrumentations: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)


def _first(conventions: Iterable[Convention], fn: Callable[[Convention], T | None]) -> T | None:
    for c in conventions:
        v = fn(c)
        if v:
            return v
    return None


def _describe(span: SpanRecord) -> str:
    scope = f", scope {span.scope_name}" if span.scope_name else ""
    return f"span '{span.name}' ({span.span_id}{scope})"


@functools.lru_cache(maxsize=8)
def _role_keys(conventions: tuple[Convention, ...]) -> frozenset[str]:
    return frozenset().union(*(c.role_keys for c in conventions))


class _Reading:
    """The conventions' reading of one trace."""

    def __init__(self, trace: TraceView, conventions: Sequence[Convention]) -> None:
        self.trace = trace
        self.conventions = conventions
        role_keys = _role_keys(tuple(conventions))
        self.roles: dict[str, str | None] = {}
        for s in trace.spans:
            role = None
            # Most spans of a trace (HTTP, DB, framework plumbing) carry no key any convention
            # reads: one set test instead of a call per convention.
            if not role_keys.isdisjoint(s.attributes):
                for c in conventions:
                    role = c.role(s)
                    if role:
                        break
            self.roles[s.span_id] = role
        self.chats = [s for s in trace.spans if self.roles[s.span_id] == CHAT]
        self.calls: dict[str, LlmCall] = {}
        for s in self.chats:
            merged: LlmCall | None = None
            for c in conventions:
                call = c.llm_call(s, trace)
                if call is not None:
                    merged = call if merged is None else merged.merge(call)
            self.calls[s.span_id] = merged or LlmCall("unknown")
        self._dropped: set[str] | None = None
        self.merged: list[tuple[SpanRecord, SpanRecord]] = []  # (kept, dropped): one call, two spans

    def spans_with(self, *roles: str) -> list[SpanRecord]:
        return [s for s in self.trace.spans if self.roles[s.span_id] in roles]

    def leaf_chats(self) -> list[SpanRecord]:
        """Chat spans that do not wrap another chat span with content (the real client calls),
        each call once (:meth:`_same_calls`)."""
        with_content = {s.span_id for s in self.chats if self.calls[s.span_id].has_content}
        wrappers: set[str] = set()
        for s in self.chats:
            if s.span_id in with_content:
                wrappers.update(a for a in self.trace.ancestors(s) if self.roles.get(a) == CHAT)
        leaves = [s for s in self.chats if s.span_id not in wrappers]
        return [s for s in leaves if s.span_id not in self._same_calls(leaves)]

    def _same_calls(self, leaves: Sequence[SpanRecord]) -> set[str]:
        """Spans of a call recorded twice that are dropped (:func:`one_call_twice`); cached."""
        if self._dropped is None:
            self._dropped = set()
            for keep, drop in one_call_twice(leaves, self.calls):
                self._dropped.add(drop.span_id)
                self.merged.append((keep, drop))
        return self._dropped


def _split(inputs: Sequence[Message]) -> tuple[str | None, list[Message], list[str]]:
    system = [m.content for m in inputs if m.role in _SYSTEM_ROLES]
    last_user = max((i for i, m in enumerate(inputs) if m.role in ("user", "human")), default=None)
    if last_user is None:
        return None, [], system
    history = [Message(_ROLE_NAMES.get(m.role, m.role), m.content)
               for m in inputs[:last_user] if m.role in _HISTORY_ROLES and m.content.strip()]
    return inputs[last_user].content, history, system


def _is_templated(message: str, request: str, documents: Sequence[Document]) -> bool:
    """``message`` is a prompt built around ``request`` (a stuffed/templated RAG prompt): it holds
    the request plus retrieved text, or the request fills a slot of its own ("Question: …" on a
    line). A question that merely contains a short retrieval query is not a template."""
    if len(request) < 3 or request == message or request not in message:
        return False
    if any(d.content and d.content[:80] in message for d in documents if len(d.content or "") >= 20):
        return True
    at = message.find(request)
    before, after = message[:at].rstrip(" \t"), message[at + len(request):].lstrip(" \t")
    slot_start = before == "" or before.endswith(("\n", ":", '"', "'", "`"))
    slot_end = after == "" or after.startswith(("\n", '"', "'", "`"))
    return slot_start and slot_end and len(message) >= len(request) + 20


def _may_be_templated(message: str, documents: Sequence[Document]) -> bool:
    """Cheap pre-test for :func:`_is_templated`: a template puts the request on a line of its own
    or next to retrieved text. Most questions are one line with no document in them, and then
    the chain inputs are never read."""
    if "\n" in message:
        return True
    return any(d.content and len(d.content) >= 20 and d.content[:80] in message for d in documents)


def _requests(reading: _Reading, retrieval: Retrieval | None) -> list[str]:
    """The user's request as the app passed it in: the outermost chain/workflow input first,
    the retrieval query last."""
    trace = reading.trace
    entries = sorted((s for s in trace.spans if reading.roles[s.span_id] == ENTRY or s is trace.root),
                     key=lambda s: (trace.depth(s), s.start_time_unix_nano))
    requests = []
    for s in entries:
        for c in reading.conventions:
            text = c.user_input(s)
            if text:
                requests.append(text)
                break
    if retrieval and retrieval.query:
        requests.append(retrieval.query)
    return requests


def _documents(reading: _Reading, before_ns: int, mapping: AttributeMapping) -> tuple[Retrieval | None, SpanRecord | None]:
    """The last retrieval/rerank/search-tool step with documents that ended before the call."""
    best: Retrieval | None = None
    best_span: SpanRecord | None = None
    # OpenTelemetry JS stamps a span's start in whole milliseconds and its end in nanoseconds: a
    # tool that ended 0.1 ms "after" a call that started on a millisecond boundary came first.
    slack = _MS if before_ns % _MS == 0 else 1
    for s in reading.trace.spans:
        if s.end_time_unix_nano > before_ns + slack:
            continue
        if best_span is not None and s.end_time_unix_nano < best_span.end_time_unix_nano:
            continue
        found: Retrieval | None = None
        for key in mapping.documents:
            if key in s.attributes:
                docs = documents_from_value(s.attributes[key])
                found = Retrieval(docs) if docs else None
                break
        if found is None and reading.roles[s.span_id] in (RETRIEVAL, RERANK, TOOL):
            span = s  # bound for the lambda, which _first calls right away
            found = _first(reading.conventions, lambda c: c.retrieval(span))
        if found is not None and found.documents:
            best, best_span = found, s
    return best, best_span


def _lookup(spans: Iterable[SpanRecord], keys: Sequence[str]) -> str | None:
    for key in keys:
        for s in spans:
            v = as_str(s.attributes.get(key))
            if v:
                return v
    return None


def _version(root: SpanRecord, final: SpanRecord, spans: Sequence[SpanRecord], keys: Sequence[str]) -> str | None:
    """The app's build (``service.version`` by default): a resource attribute where the OTel
    semantic conventions put it, else a span attribute of the same name."""
    for key in keys:
        for resource in (root.resource, final.resource):
            if v := as_str(resource.get(key)):
                return v
    return _lookup(spans, keys)


def _error(spans: Sequence[SpanRecord]) -> str | None:
    for s in spans:
        if s.status_code == StatusCode.ERROR:
            for e in s.events:
                if e.name == "exception":
                    return as_str(e.attributes.get("exception.type")) or s.status_message or "error"
            return s.status_message or f"error in span {s.name}"
    return None


def _usage(calls: Sequence[LlmCall]) -> TokenUsage:
    ins = [c.input_tokens for c in calls if c.input_tokens is not None]
    outs = [c.output_tokens for c in calls if c.output_tokens is not None]
    return TokenUsage(sum(ins) if ins else None, sum(outs) if outs else None)


def _unreadable(trace: TraceView, conventions: Sequence[Convention], ex: Explanation) -> str | None:
    """Spans a convention recognises as GenAI but cannot read, each noted; the first one as the
    trace's hint (None: nothing GenAI-like, the generic hint stands)."""
    found: dict[str, str] = {}
    for s in trace.spans:
        span = s  # bound for the lambda, which _first calls right away
        why = _first(conventions, lambda c: c.diagnose(span))
        if why:
            found[s.span_id] = f"{_describe(s)} is {why}"
    for text in found.values():
        ex.note(text)
    if not found:
        return None
    # The hint names the one most like the answering call: innermost, ended last.
    wrappers = {a for sid in found for a in trace.ancestors(trace.by_id[sid])}
    first = max((trace.by_id[sid] for sid in found),
                key=lambda s: (s.span_id not in wrappers, s.end_time_unix_nano, s.start_time_unix_nano))
    more = f" (and {len(found) - 1} more such spans)" if len(found) > 1 else ""
    return f"no span reads as a chat call: {found[first.span_id]}{more}"


def span_attributes_read(mapping: AttributeMapping,
                         conventions: Sequence[Convention] = CONVENTIONS) -> AttributeSelection:
    """Every span attribute :func:`build_turn` can read with this mapping: the conventions' keys
    and the app's mapped ones. Ingest decodes only these (resource, event and log record
    attributes are kept whole)."""
    mapped = AttributeSelection(frozenset(
        [*mapping.question, *mapping.answer, *mapping.conversation_id, *mapping.ground_truth, *mapping.system_prompt,
         *mapping.documents, *mapping.labels.values(), *mapping.version]))
    for c in conventions:
        mapped = mapped.union(c.reads)
    return mapped


def build_turn(spans: Sequence[SpanRecord], logs: Sequence[LogRecord], mapping: AttributeMapping,
               max_history: int = 50, explanation: Explanation | None = None,
               conventions: Sequence[Convention] = CONVENTIONS) -> Turn:
    """Assemble one trace. Raises NoTurn with a reason (and a hint) when it holds no usable turn."""
    ex = explanation if explanation is not None else Explanation()
    if not spans:
        raise NoTurn("no_spans")
    trace = TraceView(spans, logs)
    reading = _Reading(trace, conventions)
    ex.instrumentations = sorted({s.scope_name for s in trace.spans if s.scope_name})
    root = trace.root
    if not reading.chats:
        raise NoTurn("no_chat_call", _unreadable(trace, conventions, ex))
    leaves = reading.leaf_chats()
    answered = [s for s in leaves if reading.calls[s.span_id].has_content]
    if not answered and _lookup(trace.spans, mapping.question) and _lookup(trace.spans, mapping.answer):
        answered = leaves  # the app names question and answer itself
    if not answered:
        last = max(reading.chats, key=lambda s: (s.end_time_unix_nano, s.start_time_unix_nano))
        hint = _first(conventions, lambda c: c.content_hint(last))
        raise NoTurn("no_message_content",
                     f"{_describe(last)} is a chat call without message content: {hint or NO_TURN_REASONS['no_message_content']}")
    final = max(answered, key=lambda s: (s.end_time_unix_nano, s.start_time_unix_nano))
    call = reading.calls[final.span_id]
    if len(reading.chats) > 1:
        ex.note(f"{len(reading.chats)} chat spans; {len(reading.chats) - len(leaves) - len(reading.merged)} wrap "
                f"another chat call; the answer is the last one to end")
    for kept, dropped in reading.merged:
        ex.note(f"{_describe(dropped)} and {_describe(kept)} record the same call (same input messages, at the "
                f"same time): counted once, read from the second")
    ex.note(f"answering call: {_describe(final)}, read as {call.convention}")
    ordered = [final, root] + [s for s in trace.spans if s is not final and s is not root]

    question, history, system = _split(call.inputs)
    retrieval, retrieval_span = _documents(reading, final.start_time_unix_nano, mapping)
    documents = retrieval.documents if retrieval else []
    mapped_question = _lookup(ordered, mapping.question)
    if mapped_question:
        question = mapped_question
        ex.note("question: from the attribute mapping")
    elif question is None or _may_be_templated(question, documents):
        requests = _requests(reading, retrieval)
        if question is not None:
            request = next((r for r in requests if _is_templated(question, r, documents)), None)
            if request is not None:
                ex.note("question: the chat prompt is a template around the user's request; taken from the "
                        "chain/workflow input")
                question = request
        elif requests:
            question = requests[0]
            ex.note("question: no user message in the chat call; taken from the chain/workflow input")
    if not question:
        raise NoTurn("no_question")

    answer = next((m.content for m in reversed(call.outputs) if m.role in ("assistant", "model", "ai")), None)
    if answer is None and call.outputs:
        answer = call.outputs[-1].content
    answer = _lookup(ordered, mapping.answer) or answer
    if answer is None:
        raise NoTurn("no_answer")

    if retrieval_span is not None:
        ex.note(f"documents: {len(documents)} from {_describe(retrieval_span)}")
    else:
        ex.missing.append("documents")
        ex.note("documents: none found (no retrieval, reranker or search-tool span with documents ended "
                "before the answering call); groundedness and retrieval metrics will be skipped")

    mapped_system = _lookup(ordered, mapping.system_prompt)
    # The same instructions can arrive both as gen_ai.system_instructions and as a system message.
    system_prompt = mapped_system or ("\n\n".join(dict.fromkeys(call.system + system)) or None)

    conversation_id = _lookup(ordered, mapping.conversation_id) or _first(
        conventions, lambda c: next((v for s in ordered if (v := c.conversation_id(s))), None))
    if conversation_id is None:
        ex.missing.append("conversation_id")
        ex.note("conversation id: none found; each trace is its own conversation (set gen_ai.conversation.id, "
                "session.id or your instrumentation's session property)")
        conversation_id = root.trace_id
    labels = {label: v for label, key in mapping.labels.items() if (v := _lookup(ordered, (key,)))}
    version = _version(root, final, ordered, mapping.version)
    if version and "version" not in labels:  # an explicitly mapped version label wins
        labels["version"] = version
    return Turn(
        trace_id=root.trace_id,
        conversation_id=conversation_id,
        question=question,
        answer=answer,
        documents=tuple(documents),
        history=tuple(history[-max_history:]),
        system_prompt=system_prompt,
        ground_truth=_lookup(ordered, mapping.ground_truth),
        request_model=call.request_model,
        response_model=call.response_model,
        provider=call.provider,
        service=as_str(root.resource.get("service.name")) or as_str(final.resource.get("service.name")) or "unknown",
        labels=labels,
        start_time_unix_nano=root.start_time_unix_nano,
        latency_seconds=root.duration_seconds,
        usage=_usage([reading.calls[s.span_id] for s in leaves]),
        error=_error(trace.spans),
        response_id=call.response_id,
        chat_span_id=final.span_id,
        convention=call.convention,
    )
