"""``answer_relevance`` (Opik seed): how relevant the answer is to the input, 0.0–1.0 with a reason.

Works with and without context: the context, when present, only helps the judge understand
what the input asks. Default defect rule: score < 0.5.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from monitor.evaluation.inputs import Input
from monitor.evaluation.prompting import system_prompt
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec, input_names
from monitor.evaluation.scoring import graded
from monitor.evaluation.single_call import SingleCallEvaluator, SingleCallMetric
from monitor.judge.replies import Reason, ReplyModel, ReplyShape
from monitor.model import JudgeUsage, Score

__all__ = ["METRIC_ID", "SYSTEM", "AnswerRelevanceReply", "REPLY", "register"]

METRIC_ID = "answer_relevance"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5

SYSTEM = system_prompt(
    "You rate how relevant an AI assistant's answer is to the user's input, from 0.0 "
    "(irrelevant) to 1.0 (fully relevant). Work out what the input asks; a context, if given, "
    "helps you understand it. Lower the score for parts left unanswered and for off-topic or "
    "filler content; give 1.0 only when the answer is fully on point with nothing extraneous. "
    "Relevance, not factual accuracy.",
    "Keys: reason (at most 30 words), score (number 0.0-1.0).",
)


class AnswerRelevanceReply(ReplyModel):
    reason: Reason
    score: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


REPLY = ReplyShape(METRIC_ID, AnswerRelevanceReply)


def _metric(threshold: float) -> SingleCallMetric[AnswerRelevanceReply]:
    def to_score(reply: AnswerRelevanceReply, usage: JudgeUsage, details: dict[str, Any]) -> Score:
        details.setdefault("context_source", None)
        return graded(METRIC_ID, reply.score, SCALE, reply.score < threshold, reason=reply.reason, usage=usage, details=details)

    return SingleCallMetric(
        METRIC_ID, SCALE, SYSTEM, REPLY, to_score,
        required=(Input.QUESTION, Input.ANSWER), optional=(Input.CONTEXT,),
    )


def register(registry: MetricRegistry) -> None:
    """Add ``answer_relevance`` to ``registry``."""

    def build(ctx: BuildContext) -> SingleCallEvaluator[AnswerRelevanceReply]:
        return SingleCallEvaluator(_metric(ctx.threshold(METRIC_ID)), ctx.require_judge(), ctx.max_context_chars)

    registry.register(
        MetricSpec(
            METRIC_ID, "relevance of the answer to the input (Opik), 0-1", "judge", SCALE,
            build=build, default_threshold=DEFAULT_THRESHOLD, seed="Opik",
            inputs=input_names(_metric(DEFAULT_THRESHOLD).required, _metric(DEFAULT_THRESHOLD).optional),
        )
    )
