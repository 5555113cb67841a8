"""One judge call plus its parser: a validated value or a typed failure, never an exception.

Judge failures (``JudgeError``) and replies the parser rejects both become :class:`Failure`;
the latter is also reported through ``Judge.report_invalid`` so the judge's outcome counters see
every unusable reply. Unexpected exceptions propagate to the runner on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar

from monitor.evaluation.parsing import ParseFailure
from monitor.evaluation.scoring import Scale, failed
from monitor.judge.types import Judge, JudgeError, JudgeReply, JudgeRequest
from monitor.model import JudgeUsage, Score

__all__ = ["Verdict", "Failure", "ask", "ask_raw"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Verdict(Generic[T]):
    value: T
    usage: JudgeUsage


@dataclass(frozen=True, slots=True)
class Failure:
    """Why there is no value: ``outcome`` is a judge outcome label."""

    outcome: str
    message: str
    usage: JudgeUsage

    def score(self, metric: str, scale: Scale, details: Mapping[str, Any] | None = None) -> Score:
        """This failure as an ``error`` Score of ``metric``."""
        return failed(metric, scale, self.outcome, self.message, self.usage, details)


async def ask_raw(judge: Judge, request: JudgeRequest) -> JudgeReply | Failure:
    """Send ``request``; a ``JudgeError`` becomes a :class:`Failure`."""
    try:
        return await judge.complete_json(request)
    except JudgeError as exc:
        return Failure(exc.outcome, str(exc), exc.usage)


async def ask(
    judge: Judge,
    request: JudgeRequest,
    parse: Callable[[Mapping[str, Any]], T | ParseFailure],
) -> Verdict[T] | Failure:
    """Send ``request`` and validate the reply with ``parse`` (a pure function)."""
    reply = await ask_raw(judge, request)
    if isinstance(reply, Failure):
        return reply
    parsed = parse(reply.data)
    if isinstance(parsed, ParseFailure):
        judge.report_invalid(request.metric, parsed.outcome)
        return Failure(parsed.outcome, parsed.message, reply.usage)
    return Verdict(parsed, reply.usage)
