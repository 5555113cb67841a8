"""``coherence``: how well the answer's sentences fit together as a whole.

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
    metric_id="coherence",
    criterion=(
        "Do the sentences of the answer connect logically and read as one organised whole "
        "that responds to the question? Ignore factual accuracy."
    ),
    anchors=(
        "5 = fully coherent; 4 = minor jumps; 3 = partly disjointed; "
        "2 = mostly disjointed; 1 = incoherent."
    ),
    required=(Input.QUESTION, Input.ANSWER),
    optional=(),
)


def parse_reply(data: Mapping[str, Any]) -> Parsed[RubricReply]:
    """Validate the judge's reply: ``{"reason": str, "score": 1..5}``."""
    return parse_rubric_reply(data)


def register(registry: MetricRegistry) -> None:
    """Add ``coherence`` to ``registry``."""
    registry.register(rubric_spec(DEFINITION, "how well the answer's sentences fit together as a whole", combinable=True))
