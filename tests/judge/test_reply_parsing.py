from __future__ import annotations

from typing import Any

import pytest

from monitor.judge.reply_parsing import check_schema, extract_json_object
from monitor.judge.types import JudgeError
from tests.judge.fakes import SCHEMA


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
    check_schema(value, SCHEMA)


@pytest.mark.parametrize("value, outcome", [
    ({"score": 6, "reason": "x"}, "out_of_range"),
    ({"score": 0, "reason": "x"}, "out_of_range"),
    ({"score": 2.5, "reason": "x"}, "out_of_range"),
    ({"score": True, "reason": "x"}, "parse_error"),
    ({"score": None, "reason": "x"}, "parse_error"),
    ({"reason": "x"}, "parse_error"),
    ({"score": 3, "reason": "x", "other": 1}, "parse_error"),
])
def test_violations_are_classified(value: dict[str, Any], outcome: str) -> None:
    with pytest.raises(JudgeError) as info:
        check_schema(value, SCHEMA)
    assert info.value.outcome == outcome


def test_nested_items_enum_and_exclusive_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "intents": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                "type": "object",
                "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                               "weight": {"type": "number", "exclusiveMinimum": 0}},
                "required": ["verdict"],
            }},
            "label": {"type": ["string", "null"]},
        },
        "required": ["intents"],
    }
    check_schema({"intents": [{"verdict": "yes", "weight": 0.5}], "label": None}, schema)
    with pytest.raises(JudgeError, match=r"\$\.intents\[1\]\.verdict") as info:
        check_schema({"intents": [{"verdict": "yes"}, {"verdict": "maybe"}]}, schema)
    assert info.value.outcome == "out_of_range"
    with pytest.raises(JudgeError) as info:
        check_schema({"intents": [{"verdict": "no", "weight": 0}]}, schema)
    assert info.value.outcome == "out_of_range"
    with pytest.raises(JudgeError, match="3 items") as info:
        check_schema({"intents": [{"verdict": "no"}] * 3}, schema)
    assert info.value.outcome == "out_of_range"
    with pytest.raises(JudgeError) as info:
        check_schema({"intents": []}, schema)
    assert info.value.outcome == "out_of_range"
