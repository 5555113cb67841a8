"""The contract between metric evaluators and the judge client.

An evaluator builds a :class:`JudgeRequest` (fixed instructions first, untrusted text in
delimited data blocks, a JSON schema for the reply) and awaits :meth:`Judge.complete_json`.
The judge returns the parsed JSON object or raises :class:`JudgeError` whose ``outcome`` is one
of :data:`JUDGE_OUTCOMES`; the evaluator turns that into an ``error`` Score. Validating the
*content* of the object (types, ranges) is the metric parser's job; an invalid object there is
reported as ``out_of_range``/``parse_error`` through :meth:`Judge.report_invalid` so that the
judge's outcome counters stay complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from monitor.model import JudgeUsage

__all__ = ["JUDGE_OUTCOMES", "JudgeRequest", "JudgeReply", "JudgeError", "Judge"]

# Values of the ``outcome`` label of rag_monitor_judge_requests_total. Each reply is classified
# once (monitor.judge.retry, monitor.judge.envelope): ``ok`` means the reply was a chat completion
# whose content validated against the request's schema. ``auth_error`` (401/403), ``not_found``
# (404: wrong base_url, model or deployment) and ``request_rejected`` (any other permanent 4xx) are
# configuration mistakes, kept apart from ``server_error`` so they do not read as an outage.
JUDGE_OUTCOMES = (
    "ok",
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


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    metric: str
    """Metric id, or the id of a shared call (``combined_rubrics``): names the call in logs and
    its outcome; token accounting goes by :attr:`token_owners`."""
    system: str
    """Fixed instructions: identical across calls of the same metric, so prefix caching applies."""
    user: str
    """The per-turn part: delimited data blocks and the task."""
    schema_name: str
    json_schema: Mapping[str, Any]
    """JSON schema of the expected reply object (sent as structured output when supported)."""
    max_output_tokens: int = 400
    metrics: tuple[str, ...] = ()
    """Metric ids a shared call answers for (a combined call's metrics); its tokens are split
    evenly across them in telemetry. Empty: the call is for ``metric`` alone."""

    @property
    def call(self) -> str:
        """The ``call`` label of this request's tokens: ``single``, or the shared call's id."""
        return self.metric if self.metrics else "single"

    @property
    def token_owners(self) -> tuple[str, ...]:
        """The metric ids the call's tokens are attributed to."""
        return self.metrics or (self.metric,)


@dataclass(frozen=True, slots=True)
class JudgeReply:
    data: Mapping[str, Any]
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
    async def complete_json(self, request: JudgeRequest) -> JudgeReply:
        """Send one request (with retries inside the client's deadline); raise JudgeError."""
        ...

    def report_invalid(self, metric: str, outcome: str) -> None:
        """Count a reply that parsed as JSON but failed the metric's validation."""
        ...
