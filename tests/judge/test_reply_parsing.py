from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from monitor.judge.replies import ReplyModel, ReplyShape
from monitor.judge.reply_parsing import extract_json_object
from monitor.judge.types import JudgeError
from tests.judge.fakes import reply_shape


@pytest.mark.parametrize("text", [
    '{"a": 1}', '  {"a": 1}\n', '```json\n{"a": 1}\n```', '```\n{"a": 1}\n```', '```JSON\n{"a": 1}```',
])
def test_one_object_is_accepted(text: str) -> None:
    assert extract_json_object(text) == {"a": 1}


@pytest.mark.parametrize("text", [
    None, "", "  ", "4", '"{}"', "[1]", '{"a": 1} {"a": 2}', 'Sure! {"a": 1}', '{"a": 1}\nDone.',
    '```json\n{"a": 1}\n```\nextra', '{"a": Infinity}', '{"a": 1, "a": 2}', "{'a': 1}",
])
def test_anything_else_is_a_parse_error(text: str | None) -> None:
    with pytest.raises(JudgeError) as info:
        extract_json_object(text)
    assert info.value.outcome == "parse_error"


@pytest.mark.parametrize("value", [
    {"score": 1, "reason": ""}, {"score": 5, "reason": "x"}, {"score": 3.0, "reason": "x"},
])
def test_valid_objects_pass(value: dict[str, Any]) -> None:
    assert reply_shape().validate(value).score == int(value["score"])


@pytest.mark.parametrize("value, outcome", [
    ({"score": 6, "reason": "x"}, "out_of_range"),
    ({"score": 0, "reason": "x"}, "out_of_range"),
    ({"score": 2.5, "reason": "x"}, "out_of_range"),
    ({"score": "3", "reason": "x"}, "parse_error"),
    ({"score": True, "reason": "x"}, "parse_error"),
    ({"score": None, "reason": "x"}, "parse_error"),
    ({"reason": "x"}, "parse_error"),
    ({"score": 3, "reason": "x", "other": 1}, "parse_error"),
    ({"score": 9, "reason": 5}, "parse_error"),  # a wrong shape outranks a wrong value
])
def test_violations_are_classified(value: dict[str, Any], outcome: str) -> None:
    with pytest.raises(JudgeError) as info:
        reply_shape().validate(value)
    assert info.value.outcome == outcome


class _Verdict(ReplyModel):
    verdict: Literal["yes", "no"]
    weight: Annotated[float, Field(gt=0)] = 1.0


class _Intents(ReplyModel):
    intents: Annotated[list[_Verdict], Field(min_length=1, max_length=2)]


def test_nested_items_literals_and_exclusive_bounds() -> None:
    shape = ReplyShape("intents", _Intents)
    assert shape.validate({"intents": [{"verdict": "yes", "weight": 0.5}]}).intents[0].weight == 0.5
    with pytest.raises(JudgeError, match=r"\$\.intents\[1\]\.verdict") as info:
        shape.validate({"intents": [{"verdict": "yes"}, {"verdict": "maybe"}]})
    assert info.value.outcome == "parse_error"  # not one of the allowed words: a wrong answer, not a range
    for bad in ({"intents": [{"verdict": "no", "weight": 0}]}, {"intents": [{"verdict": "no"}] * 3},
                {"intents": []}):
        with pytest.raises(JudgeError) as info:
            shape.validate(bad)
        assert info.value.outcome == "out_of_range", bad


def test_the_schema_sent_is_the_declaration_inlined_without_titles() -> None:
    schema = ReplyShape("intents", _Intents).json_schema
    item = schema["properties"]["intents"]["items"]
    assert "$defs" not in schema and "$ref" not in json.dumps(schema) and "title" not in json.dumps(schema)
    assert item["additionalProperties"] is False and item["properties"]["verdict"]["enum"] == ["yes", "no"]
    assert schema["properties"]["intents"]["minItems"] == 1
    assert reply_shape().json_schema["properties"]["score"] == {"maximum": 5, "minimum": 1, "type": "integer"}
