"""Self-telemetry of the sampling stage, as a protocol (no Prometheus import in ``samplers/``).

The exporters implement it and map it to ``rag_monitor_sampling_decisions_total{policy,decision}``,
a probability gauge per adaptive policy, and an eviction counter.
"""

from __future__ import annotations

from typing import Protocol

from monitor.telemetry import NullTelemetry, Telemetry

__all__ = ["SamplingTelemetry", "NullSamplingTelemetry"]


class SamplingTelemetry(Telemetry, Protocol):
    """Counters and gauges of the samplers. Implementations must be cheap and non-blocking.
    ``add`` counts any other counter, declared beside the code that counts it
    (``monitor.telemetry.counter``): a new sampling counter needs no change here."""

    def decision(self, policy: str, outcome: str) -> None:
        """One conversation decided; ``outcome`` is ``sampled`` | ``not_sampled`` | ``shed``."""
        ...

    def probability(self, policy: str, value: float) -> None:
        """Current inclusion probability of an adaptive policy (set on every adjustment)."""
        ...

    def cache_evicted(self, count: int) -> None:
        """Decisions evicted from the stage's bounded cache before their conversation ended."""
        ...


class NullSamplingTelemetry(NullTelemetry):
    """Telemetry that records nothing (unit tests, offline tools)."""

    def decision(self, policy: str, outcome: str) -> None:
        pass

    def probability(self, policy: str, value: float) -> None:
        pass

    def cache_evicted(self, count: int) -> None:
        pass
