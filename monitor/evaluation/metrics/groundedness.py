"""``groundedness``: how far the answer's claims are supported by the context.

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
    metric_id="groundedness",
    criterion=(
        "Are the claims in the answer supported by the context? Judge support, not world "
        "knowledge: a true claim that the context does not back is unsupported."
    ),
    anchors=(
        "5 = every claim supported; 4 = a minor unsupported detail; "
        "3 = some claims unsupported; 2 = mostly unsupported; "
        "1 = unsupported or contradicts the context."
    ),
    required=(Input.CONTEXT, Input.ANSWER),
    optional=(Input.QUESTION,),
)


def parse_reply(data: Mapping[str, Any]) -> Parsed[RubricReply]:
    """Validate the judge's reply: ``{"reason": str, "score": 1..5}``."""
    return parse_rubric_reply(data)


def register(registry: MetricRegistry) -> None:
    """Add ``groundedness`` to ``registry``."""
    registry.register(rubric_spec(DEFINITION, "how far the answer's claims are supported by the context", combinable=True))
