"""``always``: keep every conversation whose first turn matches a rule (inclusion probability 1).

Rules read turn fields (:mod:`samplers.fields`): span error status, the jailbreak-attempt flag,
allow-listed labels such as a user-feedback score, and local-tier signals — the cheap local tier
deciding what the expensive judge sees. A field the turn does not carry never matches, and a
value that cannot be compared (``"fast" < 3``) does not match either, rather than raising.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Callable, Sequence

from monitor.model import Turn

from samplers.base import Plan, Signals
from samplers.fields import read_field

__all__ = ["Scalar", "Rule", "AlwaysPolicy", "ORDERING_OPS", "RULE_OPS"]

Scalar = bool | float | str

_ORDER: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
ORDERING_OPS = tuple(_ORDER)
RULE_OPS = ("exists", "==", "!=", "in", *ORDERING_OPS)


def _as_number(value: object) -> float | None:
    # Labels arrive as strings ("2"), signals as floats; bools are not numbers here.
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _equals(actual: object, expected: Scalar) -> bool:
    if isinstance(expected, bool):
        if isinstance(actual, str):
            return actual.strip().lower() == str(expected).lower()
        return actual is expected
    if isinstance(expected, (int, float)):
        number = _as_number(actual)
        return number is not None and number == float(expected)
    return str(actual) == expected


@dataclass(frozen=True, slots=True)
class Rule:
    """``field op value``; ``exists`` takes no value, ``in`` a sequence of scalars."""

    field: str
    op: str
    value: Scalar | tuple[Scalar, ...] | None = None

    def __post_init__(self) -> None:
        if self.op not in RULE_OPS:
            raise ValueError(f"unknown rule op {self.op!r}")

    def matches(self, turn: Turn, signals: Signals) -> bool:
        """Whether the rule fires for ``turn``."""
        actual = read_field(self.field, turn, signals)
        if actual is None:
            return False
        if self.op == "exists":
            return actual is not False and actual != ""
        if self.op == "in":
            options = self.value if isinstance(self.value, tuple) else (self.value,)
            return any(_equals(actual, o) for o in options if o is not None)
        if self.op in ("==", "!="):
            if self.value is None or isinstance(self.value, tuple):
                return False
            return _equals(actual, self.value) == (self.op == "==")
        left, right = _as_number(actual), _as_number(self.value)
        return left is not None and right is not None and _ORDER[self.op](left, right)


@dataclass(frozen=True, slots=True)
class AlwaysPolicy:
    """Probability 1 when any (or, with ``match_all``, every) rule fires, else 0; with no rules, 1."""

    name: str
    rules: Sequence[Rule]
    match_all: bool = False

    def matches(self, turn: Turn, signals: Signals) -> bool:
        """Whether the rules select ``turn`` (always, when there are no rules)."""
        if not self.rules:
            return True
        fired = (rule.matches(turn, signals) for rule in self.rules)
        return all(fired) if self.match_all else any(fired)

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """1.0 on a match, 0.0 otherwise: deterministic, so the shared uniform is irrelevant."""
        return Plan(self.name, 1.0 if self.matches(turn, signals) else 0.0)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """No hard cap: a rule match is never shed."""
        return None

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Nothing to reserve."""
        return self.name
