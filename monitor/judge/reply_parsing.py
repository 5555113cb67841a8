"""Strict extraction and checking of the judge's JSON reply.

A failure is never a score: the reply must be exactly one JSON object (optionally inside a
single ```json fence). Anything else — empty text, prose around the object, two objects, NaN,
duplicate keys — is a ``parse_error``; we never hunt for "the first number in the text".

:func:`check_schema` validates the object against the small JSON-schema subset metric schemas
use (``type``, ``properties``, ``required``, ``additionalProperties: false``, ``enum``,
``minimum``/``maximum`` and their exclusive forms, ``items``, ``minItems``/``maxItems``); other
keywords are ignored. A wrong shape (missing key, wrong type, unexpected key) is ``parse_error``;
a value of the right kind outside what is allowed — a range, an enum, an array length, a
fractional number where an integer is due — is ``out_of_range`` (the metric parsers classify
the same way).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

from monitor.judge.types import JudgeError

__all__ = ["extract_json_object", "check_schema"]

_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A duplicated key means two answers in one object; taking either would be a guess.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def extract_json_object(text: str | None) -> dict[str, Any]:
    """Parse ``text`` as exactly one JSON object; raise ``JudgeError("parse_error")``."""
    if text is None or not text.strip():
        raise JudgeError("parse_error", "empty judge reply")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        value = json.loads(body, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError; covers trailing content
        raise JudgeError("parse_error", f"judge reply is not one JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise JudgeError("parse_error", f"judge reply is a JSON {type(value).__name__}, not an object")
    return value


def check_schema(value: Any, schema: Mapping[str, Any]) -> None:
    """Validate ``value`` against ``schema``; raise ``JudgeError`` naming the failing path."""
    _check(value, schema, "$")


def _check(value: Any, schema: Mapping[str, Any], path: str) -> None:
    _check_type(value, schema, path)
    if "enum" in schema and value not in schema["enum"]:
        raise JudgeError("out_of_range", f"{path}: {value!r} is not one of {list(schema['enum'])!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_range(value, schema, path)
    if isinstance(value, dict):
        _check_object(value, schema, path)
    if isinstance(value, list):
        _check_array(value, schema, path)


def _check_type(value: Any, schema: Mapping[str, Any], path: str) -> None:
    declared = schema.get("type")
    if declared is None:
        return
    names = [declared] if isinstance(declared, str) else list(declared)
    if any(_is_type(value, name) for name in names):
        return
    if "integer" in names and _is_type(value, "number"):
        raise JudgeError("out_of_range", f"{path}: {value!r} is not a whole number")
    raise JudgeError("parse_error", f"{path}: expected {'/'.join(names)}, got {type(value).__name__}")


def _is_type(value: Any, name: str) -> bool:
    # bool is an int in Python but not a number in JSON.
    if isinstance(value, bool) and name != "boolean":
        return False
    if not isinstance(value, _JSON_TYPES.get(name, ())):
        return False
    if name == "integer":
        return isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
    return True


def _check_array(value: list[Any], schema: Mapping[str, Any], path: str) -> None:
    low, high = schema.get("minItems"), schema.get("maxItems")
    if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
        bounds = f"{low if low is not None else 0}..{high if high is not None else ''}"
        raise JudgeError("out_of_range", f"{path}: {len(value)} items, expected {bounds}")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _check(item, items, f"{path}[{index}]")


def _check_range(value: float, schema: Mapping[str, Any], path: str) -> None:
    bounds = (
        ("minimum", lambda b: value >= b, ">="),
        ("maximum", lambda b: value <= b, "<="),
        ("exclusiveMinimum", lambda b: value > b, ">"),
        ("exclusiveMaximum", lambda b: value < b, "<"),
    )
    for keyword, holds, symbol in bounds:
        bound = schema.get(keyword)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and not holds(bound):
            raise JudgeError("out_of_range", f"{path}: {value!r} is not {symbol} {bound!r}")


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            raise JudgeError("parse_error", f"{path}: missing required key {key!r}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            raise JudgeError("parse_error", f"{path}: unexpected keys {extra!r}")
    for key, sub in properties.items():
        if key in value and isinstance(sub, Mapping):
            _check(value[key], sub, f"{path}.{key}")
