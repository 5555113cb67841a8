"""``answer_consistency_binary`` (Tonic Validate seed): 1 when nothing in the answer is outside the context.

Context = document text, or the system prompt when documents carry no text
(``details["context_source"]``). Defect when the value is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from monitor.evaluation.inputs import Input
from monitor.evaluation.parsing import Parsed, ParseFailure, check_keys, get_bool, get_text
from monitor.evaluation.prompting import REASON_FIELD, bool_field, object_schema, system_prompt
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded
from monitor.evaluation.single_call import SingleCallEvaluator, SingleCallMetric
from monitor.model import JudgeUsage, Score

__all__ = ["METRIC_ID", "SYSTEM", "ConsistencyBinaryReply", "parse_reply", "register"]

METRIC_ID = "answer_consistency_binary"
SCALE = (0.0, 1.0)

SYSTEM = system_prompt(
    "You check whether an AI assistant's answer contains any information not derived from the "
    "context. Paraphrases, summaries and simple inferences from the context count as derived; "
    "added facts, figures, names or advice do not. Greetings and offers of help are not information.",
    "Keys: reason (at most 25 words; name the first outside item, if any), outside_information (boolean).",
)
SCHEMA = object_schema({"reason": REASON_FIELD, "outside_information": bool_field()})


@dataclass(frozen=True, slots=True)
class ConsistencyBinaryReply:
    outside_information: bool
    reason: str


def parse_reply(data: Mapping[str, Any]) -> Parsed[ConsistencyBinaryReply]:
    """``{"reason": str, "outside_information": bool}`` and nothing else."""
    bad = check_keys(data, ("reason", "outside_information"))
    if bad:
        return bad
    reason = get_text(data, "reason")
    if isinstance(reason, ParseFailure):
        return reason
    outside = get_bool(data, "outside_information")
    if isinstance(outside, ParseFailure):
        return outside
    return ConsistencyBinaryReply(outside, reason)


def _to_score(reply: ConsistencyBinaryReply, usage: JudgeUsage, details: dict[str, Any]) -> Score:
    value = 0.0 if reply.outside_information else 1.0
    return graded(METRIC_ID, value, SCALE, value == 0.0, reason=reply.reason, usage=usage, details=details)


METRIC = SingleCallMetric(
    METRIC_ID, SCALE, SYSTEM, SCHEMA, parse_reply, _to_score, required=(Input.CONTEXT, Input.ANSWER)
)


def register(registry: MetricRegistry) -> None:
    """Add ``answer_consistency_binary`` to ``registry``."""

    def build(ctx: BuildContext) -> SingleCallEvaluator[ConsistencyBinaryReply]:
        return SingleCallEvaluator(METRIC, ctx.require_judge(), ctx.max_context_chars)

    registry.register(
        MetricSpec(METRIC_ID, "1 when all answer information comes from the context (Tonic)", "judge", SCALE, build=build)
    )
