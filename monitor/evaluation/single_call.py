"""The common shape of a metric judged with one call: gather inputs, ask, score.

Metric modules supply the fixed system prompt, the reply declaration and a function that turns
the validated reply into a Score; this class does the plumbing (skips, judge failures, invalid
replies) identically for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence

from monitor.evaluation.inputs import Input, Missing, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import build_request, prompt_version
from monitor.evaluation.scoring import Scale, skipped
from monitor.judge.replies import ReplyShape
from monitor.judge.types import Judge, R
from monitor.model import JudgeUsage, Score, Turn

__all__ = ["SingleCallMetric", "SingleCallEvaluator"]


@dataclass(frozen=True)
class SingleCallMetric(Generic[R]):
    """Everything metric-specific about a one-call judge metric."""

    metric_id: str
    scale: Scale
    system: str
    reply: ReplyShape[R]
    to_score: Callable[[R, JudgeUsage, dict[str, Any]], Score]
    """Build the graded Score from the validated reply, the usage and the input details."""
    required: tuple[Input, ...]
    optional: tuple[Input, ...] = ()
    max_output_tokens: int = 200


class SingleCallEvaluator(Generic[R]):
    """Runs a :class:`SingleCallMetric` against a judge."""

    def __init__(self, metric: SingleCallMetric[R], judge: Judge, max_context_chars: int) -> None:
        self.metric = metric
        self.metric_ids: tuple[str, ...] = (metric.metric_id,)
        self._judge = judge
        self._max_context_chars = max_context_chars
        self.prompt_versions = {metric.metric_id: prompt_version(metric.system, metric.reply.json_schema)}

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One judge call; a skipped, error or graded Score."""
        m = self.metric
        gathered = gather(turn, m.required, m.optional, self._max_context_chars)
        if isinstance(gathered, Missing):
            return [skipped(m.metric_id, m.scale, gathered.reason)]
        request = build_request(m.metric_id, m.system, gathered.blocks, m.reply,
                                max_output_tokens=m.max_output_tokens)
        details = {**gathered.details, "prompt_version": self.prompt_versions[m.metric_id]}
        reply = await ask(self._judge, request)
        if isinstance(reply, Failure):
            return [reply.score(m.metric_id, m.scale, details)]
        return [m.to_score(reply.value, reply.usage, details)]
