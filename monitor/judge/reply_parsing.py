"""Strict extraction of the judge's JSON reply object from the message text.

A failure is never a score: the reply must be exactly one JSON object (optionally inside a
single ```json fence). Anything else — empty text, prose around the object, two objects, NaN,
duplicate keys — is a ``parse_error``; we never hunt for "the first number in the text".

The object is then validated against the request's reply declaration
(:mod:`monitor.judge.replies`), the same pydantic model that gave the schema sent to the judge.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monitor.judge.types import JudgeError

__all__ = ["extract_json_object"]

_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


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
