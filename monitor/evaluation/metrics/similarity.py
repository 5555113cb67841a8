"""``similarity``: closeness in meaning of the answer to the ground-truth answer.

Azure quality set, integer 1–5, defect below the threshold, default 3.
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.evaluation.inputs import Input
from monitor.evaluation.metrics._specs import rubric_spec
from monitor.evaluation.parsing import Parsed
from monitor.evaluation.registry import MetricRegistry
from monitor.evaluation.rubric import RubricDefinition, RubricReply, parse_rubric_reply

__all__ = ["DEFINITION", "parse_reply", "register"]

DEFINITION = RubricDefinition(
    metric_id="similarity",
    criterion=(
        "How close in meaning is the answer to the reference answer for this question? "
        "Wording does not matter; facts and conclusions do."
    ),
    anchors=(
        "5 = equivalent; 4 = mostly the same; 3 = partly the same; 2 = mostly different; "
        "1 = unrelated or contradicting."
    ),
    required=(Input.QUESTION, Input.GROUND_TRUTH, Input.ANSWER),
    optional=(),
)


def parse_reply(data: Mapping[str, Any]) -> Parsed[RubricReply]:
    """Validate the judge's reply: ``{"reason": str, "score": 1..5}``."""
    return parse_rubric_reply(data)


def register(registry: MetricRegistry) -> None:
    """Add ``similarity`` to ``registry``."""
    registry.register(rubric_spec(DEFINITION, "closeness in meaning of the answer to the ground-truth answer", combinable=False))
