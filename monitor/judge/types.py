"""The contract between metric evaluators and the judge client.

An evaluator builds a :class:`JudgeRequest` (fixed instructions first, untrusted text in
delimited data blocks, the reply's declaration — a :class:`~monitor.judge.replies.ReplyShape`)
and awaits :meth:`Judge.complete_json`. The judge returns the validated reply or raises
:class:`JudgeError` whose ``outcome`` is one of :data:`JUDGE_OUTCOMES`; the evaluator turns that
into an ``error`` Score. The reply is validated once, by the client, against the declaration
that also gave the JSON schema sent to the judge, so the call's outcome is final when it is
counted: ``ok`` is a reply whose values the metric uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Mapping, Protocol, TypeVar

from monitor.model import JudgeUsage

if TYPE_CHECKING:
    from monitor.judge.replies import ReplyModel, ReplyShape

__all__ = ["JUDGE_OUTCOMES", "JudgeRequest", "JudgeReply", "JudgeError", "Judge"]

# Values of the ``outcome`` label of rag_monitor_judge_requests_total. Each reply is classified
# once (monitor.judge.retry, monitor.judge.envelope, monitor.judge.replies): ``ok`` means the reply
# was a chat completion whose content validated against the request's reply declaration, so its
# values are the ones the metric uses. ``auth_error`` (401/403), ``not_found``
# (404: wrong base_url, model or deployment) and ``request_rejected`` (any other permanent 4xx) are
# configuration mistakes, kept apart from ``server_error`` so they do not read as an outage.
# ``refused`` is the judge declining to grade (``message.refusal``) or its provider's content
# filter blocking the prompt or the reply (``finish_reason: content_filter``, or Azure's HTTP 400
# with error code ``content_filter``): an answer about the text, not a failure of the judge, so
# the judge-error alert does not count it and the metrics of the call record ``unscored_refused``.
JUDGE_OUTCOMES = (
    "ok",
    "refused",
    "parse_error",
    "out_of_range",
    "timeout",
    "rate_limited",
    "server_error",
    "connection_error",
    "auth_error",
    "not_found",
    "request_rejected",
    "circuit_open",
    "budget_exhausted",
)


R = TypeVar("R", bound="ReplyModel")


@dataclass(frozen=True, slots=True)
class JudgeRequest(Generic[R]):
    metric: str
    """Metric id, or the id of a shared call (``combined_rubrics``): names the call in logs and
    its outcome; token accounting goes by :attr:`token_owners`."""
    system: str
    """Fixed instructions: identical across calls of the same metric, so prefix caching applies."""
    user: str
    """The per-turn part: delimited data blocks and the task."""
    reply: ReplyShape[R]
    """The reply's declaration: its JSON schema is sent, the answer is validated against it."""
    max_output_tokens: int = 400
    metrics: tuple[str, ...] = ()
    """Metric ids a shared call answers for (a combined call's metrics); its tokens are split
    evenly across them in telemetry. Empty: the call is for ``metric`` alone."""

    @property
    def schema_name(self) -> str:
        """The name of the reply schema in ``response_format``."""
        return self.reply.name

    @property
    def json_schema(self) -> Mapping[str, Any]:
        """JSON schema of the expected reply object (sent as structured output when supported)."""
        return self.reply.json_schema

    @property
    def call(self) -> str:
        """The ``call`` label of this request's tokens: ``single``, or the shared call's id."""
        return self.metric if self.metrics else "single"

    @property
    def token_owners(self) -> tuple[str, ...]:
        """The metric ids the call's tokens are attributed to."""
        return self.metrics or (self.metric,)


@dataclass(frozen=True, slots=True)
class JudgeReply(Generic[R]):
    value: R
    """The reply validated against the request's declaration."""
    data: Mapping[str, Any]
    """The same reply as the decoded JSON object."""
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    raw_text: str = ""


class JudgeError(Exception):
    """A judge call that produced no usable object. ``outcome`` is in JUDGE_OUTCOMES."""

    def __init__(self, outcome: str, message: str, usage: JudgeUsage | None = None) -> None:
        if outcome not in JUDGE_OUTCOMES or outcome == "ok":
            raise ValueError(f"not a judge failure outcome: {outcome!r}")
        super().__init__(message)
        self.outcome = outcome
        self.usage = usage or JudgeUsage()


class Judge(Protocol):
    async def complete_json(self, request: JudgeRequest[R]) -> JudgeReply[R]:
        """Send one request (with retries inside the client's deadline); return the validated
        reply or raise JudgeError."""
        ...
