"""Every reply declaration the metrics ship yields a schema a strict structured-output judge
accepts: only the keywords of that subset (pydantic emits raw ``ge``/``le`` for constraints
placed after a validator, which a judge would reject or ignore), every object closed and with
every property required."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from monitor.evaluation.combined import per_metric_reply
from monitor.evaluation.metrics import answer_relevance, jailbreak
from monitor.evaluation.metrics._tonic_set import tonic_reply
from monitor.evaluation.metrics.retrieval_score import intents_reply
from monitor.evaluation.rubric import rubric_reply
from monitor.evaluation.severity import severity_reply
from monitor.judge.replies import ReplyShape

KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "minimum", "maximum",
            "minItems", "maxItems", "enum", "description"}

SHAPES: dict[str, ReplyShape[Any]] = {
    "rubric": rubric_reply("groundedness"),
    "severity": severity_reply("violence"),
    "combined": per_metric_reply("combined_rubrics", (("groundedness", 1, 5), ("relevance", 1, 5))),
    "safety": per_metric_reply("safety", (("violence", 0, 7), ("sexual", 0, 7))),
    "retrieval_score": intents_reply(3),
    "tonic": tonic_reply(("similarity", "relevant", "used", "points", "outside"), 3),
    "answer_relevance": answer_relevance.REPLY,
    "jailbreak": jailbreak.REPLY,
}


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key != "properties":
                yield from _nodes(value)
        for value in node.get("properties", {}).values():
            yield from _nodes(value)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_schema_uses_the_strict_subset_only(name: str) -> None:
    for node in _nodes(SHAPES[name].json_schema):
        assert set(node) <= KEYWORDS, (name, set(node) - KEYWORDS)
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert list(node["required"]) == list(node["properties"])


def test_ranges_reach_the_schema() -> None:
    props = SHAPES["tonic"].json_schema["properties"]
    assert (props["similarity"]["minimum"], props["similarity"]["maximum"]) == (0, 5)
    assert (props["documents"]["minItems"], props["documents"]["maxItems"]) == (3, 3)
    number = props["documents"]["items"]["properties"]["n"]
    assert (number["minimum"], number["maximum"]) == (1, 3)
    severity = SHAPES["safety"].json_schema["properties"]["violence"]
    assert (severity["minimum"], severity["maximum"]) == (0, 7)
    docs = SHAPES["retrieval_score"].json_schema["properties"]["intents"]["items"]["properties"]["docs"]
    assert (docs["items"]["minimum"], docs["items"]["maximum"], docs["maxItems"]) == (1, 3, 3)
