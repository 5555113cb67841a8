"""``fluency``: grammar and wording quality of the answer.

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
    metric_id="fluency",
    criterion=(
        "Are the sentences of the answer grammatical, well formed and naturally worded? "
        "Ignore content and correctness; symbols and formatting are not errors."
    ),
    anchors=(
        "5 = flawless; 4 = rare slips; 3 = noticeable errors that slow reading; "
        "2 = frequent errors; 1 = hard to read."
    ),
    required=(Input.ANSWER,),
    optional=(),
)


def parse_reply(data: Mapping[str, Any]) -> Parsed[RubricReply]:
    """Validate the judge's reply: ``{"reason": str, "score": 1..5}``."""
    return parse_rubric_reply(data)


def register(registry: MetricRegistry) -> None:
    """Add ``fluency`` to ``registry``."""
    registry.register(rubric_spec(DEFINITION, "grammar and wording quality of the answer", combinable=True))
