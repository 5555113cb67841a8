"""``answer_consistency`` (Tonic Validate seed): share of the answer's main points backed by the context.

One call does both of the seed's steps: list the answer's main points, then attribute each to the
context (or not). Value = supported points / points. Default defect rule: value < 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from monitor.evaluation.inputs import Input
from monitor.evaluation.parsing import Parsed, ParseFailure, check_keys, first_failure, get_bool, get_list, get_text
from monitor.evaluation.prompting import array_field, bool_field, object_schema, system_prompt, text_field
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded
from monitor.evaluation.single_call import SingleCallEvaluator, SingleCallMetric
from monitor.model import JudgeUsage, Score

__all__ = ["METRIC_ID", "SYSTEM", "Point", "parse_reply", "consistency", "register"]

METRIC_ID = "answer_consistency"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
MAX_POINTS = 10

SYSTEM = system_prompt(
    "You measure how much of an AI assistant's answer is backed by the context. First list the "
    f"main points of the answer (1 to {MAX_POINTS}, each at most 12 words; skip greetings and "
    "offers of help). Then mark each point supported if it can be derived from the context alone.",
    "Keys: points (array of {point, supported}).",
)
SCHEMA = object_schema(
    {"points": array_field(object_schema({"point": text_field(), "supported": bool_field()}), 1, MAX_POINTS)}
)


@dataclass(frozen=True, slots=True)
class Point:
    point: str
    supported: bool


def _parse_point(item: Any) -> Parsed[Point]:
    bad = check_keys(item, ("point", "supported"))
    if bad:
        return bad
    text, supported = get_text(item, "point"), get_bool(item, "supported")
    failure = first_failure(text, supported)
    return failure if failure else Point(text, supported)  # type: ignore[arg-type]


def parse_reply(data: Mapping[str, Any]) -> Parsed[tuple[Point, ...]]:
    """``{"points": [{"point": str, "supported": bool}, ...]}`` with 1..10 points."""
    bad = check_keys(data, ("points",))
    if bad:
        return bad
    items = get_list(data, "points", 1, MAX_POINTS)
    if isinstance(items, ParseFailure):
        return items
    points = [_parse_point(item) for item in items]
    failure = first_failure(*points)
    return failure if failure else tuple(points)  # type: ignore[arg-type]


def consistency(points: tuple[Point, ...]) -> float:
    """Supported points / points (``points`` is never empty after parsing)."""
    return sum(p.supported for p in points) / len(points)


def _metric(threshold: float) -> SingleCallMetric[tuple[Point, ...]]:
    def to_score(points: tuple[Point, ...], usage: JudgeUsage, details: dict[str, Any]) -> Score:
        value = consistency(points)
        details.update(
            points=len(points),
            supported_points=sum(p.supported for p in points),
            unsupported=[p.point for p in points if not p.supported],
        )
        return graded(METRIC_ID, value, SCALE, value < threshold, usage=usage, details=details)

    return SingleCallMetric(
        METRIC_ID, SCALE, SYSTEM, SCHEMA, parse_reply, to_score,
        required=(Input.CONTEXT, Input.ANSWER), max_output_tokens=400,
    )


def register(registry: MetricRegistry) -> None:
    """Add ``answer_consistency`` to ``registry``."""

    def build(ctx: BuildContext) -> SingleCallEvaluator[tuple[Point, ...]]:
        return SingleCallEvaluator(_metric(ctx.threshold(METRIC_ID)), ctx.require_judge(), ctx.max_context_chars)

    registry.register(
        MetricSpec(
            METRIC_ID, "share of the answer's main points derivable from the context (Tonic)", "judge", SCALE,
            build=build, default_threshold=DEFAULT_THRESHOLD,
        )
    )
