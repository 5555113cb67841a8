"""1–5 rubric metrics (Azure quality set): definition, reply declaration and evaluator.

A rubric metric is data — a :class:`RubricDefinition` in the table of
:mod:`monitor.evaluation.metrics.azure_set` — that this module turns into a standalone evaluator;
:mod:`monitor.evaluation.combined` can judge several definitions in one call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Sequence

from pydantic import Field

from monitor.evaluation.inputs import Gathered, Input, Missing, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import build_request, prompt_version, schema_name, system_prompt
from monitor.evaluation.scoring import graded, skipped
from monitor.judge.replies import Reason, ReplyModel, ReplyShape, whole_number
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = ["RUBRIC_SCALE", "DEFAULT_RUBRIC_THRESHOLD", "RubricDefinition", "RubricReply", "rubric_reply",
           "RubricEvaluator"]

RUBRIC_SCALE = (1.0, 5.0)
DEFAULT_RUBRIC_THRESHOLD = 3.0


@dataclass(frozen=True, slots=True)
class RubricDefinition:
    """What a rubric metric judges (``criterion``), one anchor per score (``anchors[0]`` is 1,
    ``anchors[4]`` is 5), its inputs, and whether it can join the combined call."""

    metric_id: str
    summary: str
    criterion: str
    anchors: tuple[str, str, str, str, str]
    required: tuple[Input, ...]
    optional: tuple[Input, ...] = ()
    combinable: bool = True

    def scale_text(self) -> str:
        """Every score with its anchor, best first."""
        return "; ".join(f"{n} = {self.anchors[n - 1]}" for n in range(5, 0, -1)) + "."

    def line(self) -> str:
        """This metric's section of a combined prompt."""
        return f"- {self.metric_id} (integer 1-5): {self.criterion} {self.scale_text()}"


class RubricReply(ReplyModel):
    """A short reason first (cheap reasoning), then the integer score."""

    reason: Reason
    score: Annotated[int, Field(ge=1, le=5), whole_number]


@functools.cache
def rubric_reply(metric_id: str) -> ReplyShape[RubricReply]:
    """The reply declaration of a standalone rubric metric (named after the metric)."""
    return ReplyShape(schema_name(metric_id), RubricReply)


def rubric_system_prompt(definition: RubricDefinition) -> str:
    """The fixed instructions of a standalone rubric metric."""
    return system_prompt(
        "You grade one aspect of an AI assistant's answer.",
        f"{definition.metric_id}: {definition.criterion}",
        f"Integer score 1-5. {definition.scale_text()}",
        "Keys: reason (at most 25 words), score.",
    )


class RubricEvaluator:
    """One 1–5 rubric metric judged on its own; defect when score < threshold."""

    def __init__(
        self, definition: RubricDefinition, judge: Judge, threshold: float, max_context_chars: int
    ) -> None:
        self.definition = definition
        self.metric_ids: tuple[str, ...] = (definition.metric_id,)
        self._judge = judge
        self._threshold = threshold
        self._max_context_chars = max_context_chars
        self._system = rubric_system_prompt(definition)
        self._reply = rubric_reply(definition.metric_id)
        self.prompt_versions = {definition.metric_id: prompt_version(self._system, self._reply.json_schema)}

    def prepare(self, turn: Turn) -> Gathered | Missing:
        """The data blocks for ``turn`` (or why the metric is skipped)."""
        d = self.definition
        return gather(turn, d.required, d.optional, self._max_context_chars)

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """Judge ``turn``; a skipped, error or graded Score."""
        metric = self.definition.metric_id
        gathered = self.prepare(turn)
        if isinstance(gathered, Missing):
            return [skipped(metric, RUBRIC_SCALE, gathered.reason)]
        request = build_request(metric, self._system, gathered.blocks, self._reply)
        reply = await ask(self._judge, request)
        details = {**gathered.details, "prompt_version": self.prompt_versions[metric]}
        if isinstance(reply, Failure):
            return [reply.score(metric, RUBRIC_SCALE, details)]
        value = reply.value
        return [graded(metric, value.score, RUBRIC_SCALE, value.score < self._threshold, reason=value.reason,
                       usage=reply.usage, details=details)]
