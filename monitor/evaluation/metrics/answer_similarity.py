"""``answer_similarity`` (Tonic Validate seed): 0–5 match in meaning with the reference answer.

Needs ground truth (skipped without it). The value is usually an integer but any number in
[0, 5] is accepted, as in the seed. Default defect rule: score < 2.5 (half the scale, the same
point as the 0.5 threshold of the 0–1 metrics).
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.evaluation.inputs import Input
from monitor.evaluation.parsing import Parsed, ScoredReply, parse_scored_reply
from monitor.evaluation.prompting import REASON_FIELD, number_field, object_schema, system_prompt
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded
from monitor.evaluation.single_call import SingleCallEvaluator, SingleCallMetric
from monitor.model import JudgeUsage, Score

__all__ = ["METRIC_ID", "SYSTEM", "AnswerSimilarityReply", "parse_reply", "register"]

METRIC_ID = "answer_similarity"
SCALE = (0.0, 5.0)
DEFAULT_THRESHOLD = 2.5

SYSTEM = system_prompt(
    "You compare an AI assistant's answer with a reference answer to the same question. Score "
    "0-5 how well the answer matches the reference in meaning: 5 = same facts and conclusion; "
    "3 = partly matches or misses key facts; 0 = unrelated or contradicts it. Style and length "
    "do not matter.",
    "Keys: reason (at most 25 words), score (number 0-5).",
)
SCHEMA = object_schema({"reason": REASON_FIELD, "score": number_field(0.0, 5.0)})


AnswerSimilarityReply = ScoredReply


def parse_reply(data: Mapping[str, Any]) -> Parsed[ScoredReply]:
    """``{"reason": str, "score": number in [0, 5]}`` and nothing else."""
    return parse_scored_reply(data, 0.0, 5.0)


def _metric(threshold: float) -> SingleCallMetric[AnswerSimilarityReply]:
    def to_score(reply: AnswerSimilarityReply, usage: JudgeUsage, details: dict[str, Any]) -> Score:
        return graded(METRIC_ID, reply.score, SCALE, reply.score < threshold, reason=reply.reason, usage=usage, details=details)

    return SingleCallMetric(
        METRIC_ID, SCALE, SYSTEM, SCHEMA, parse_reply, to_score,
        required=(Input.GROUND_TRUTH, Input.ANSWER), optional=(Input.QUESTION,),
    )


def register(registry: MetricRegistry) -> None:
    """Add ``answer_similarity`` to ``registry``."""

    def build(ctx: BuildContext) -> SingleCallEvaluator[AnswerSimilarityReply]:
        return SingleCallEvaluator(_metric(ctx.threshold(METRIC_ID)), ctx.require_judge(), ctx.max_context_chars)

    registry.register(
        MetricSpec(
            METRIC_ID, "match in meaning with the ground-truth answer (Tonic), 0-5", "judge", SCALE,
            build=build, default_threshold=DEFAULT_THRESHOLD,
        )
    )
