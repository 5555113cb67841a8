"""``rate_limit``: at most ``conversations_per_second`` kept, bursts up to ``burst``.

A token bucket is the hard cap; in front of it an adaptive probability thins the traffic to the
target rate (:class:`samplers.adaptive.ThinnedLimiter`) so that the kept conversations are spread
over bursts instead of being the first ones of each, and carry a known inclusion probability.
Conversations the draw selected but the bucket refused are ``shed`` (counted; they bias the
estimate, so a steady shed rate means the burst or the target utilisation is set too high).
"""

from __future__ import annotations

from monitor.model import Turn

from samplers.adaptive import ThinnedLimiter
from samplers.base import Plan, Signals

__all__ = ["RateLimitPolicy"]


class RateLimitPolicy:
    """Adaptive thinning to a conversation rate, capped by a token bucket."""

    def __init__(self, name: str, limiter: ThinnedLimiter) -> None:
        self.name = name
        self._limiter = limiter

    @property
    def probability(self) -> float:
        """The probability the next conversation will be drawn with."""
        return self._limiter.probability

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Record the arrival and return the current thinning probability."""
        return Plan(self.name, self._limiter.arrive(), capped=True)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """This policy when the bucket is empty."""
        return None if self._limiter.available() else self.name

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Take a token."""
        self._limiter.take()
        return self.name
