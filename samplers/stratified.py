"""``stratified``: a rate or a quota per value of one field (``labels.route``, ``request_model``).

Uniform sampling gives a route with 0.5% of the traffic almost no evaluations; per-stratum
rates (or quotas in conversations per second) give small strata coverage. Because every kept
conversation carries weight ``1/p`` of its own stratum, the exported defect rate still estimates
the whole population (Horvitz–Thompson, see README).

Only the strata named in the config get their own quota limiter; every other value shares the
``default`` one, so an unexpected label value cannot grow the policy's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from monitor.model import Turn

from samplers.adaptive import ThinnedLimiter
from samplers.base import Plan, Signals
from samplers.fields import read_field

__all__ = ["OTHER_STRATUM", "stratum_of", "StratifiedRatePolicy", "StratifiedQuotaPolicy"]

OTHER_STRATUM = "_other"
"""Stratum name used for values not listed in the config (and in telemetry)."""


def stratum_of(field: str, turn: Turn, signals: Signals, known: Mapping[str, object]) -> str:
    """The configured stratum ``turn`` belongs to, or :data:`OTHER_STRATUM`."""
    value = read_field(field, turn, signals)
    key = "" if value is None else str(value)
    return key if key in known else OTHER_STRATUM


@dataclass(frozen=True, slots=True)
class StratifiedRatePolicy:
    """A fixed rate per stratum; nested with ``probabilistic`` through the shared uniform."""

    name: str
    field: str
    rates: Mapping[str, float]
    default_rate: float

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """The rate of the conversation's stratum."""
        stratum = stratum_of(self.field, turn, signals, self.rates)
        rate = self.rates.get(stratum, self.default_rate)
        return Plan(self.name, rate, stratum=stratum)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """No hard cap."""
        return None

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Nothing to reserve."""
        return self.name


class StratifiedQuotaPolicy:
    """A conversations-per-second quota per stratum (a rate limiter each).

    ``limiters`` maps configured strata (and :data:`OTHER_STRATUM` when the default quota is
    positive) to their limiter; a stratum without one is never sampled by this policy.
    """

    def __init__(self, name: str, field: str, limiters: Mapping[str, ThinnedLimiter]) -> None:
        self.name = name
        self._field = field
        self._limiters = dict(limiters)

    def probability(self, stratum: str) -> float:
        """Current probability of ``stratum`` (0 when it has no quota)."""
        limiter = self._limiters.get(stratum)
        return limiter.probability if limiter is not None else 0.0

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Record the arrival in its stratum's limiter; that limiter's probability."""
        stratum = stratum_of(self._field, turn, signals, self._limiters)
        limiter = self._limiters.get(stratum)
        probability = limiter.arrive() if limiter is not None else 0.0
        return Plan(self.name, probability, stratum=stratum, capped=limiter is not None)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """This policy when the stratum's bucket is empty."""
        limiter = self._limiters.get(plan.stratum or OTHER_STRATUM)
        return None if limiter is not None and limiter.available() else self.name

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Take a token from the stratum's bucket."""
        self._limiters[plan.stratum or OTHER_STRATUM].take()
        return self.name
