"""``relevance``: how well the answer addresses the question.

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
    metric_id="relevance",
    criterion=(
        "Does the answer address what the question asks, all of it and little else? If a "
        "context is given, use it to see what a complete answer contains."
    ),
    anchors=(
        "5 = fully and only on point; 4 = mostly, slightly too narrow or broad; "
        "3 = partly; 2 = barely; 1 = off-topic or no answer."
    ),
    required=(Input.QUESTION, Input.ANSWER),
    optional=(Input.CONTEXT,),
)


def parse_reply(data: Mapping[str, Any]) -> Parsed[RubricReply]:
    """Validate the judge's reply: ``{"reason": str, "score": 1..5}``."""
    return parse_rubric_reply(data)


def register(registry: MetricRegistry) -> None:
    """Add ``relevance`` to ``registry``."""
    registry.register(rubric_spec(DEFINITION, "how well the answer addresses the question", combinable=True))
