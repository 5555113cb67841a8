"""Lone UTF-16 surrogates out of parsed JSON.

JSON may escape a lone surrogate ("\\ud800"); Python's json module turns it into a str that no
UTF-8 encoder accepts, so it would fail later and far away: a protobuf export, a SQLite write,
hashing in the local tier. Where JSON enters (OTLP/JSON bodies, message JSON inside attributes,
eval datasets), the parsed value goes through :func:`replace_lone_surrogates` when the text could
hold one: U+FFFD in its place, as a UTF-8 decoder would do with the bytes. Where orjson parses
first (it refuses lone surrogates), the check runs only on what it refused; the walk only for the
rare text that has such an escape or character.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["may_hold_surrogates", "replace_lone_surrogates"]

# An escape of a surrogate code point (JSON writes only a lower-case "u"), or a surrogate character
# (in a str that came from elsewhere).
_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_TEXT = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")
# In a Python str every surrogate is a lone one: json joins an escaped pair into one character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_surrogates(source: bytes | str) -> bool:
    """Whether JSON parsed from ``source`` may hold a lone surrogate (false positives only cost a walk)."""
    if isinstance(source, bytes):
        return _BYTES.search(source) is not None
    return _TEXT.search(source) is not None


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON: dicts, lists, strings, numbers) with every lone surrogate of every
    string, keys included, replaced by U+FFFD. Iterative, so any depth json accepted is fine."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = _SURROGATE.sub("\ufffd", item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            if any(isinstance(k, str) and _SURROGATE.search(k) for k in item):
                item = {(_SURROGATE.sub("\ufffd", k) if isinstance(k, str) else k): v for k, v in item.items()}
                parent[key] = item
            stack.extend((item, k) for k in item)
    return root[0]
