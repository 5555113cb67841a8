"""The typed values that flow between pipeline stages.

Every stage hands the next one frozen dataclasses from this module; nothing downstream of the
receivers sees protobuf or JSON. Attribute values are plain Python values decoded from OTLP
``AnyValue`` (str, bool, int, float, bytes, list, dict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

__all__ = [
    "AttributeValue",
    "Attributes",
    "SpanKind",
    "StatusCode",
    "SpanEvent",
    "SpanRecord",
    "LogRecord",
    "AttributeSelection",
    "Document",
    "Message",
    "TokenUsage",
    "Turn",
    "Conversation",
    "SamplingDecision",
    "ScoreStatus",
    "JudgeUsage",
    "Score",
    "EvaluationResult",
]

AttributeValue = Any
Attributes = Mapping[str, AttributeValue]

_EMPTY: Mapping[str, Any] = {}


class SpanKind(IntEnum):
    """OTLP ``Span.SpanKind`` numbering."""

    UNSPECIFIED = 0
    INTERNAL = 1
    SERVER = 2
    CLIENT = 3
    PRODUCER = 4
    CONSUMER = 5


class StatusCode(IntEnum):
    """OTLP ``Status.StatusCode`` numbering."""

    UNSET = 0
    OK = 1
    ERROR = 2


# The three record types the receivers produce are NamedTuples: as immutable as frozen
# dataclasses and typed alike, but built five times faster, and ingest builds one per span.
_NO_ATTRIBUTES: Attributes = MappingProxyType({})


class SpanEvent(NamedTuple):
    name: str
    time_unix_nano: int
    attributes: Attributes = _NO_ATTRIBUTES


class SpanRecord(NamedTuple):
    """One received span. Ids are lowercase hex; ``parent_span_id`` is "" for a root span.
    ``size`` is the span's encoded size in bytes (the assembler's memory budget counts it)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    status_code: int = StatusCode.UNSET
    status_message: str = ""
    attributes: Attributes = _NO_ATTRIBUTES
    events: tuple[SpanEvent, ...] = ()
    resource: Attributes = _NO_ATTRIBUTES
    scope_name: str = ""
    scope_version: str = ""
    size: int = 0

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id

    @property
    def duration_seconds(self) -> float:
        return max(0, self.end_time_unix_nano - self.start_time_unix_nano) / 1e9


class LogRecord(NamedTuple):
    """One received log record (GenAI events arrive as these). Ids are "" when absent."""

    trace_id: str
    span_id: str
    time_unix_nano: int
    event_name: str
    body: AttributeValue
    attributes: Attributes = _NO_ATTRIBUTES
    resource: Attributes = _NO_ATTRIBUTES
    scope_name: str = ""
    severity_number: int = 0
    size: int = 0


@dataclass(frozen=True, slots=True)
class AttributeSelection:
    """The span attribute keys a reader of spans needs: exact names, and name prefixes (for
    flattened ``prefix.N.field`` keys). The assembly stage declares it; ingest keeps only these
    on spans, so a span's other attributes (HTTP, DB, framework plumbing) are never decoded."""

    keys: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self.keys or key.startswith(self.prefixes))

    def union(self, other: "AttributeSelection") -> "AttributeSelection":
        return AttributeSelection(self.keys | other.keys, tuple(dict.fromkeys(self.prefixes + other.prefixes)))


