"""The turn attributes sampling rules and strata may read, addressed by a dotted name.

Kept small on purpose: the names below, ``labels.<name>`` for an allow-listed label (route,
model, feedback, ...) and ``signals.<name>`` for a local-tier signal passed at decision time.
"""

from __future__ import annotations

import re
from typing import Callable

from monitor.model import Turn

from samplers.base import Signals

__all__ = ["FIELDS", "check_field", "read_field"]

_Reader = Callable[[Turn], object]

FIELDS: dict[str, _Reader] = {
    "error": lambda t: t.error,
    "jailbreak_attempt": lambda t: t.jailbreak_attempt,
    "service": lambda t: t.service,
    "request_model": lambda t: t.request_model,
    "response_model": lambda t: t.response_model,
    "provider": lambda t: t.provider,
    "convention": lambda t: t.convention,
    "latency_seconds": lambda t: t.latency_seconds,
    "usage.input_tokens": lambda t: t.usage.input_tokens,
    "usage.output_tokens": lambda t: t.usage.output_tokens,
}
"""Fixed turn fields by name."""

_PREFIXED = re.compile(r"^(labels|signals)\.[A-Za-z0-9_.\-]+$")


def check_field(name: str) -> str:
    """Return ``name`` if it is readable, else raise ``ValueError`` listing what is."""
    if name in FIELDS or _PREFIXED.match(name):
        return name
    known = ", ".join(sorted(FIELDS))
    raise ValueError(f"unknown field {name!r}; use one of {known}, labels.<name> or signals.<name>")


def read_field(name: str, turn: Turn, signals: Signals) -> object:
    """The value of field ``name`` for ``turn``; None when the turn does not carry it."""
    if name.startswith("labels."):
        return turn.labels.get(name[len("labels.") :])
    if name.startswith("signals."):
        return signals.get(name[len("signals.") :])
    reader = FIELDS.get(name)
    return reader(turn) if reader is not None else None
