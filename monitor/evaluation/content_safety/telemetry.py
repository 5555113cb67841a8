"""Content Safety calls counted in the judge's series, without touching the judge's circuit gauge.

Calls, outcomes, retries, budget waits and sheds go to the sidecar's judge telemetry (one place
to watch the cost and health of remote scoring). The circuit state does not: the judge's
``rag_monitor_judge_circuit_state`` gauge describes the LLM judge, and a second breaker writing
it would make either reading wrong; the service's transitions are logged instead.
"""

from __future__ import annotations

import logging

from monitor.judge.telemetry import JudgeTelemetry
from monitor.telemetry import Instrument

__all__ = ["ServiceTelemetry"]

log = logging.getLogger(__name__)


class ServiceTelemetry:
    """A :class:`JudgeTelemetry` for the Content Safety client over the judge's sink."""

    def __init__(self, inner: JudgeTelemetry) -> None:
        self._inner = inner

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        self._inner.add(counter, amount, **labels)

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        self._inner.call_finished(metric, outcome, duration_seconds)

    def reply_rejected(self, metric: str, outcome: str) -> None:
        self._inner.reply_rejected(metric, outcome)

    def attempt_failed(self, metric: str, outcome: str) -> None:
        self._inner.attempt_failed(metric, outcome)

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        self._inner.tokens(metric, kind, count, call)

    def circuit_state(self, state: str) -> None:
        # Transitions are rare (at most one per cool-down), so a log line per transition is fine.
        log.warning("content safety circuit is now %s", state)

    def budget_waited(self, limiter: str, seconds: float) -> None:
        self._inner.budget_waited(limiter, seconds)

    def budget_shed(self, limiter: str) -> None:
        self._inner.budget_shed(limiter)