@dataclass(frozen=True, slots=True)
class Document:
    """A retrieved context chunk. ``content`` is None when the spans carried only an id."""

    id: str | None
    content: str | None
    score: float | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One user request/answer exchange reconstructed from one trace."""

    trace_id: str
    conversation_id: str
    question: str
    answer: str
    documents: tuple[Document, ...] = ()
    history: tuple[Message, ...] = ()
    system_prompt: str | None = None
    ground_truth: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    provider: str | None = None
    service: str = "unknown"
    labels: Mapping[str, str] = field(default_factory=dict)
    start_time_unix_nano: int = 0
    latency_seconds: float | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    error: str | None = None
    response_id: str | None = None
    chat_span_id: str | None = None
    convention: str = "unknown"
    jailbreak_attempt: bool = False

    @property
    def text_bytes(self) -> int:
        """About how much memory the turn's text holds (characters of every text field): what
        the byte budgets of the queues count."""
        n = len(self.question) + len(self.answer) + len(self.system_prompt or "") + len(self.ground_truth or "")
        return n + sum(len(d.content or "") for d in self.documents) + sum(len(m.content) for m in self.history)

    @property
    def context_text(self) -> str | None:
        """Text of the retrieved documents; None when no document carried content."""
        parts = [d.content for d in self.documents if d.content]
        return "\n\n".join(parts) if parts else None


@dataclass(frozen=True, slots=True)
class Conversation:
    """An online conversation as the tracker sees it: no turn text is kept (each turn carries
    its own history), only how many turns it has had so far."""

    id: str
    turn_count: int
    complete: bool = False


@dataclass(frozen=True, slots=True)
class SamplingDecision:
    """Outcome of a sampling policy; ``weight`` is the Horvitz–Thompson weight 1/p."""

    sampled: bool
    policy: str
    probability: float
    cell: str | None = None
    """Post-stratification cell (``samplers.weighting``) when a hard cap could shed this decision's
    conversation; None when 1/p is the final weight. Fleet and local cells are named apart."""

    def __post_init__(self) -> None:
        if not (0.0 <= self.probability <= 1.0) or math.isnan(self.probability):
            raise ValueError(f"inclusion probability {self.probability!r} is outside [0, 1]")
        if self.sampled and self.probability == 0.0:
            raise ValueError("a sampled decision needs a positive inclusion probability")

    @property
    def weight(self) -> float:
        return 1.0 / self.probability if self.probability > 0 else 0.0


class ScoreStatus:
    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"
    REFUSED = "unscored_refused"
    """The judge refused or its provider's content filter blocked the call: no value, and neither
    an error nor a verdict (possibly harmful text; shown beside the defect rate)."""


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_seconds: float = 0.0
    calls: int = 0


@dataclass(frozen=True, slots=True)
class Score:
    """One metric's verdict on one turn. A failure has status ``error`` and ``value`` None."""

    metric: str
    value: float | None
    scale: tuple[float, float]
    status: str = ScoreStatus.OK
    defect: bool | None = None
    label: str | None = None
    reason: str | None = None
    error_type: str | None = None
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status == ScoreStatus.OK:
            if self.value is None or math.isnan(self.value):
                raise ValueError(f"{self.metric}: an ok score needs a number")
        elif self.value is not None:
            raise ValueError(f"{self.metric}: a {self.status} score carries no value")

    @property
    def outcome(self) -> str:
        """The ``outcome`` label: pass | defect | error | skipped | unscored_refused."""
        if self.status != ScoreStatus.OK:
            return self.status
        return "defect" if self.defect else "pass"

    def to_record(self) -> dict[str, Any]:
        """This score as a JSON-ready dict (every field; ``details`` as the evaluator left them):
        the one row shape of ``rag-monitor eval --out`` and the JSONL sink."""
        usage = self.usage
        return {
            "metric": self.metric,
            "outcome": self.outcome,
            "status": self.status,
            "value": self.value,
            "scale": list(self.scale),
            "defect": self.defect,
            "label": self.label,
            "reason": self.reason,
            "error_type": self.error_type,
            "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                      "latency_seconds": round(usage.latency_seconds, 6), "calls": usage.calls},
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    turn: Turn
    scores: tuple[Score, ...]
    weight: float = 1.0
    sampling_policy: str = ""
    cell: str | None = None
    """The decision's post-stratification cell while ``weight`` is still 1/p (``samplers.weighting``);
    None once the weight is final."""
