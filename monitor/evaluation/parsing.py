"""Pure validation primitives for judge replies.

A metric parser receives the JSON object the judge client decoded and returns either the
validated value or a :class:`ParseFailure`. Nothing here raises for bad input and nothing here
coerces: a string "4" is not the integer 4, ``true`` is not 1, a missing key is not a default.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Collection, Literal, Mapping, TypeVar

__all__ = [
    "ParseFailure",
    "Parsed",
    "check_keys",
    "get_int",
    "get_number",
    "get_bool",
    "get_text",
    "get_list",
    "decode_json_object",
    "first_failure",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """A reply object that does not validate. ``outcome`` is a judge outcome label."""

    outcome: Literal["parse_error", "out_of_range"]
    message: str


Parsed = T | ParseFailure  # a validated value or the reason it is not one

# Reasons are shown on the status page and stored; cap them so a runaway judge cannot bloat rows.
MAX_REASON_CHARS = 600


def check_keys(data: Any, required: Collection[str], optional: Collection[str] = ()) -> ParseFailure | None:
    """Reject anything but a mapping with exactly the ``required`` keys (plus ``optional``)."""
    if not isinstance(data, Mapping):
        return ParseFailure("parse_error", f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in required if k not in data]
    if missing:
        return ParseFailure("parse_error", f"missing key(s): {', '.join(sorted(missing))}")
    allowed = set(required) | set(optional)
    extra = [str(k) for k in data if k not in allowed]
    if extra:
        return ParseFailure("parse_error", f"unexpected key(s): {', '.join(sorted(extra))}")
    return None


def get_int(data: Mapping[str, Any], key: str, low: int, high: int) -> Parsed[int]:
    """An integer in [low, high]. A non-integral number is out of range; anything else is a parse error."""
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ParseFailure("parse_error", f"{key}: expected an integer, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():
        return ParseFailure("out_of_range", f"{key}: {value!r} is not a whole number")
    if not low <= value <= high:
        return ParseFailure("out_of_range", f"{key}: {value!r} is outside [{low}, {high}]")
    return int(value)


def get_number(data: Mapping[str, Any], key: str, low: float, high: float) -> Parsed[float]:
    """A finite number in [low, high]."""
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ParseFailure("parse_error", f"{key}: expected a number, got {type(value).__name__}")
    if not math.isfinite(value) or not low <= value <= high:
        return ParseFailure("out_of_range", f"{key}: {value!r} is outside [{low}, {high}]")
    return float(value)


def get_bool(data: Mapping[str, Any], key: str) -> Parsed[bool]:
    """A JSON boolean (not 0/1, not "yes")."""
    value = data[key]
    if not isinstance(value, bool):
        return ParseFailure("parse_error", f"{key}: expected a boolean, got {type(value).__name__}")
    return value


def get_text(data: Mapping[str, Any], key: str) -> Parsed[str]:
    """A string, cut to :data:`MAX_REASON_CHARS`."""
    value = data[key]
    if not isinstance(value, str):
        return ParseFailure("parse_error", f"{key}: expected a string, got {type(value).__name__}")
    return value[:MAX_REASON_CHARS]


def get_list(data: Mapping[str, Any], key: str, min_items: int, max_items: int) -> Parsed[list[Any]]:
    """A JSON array with a length in [min_items, max_items]."""
    value = data[key]
    if not isinstance(value, list):
        return ParseFailure("parse_error", f"{key}: expected an array, got {type(value).__name__}")
    if not min_items <= len(value) <= max_items:
        return ParseFailure(
            "out_of_range", f"{key}: {len(value)} items, expected {min_items}..{max_items}"
        )
    return value


def first_failure(*values: Any) -> ParseFailure | None:
    """The first :class:`ParseFailure` among ``values``, if any."""
    for value in values:
        if isinstance(value, ParseFailure):
            return value
    return None


def decode_json_object(raw: str) -> Parsed[Mapping[str, Any]]:
    """Decode exactly one JSON object from ``raw``; trailing text after it is rejected.

    For judges without structured output: "first JSON-looking thing in the text" parsing lets
    an answer that smuggles ``{"score": 5}`` into the judge's output win, so nothing but
    surrounding whitespace is allowed.
    """
    text = raw.strip()
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        return ParseFailure("parse_error", f"not JSON: {exc.msg}")
    if end != len(text):
        return ParseFailure("parse_error", "trailing content after the JSON object")
    if not isinstance(value, dict):
        return ParseFailure("parse_error", f"expected a JSON object, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class ScoredReply:
    """The common judge reply ``{"reason": str, "score": number}``."""

    score: float
    reason: str


def parse_scored_reply(data: Mapping[str, Any], low: float, high: float,
                       integer: bool = False) -> Parsed[ScoredReply]:
    """``{"reason": str, "score": number in [low, high]}`` (a whole number when ``integer``)
    and nothing else."""
    bad = check_keys(data, ("reason", "score"))
    if bad:
        return bad
    reason = get_text(data, "reason")
    if isinstance(reason, ParseFailure):
        return reason
    score = get_int(data, "score", int(low), int(high)) if integer else get_number(data, "score", low, high)
    if isinstance(score, ParseFailure):
        return score
    return ScoredReply(score, reason)
