"""One judge call: the validated reply or a typed failure, never an exception.

The judge client validates the reply against the request's declaration before it counts the call
(:mod:`monitor.judge.replies`), so there is nothing left to parse here: a ``JudgeError`` of any
outcome — including ``parse_error``/``out_of_range`` for a reply that did not validate — becomes a
:class:`Failure`. Unexpected exceptions propagate to the runner on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from monitor.evaluation.scoring import Scale, failed
from monitor.judge.types import Judge, JudgeError, JudgeReply, JudgeRequest, R
from monitor.model import JudgeUsage, Score

__all__ = ["Failure", "ask"]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why there is no value: ``outcome`` is a judge outcome label."""

    outcome: str
    message: str
    usage: JudgeUsage

    def score(self, metric: str, scale: Scale, details: Mapping[str, Any] | None = None) -> Score:
        """This failure as an ``error`` Score of ``metric``."""
        return failed(metric, scale, self.outcome, self.message, self.usage, details)


async def ask(judge: Judge, request: JudgeRequest[R]) -> JudgeReply[R] | Failure:
    """Send ``request``; a ``JudgeError`` becomes a :class:`Failure`."""
    try:
        return await judge.complete_json(request)
    except JudgeError as exc:
        return Failure(exc.outcome, str(exc), exc.usage)
