"""1–5 rubric metrics (Azure quality set): definition, prompt, parser and evaluator.

Each rubric metric module supplies a :class:`RubricDefinition` in its own words; this module
turns it into a standalone evaluator, and :mod:`monitor.evaluation.combined` can judge several
definitions in one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from monitor.evaluation.inputs import Gathered, Input, Missing, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.parsing import Parsed, ParseFailure, parse_scored_reply
from monitor.evaluation.prompting import REASON_FIELD, build_request, int_field, object_schema, system_prompt
from monitor.evaluation.scoring import graded, skipped
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = ["RUBRIC_SCALE", "DEFAULT_RUBRIC_THRESHOLD", "RubricDefinition", "RubricReply", "parse_rubric_reply", "RubricEvaluator"]

RUBRIC_SCALE = (1.0, 5.0)
DEFAULT_RUBRIC_THRESHOLD = 3.0


@dataclass(frozen=True, slots=True)
class RubricDefinition:
    """What a rubric metric judges (``criterion``), its score anchors and its inputs."""

    metric_id: str
    criterion: str
    anchors: str
    required: tuple[Input, ...]
    optional: tuple[Input, ...] = ()

    def line(self) -> str:
        """One line for a combined prompt."""
        return f"- {self.metric_id} (integer 1-5): {self.criterion} {self.anchors}"


@dataclass(frozen=True, slots=True)
class RubricReply:
    score: int
    reason: str


def parse_rubric_reply(data: Mapping[str, Any], low: int = 1, high: int = 5) -> Parsed[RubricReply]:
    """``{"reason": str, "score": int in [low, high]}`` and nothing else."""
    parsed = parse_scored_reply(data, low, high, integer=True)
    if isinstance(parsed, ParseFailure):
        return parsed
    return RubricReply(int(parsed.score), parsed.reason)


def rubric_schema(low: int = 1, high: int = 5) -> dict[str, Any]:
    """Reply schema: a short reason first (cheap reasoning), then the score."""
    return object_schema({"reason": REASON_FIELD, "score": int_field(low, high)})


def rubric_system_prompt(definition: RubricDefinition) -> str:
    """The fixed instructions of a standalone rubric metric."""
    return system_prompt(
        "You grade one aspect of an AI assistant's answer.",
        f"{definition.metric_id}: {definition.criterion}",
        f"Integer score 1-5. {definition.anchors}",
        "Keys: reason (at most 25 words), score.",
    )


class RubricEvaluator:
    """One 1–5 rubric metric judged on its own; defect when score < threshold."""

    def __init__(
        self, definition: RubricDefinition, judge: Judge, threshold: float, max_context_chars: int
    ) -> None:
        self.definition = definition
        self.metric_ids = (definition.metric_id,)
        self._judge = judge
        self._threshold = threshold
        self._max_context_chars = max_context_chars
        self._system = rubric_system_prompt(definition)
        self._schema = rubric_schema()

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
        request = build_request(metric, self._system, gathered.blocks, self._schema)
        verdict = await ask(self._judge, request, parse_rubric_reply)
        if isinstance(verdict, Failure):
            return [verdict.score(metric, RUBRIC_SCALE, gathered.details)]
        reply = verdict.value
        return [
            graded(
                metric,
                reply.score,
                RUBRIC_SCALE,
                reply.score < self._threshold,
                reason=reply.reason,
                usage=verdict.usage,
                details=gathered.details,
            )
        ]
