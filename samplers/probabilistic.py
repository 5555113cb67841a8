"""``probabilistic``: keep a fixed share of conversations, chosen by hash.

The draw is the shared ``u = H(salt, conversation id)`` (see :mod:`samplers.base`), so the choice
is deterministic, identical on every replica and in every process with the same salt, and nested:
every conversation kept at 5% is also kept at 25%.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.model import Turn

from samplers.base import Plan, Signals

__all__ = ["ProbabilisticPolicy"]


@dataclass(frozen=True, slots=True)
class ProbabilisticPolicy:
    """Keeps each conversation with probability ``rate``."""

    name: str
    rate: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate {self.rate!r} is outside [0, 1]")

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Always ``rate``."""
        return Plan(self.name, self.rate)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """No hard cap."""
        return None

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Nothing to reserve."""
        return self.name
