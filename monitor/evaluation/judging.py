"""One judge call: the validated reply or a typed failure, never an exception.

The judge client validates the reply against the request's declaration before it counts the call
(:mod:`monitor.judge.replies`), so there is nothing left to parse here: a ``JudgeError`` of any
outcome — including ``parse_error``/``out_of_range`` for a reply that did not validate, and
``refused`` — becomes a :class:`Failure`, whose Score is ``error`` or, for ``refused``,
``unscored_refused``. Unexpected exceptions propagate to the runner on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from monitor.evaluation.scoring import Scale, failed, refused
from monitor.judge.types import Judge, JudgeError, JudgeReply, JudgeRequest, R
from monitor.model import JudgeUsage, Score

__all__ = ["Failure", "ask"]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why there is no value: ``outcome`` is a judge outcome label."""

    outcome: str
    message: str
    usage: JudgeUsage

    @property
    def refused(self) -> bool:
        """The judge refused or a content filter blocked the call (not an error)."""
        return self.outcome == "refused"

    def score(self, metric: str, scale: Scale, details: Mapping[str, Any] | None = None) -> Score:
        """This failure as a Score of ``metric``: ``unscored_refused`` for a refusal or a content
        filter, else ``error`` with the outcome as ``error_type``."""
        if self.refused:
            return refused(metric, scale, self.message, self.usage, details)
        return failed(metric, scale, self.outcome, self.message, self.usage, details)


async def ask(judge: Judge, request: JudgeRequest[R]) -> JudgeReply[R] | Failure:
    """Send ``request``; a ``JudgeError`` becomes a :class:`Failure`."""
    try:
        return await judge.complete_json(request)
    except JudgeError as exc:
        return Failure(exc.outcome, str(exc), exc.usage)
