"""What a convention module reads off a trace, and the one interface every convention offers.

A convention (OpenTelemetry GenAI, OpenInference, OpenLLMetry, a framework's own tracer…) knows
its attribute names and shapes; the turn builder knows none of them. It asks each convention, in
precedence order, what one span is and what it holds, and merges the answers field by field.
Every method returns None for "not mine / not here", never raises on odd input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from monitor.model import AttributeSelection, Document, LogRecord, Message, SpanRecord

__all__ = ["CHAT", "EMBEDDING", "RETRIEVAL", "RERANK", "TOOL", "ENTRY", "LlmCall", "Retrieval",
           "TraceView", "Convention"]

# Span roles
CHAT, EMBEDDING, RETRIEVAL, RERANK, TOOL, ENTRY = "chat", "embedding", "retrieval", "reranker", "tool", "entry"


@dataclass(slots=True)
class LlmCall:
    """One model call as a convention sees it; None/empty means "this convention does not say"."""

    convention: str
    inputs: list[Message] = field(default_factory=list)
    outputs: list[Message] = field(default_factory=list)
    system: list[str] = field(default_factory=list)  # instructions sent apart from the messages
    request_model: str | None = None
    response_model: str | None = None
    provider: str | None = None
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # The call's prompt as one templated string (a completion-style wrapper span), when that is
    # all the convention recorded: a wrapper, not the chat call itself.
    template_only: bool = False

    @property
    def has_content(self) -> bool:
        return bool(self.inputs or self.outputs)

    def merge(self, other: "LlmCall") -> "LlmCall":
        """Fill what this call lacks from ``other`` (a lower-precedence reading of the same span)."""
        # The label names whoever supplied the content (it is exported as the convention label).
        convention = other.convention if other.has_content and not self.has_content else self.convention
        return LlmCall(
            convention,
            self.inputs or other.inputs,
            self.outputs or other.outputs,
            self.system or other.system,
            self.request_model or other.request_model,
            self.response_model or other.response_model,
            self.provider or other.provider,
            self.response_id or other.response_id,
            self.input_tokens if self.input_tokens is not None else other.input_tokens,
            self.output_tokens if self.output_tokens is not None else other.output_tokens,
            self.template_only and other.template_only,
        )


@dataclass(slots=True)
class Retrieval:
    """Documents a retrieval, rerank or search-tool step returned, and the query it ran."""

    documents: list[Document]
    query: str | None = None


class TraceView:
    """One trace's spans and log records, indexed for the conventions."""

    def __init__(self, spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start_time_unix_nano, s.end_time_unix_nano))
        self.by_id: dict[str, SpanRecord] = {s.span_id: s for s in self.spans}
        self.logs = list(logs)
        self.logs_by_span: dict[str, list[LogRecord]] = {}
        for r in self.logs:
            self.logs_by_span.setdefault(r.span_id, []).append(r)
        self._ancestors: dict[str, tuple[str, ...]] = {}

    def ancestors(self, span: SpanRecord) -> tuple[str, ...]:
        """Span ids from the parent up to the root (cycles and depth cut at 256)."""
        cached = self._ancestors.get(span.span_id)
        if cached is not None:
            return cached
        chain: list[str] = []
        seen: set[str] = set()
        cur = span.parent_span_id
        while cur and cur not in seen and len(chain) < 256:
            seen.add(cur)
            chain.append(cur)
            parent = self.by_id.get(cur)
            cur = parent.parent_span_id if parent else ""
        out = tuple(chain)
        self._ancestors[span.span_id] = out
        return out

    def depth(self, span: SpanRecord) -> int:
        return len(self.ancestors(span))

    @property
    def root(self) -> SpanRecord:
        return next((s for s in self.spans if s.is_root), None) or self.spans[0]


class Convention(Protocol):
    """One instrumentation's vocabulary. All methods are pure and return None when not theirs."""

    name: str
    # Attribute keys at least one of which a span must carry for ``role`` to be anything but
    # None: lets the builder skip the many spans no convention claims without asking each one.
    role_keys: frozenset[str]
    # Every span attribute key any method reads (exact, or the prefix of flattened keys): ingest
    # keeps only these, so a key read here but missing from ``reads`` is never seen.
    reads: AttributeSelection

    def role(self, span: SpanRecord) -> str | None:
        """CHAT, EMBEDDING, RETRIEVAL, RERANK, TOOL or ENTRY (a chain/workflow/agent/pipeline
        span whose input is the user's request), or None."""
        ...

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        """What this convention records of the model call ``span`` (a CHAT span)."""
        ...

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        """Documents ``span`` returned (a RETRIEVAL, RERANK or TOOL span)."""
        ...

    def user_input(self, span: SpanRecord) -> str | None:
        """The end user's request as the app passed it to a chain/workflow/agent/pipeline."""
        ...

    def conversation_id(self, span: SpanRecord) -> str | None: ...

    def content_hint(self, span: SpanRecord) -> str | None:
        """For a CHAT span of this convention with no message content: the switch that turns
        content capture on, in the words of that library's docs."""
        ...

    def diagnose(self, span: SpanRecord) -> str | None:
        """For a span this convention recognises as GenAI but cannot read (no role, or nothing a
        turn needs): what it lacks and what to change, as a sentence. Asked only when a trace has
        no chat call, so that ``inspect --explain`` names the span instead of suggesting an
        instrumentation that is already installed."""
        ...


def attr_str(attrs: Mapping[str, object], key: str) -> str | None:
    v = attrs.get(key)
    return v if isinstance(v, str) and v else None
