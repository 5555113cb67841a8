"""A consecutive-failure circuit breaker for the judge endpoint.

Why: when the judge is down or throttling hard, every evaluation would otherwise spend its whole
deadline retrying and add load to a server that is already refusing it. After
``failure_threshold`` consecutive failed attempts the circuit opens and calls are refused at once
(``circuit_open``); after ``open_seconds`` one probe goes through (half-open); its success closes
the circuit, its failure reopens it for another cool-down.

Only outages count (timeout, 5xx, connection error, a 200 that is not a chat completion — a
proxy's HTML page): they say "the endpoint is not serving the API". A real answer — even one
whose content does not parse, a permanent 4xx, or a 429 — proves the server is up, so it counts as
a success. A rate limit is not an outage: the throttle slows the client down
(:mod:`monitor.judge.throttle`); opening the circuit on it would fail every evaluation of a
one-second blip. The client asks for admission right before the send, after every wait
(window, pause, budget), so a circuit that opened meanwhile stops the attempt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from monitor.judge.clock import Clock
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry

__all__ = ["CircuitBreaker", "Admission"]

log = logging.getLogger(__name__)

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


@dataclass(frozen=True, slots=True)
class Admission:
    """Permission for one attempt; ``probe`` marks the single half-open trial."""

    probe: bool


class CircuitBreaker:
    """Closed → open after N consecutive failures → half-open after a cool-down → closed."""

    def __init__(self, failure_threshold: int, open_seconds: float, clock: Clock,
                 telemetry: JudgeTelemetry | None = None) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if open_seconds <= 0:
            raise ValueError("open_seconds must be positive")
        self._threshold = failure_threshold
        self._open_seconds = open_seconds
        self._clock = clock
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._state = CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._probe_out = False

    @property
    def state(self) -> str:
        """``closed`` | ``open`` | ``half_open``; an open circuit turns half-open when a call
        asks after the cool-down."""
        return self._state

    def allow(self) -> Admission | None:
        """Admit an attempt now, or None while the circuit is open. In half-open state only one
        probe is admitted; every admission must end in :meth:`success`, :meth:`failure` or
        :meth:`release`, whatever happens to the attempt."""
        if self._state == OPEN:
            if self._clock.now() - self._opened_at < self._open_seconds:
                return None
            self._move(HALF_OPEN)
        if self._state == HALF_OPEN:
            if self._probe_out:
                return None
            self._probe_out = True
            return Admission(probe=True)
        return Admission(probe=False)

    def success(self, admission: Admission) -> None:
        """The endpoint answered (even if the answer was unusable): close the circuit."""
        self._failures = 0
        if admission.probe:
            self._probe_out = False
        if self._state != CLOSED:
            self._move(CLOSED)

    def failure(self, admission: Admission) -> None:
        """The endpoint did not serve the attempt (timeout, 5xx, connection error, not JSON)."""
        self._failures += 1
        if admission.probe:
            self._probe_out = False
            self._open()
        elif self._state == CLOSED and self._failures >= self._threshold:
            # Failures of attempts admitted before the circuit opened arrive late; only the
            # closed state counts them, so they cannot extend an open circuit's cool-down.
            self._open()

    def release(self, admission: Admission) -> None:
        """The attempt never reached the endpoint (cancelled, client closing): no verdict."""
        if admission.probe:
            self._probe_out = False

    def _open(self) -> None:
        if self._state != OPEN:
            self._opened_at = self._clock.now()
            self._move(OPEN)

    def _move(self, state: str) -> None:
        # Transitions are rare (at most one per cool-down), so logging them does not flood.
        log.log(logging.WARNING if state == OPEN else logging.INFO,
                "judge circuit %s -> %s (%d consecutive failures)", self._state, state, self._failures)
        self._state = state
        self._telemetry.circuit_state(state)
