"""Finding the end of a 429 storm without spending the evaluations' requests on it.

While the throttle's storm gate is shut (:mod:`monitor.judge.throttle`) no evaluation sends. One
task per client, this probe, waits out each pause round and then sends a minimal chat request (a
few tokens, ``max_tokens`` 1) to the same endpoint and model:

* a 429 → another round: the throttle halves the window and sets a longer pause (honouring the
  probe's ``Retry-After``);
* any other answer — a reply, a 4xx, a 5xx, a timeout — → the storm is over *as a rate limit*:
  the waiting calls go (a real outage then meets them, and the circuit breaker, as usual);
* nobody waiting any more → stop; the gate opens and the pause still holds.

Why a separate request instead of letting one of the waiting evaluations try: an evaluation that
probes and meets another 429 has then spent two requests and still needs a third. With the
probe, a storm costs each evaluation at most two requests (the one that met it and the one after
it) plus one small request per pause round for the whole client. The probe is charged to the
budget like any attempt, counted as ``rag_monitor_judge_attempts_failed_total{outcome=
"rate_limited"}`` when throttled, and its tokens go to ``call="rate_limit_probe"``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Awaitable, Callable

from monitor.judge.budget import Budget
from monitor.judge.clock import Clock
from monitor.judge.request_body import OutgoingRequest
from monitor.judge.retry import AttemptFailure
from monitor.judge.telemetry import JudgeTelemetry
from monitor.judge.throttle import RateLimitThrottle, ThrottleTimeout
from monitor.judge.types import JudgeError

__all__ = ["StormProbe", "PROBE_CALL"]

log = logging.getLogger(__name__)

PROBE_CALL = "rate_limit_probe"
"""The ``call`` label of the probe's tokens and the ``metric`` it reports failed attempts under."""

# Send one probe; None when the server answered anything but a 429, else the 429's failure.
ProbeSender = Callable[[OutgoingRequest], Awaitable[AttemptFailure | None]]


class StormProbe:
    """Runs while the throttle storms and somebody waits; see the module docstring."""

    def __init__(self, throttle: RateLimitThrottle, budget: Budget, clock: Clock,
                 closing: asyncio.Event, telemetry: JudgeTelemetry, build: Callable[[], OutgoingRequest],
                 send: ProbeSender, budget_wait_seconds: float) -> None:
        self._throttle = throttle
        self._budget = budget
        self._clock = clock
        self._closing = closing
        self._telemetry = telemetry
        self._build = build
        self._send = send
        self._budget_wait = budget_wait_seconds
        self._task: asyncio.Task[None] | None = None
        self.probes_sent = 0

    def ensure_running(self) -> None:
        """Start the probe task unless it runs already (called when a storm begins)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="judge-storm-probe")

    async def stop(self) -> None:
        """Cancel the probe task (shutdown)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while self._throttle.storming and not self._closing.is_set():
            try:
                if not await self._throttle.wait_for_pause(math.inf, self._closing):
                    return  # closing
            except ThrottleTimeout:  # pragma: no cover - an infinite deadline never times out
                return
            if self._throttle.storm_waiters == 0:
                self._throttle.abandon_storm()
                return
            failure = await self._probe_once()
            if failure is None:
                log.info("judge rate limit over after %d probe(s): waiting calls resume", self.probes_sent)
                self._throttle.storm_over()
                return
            until = self._throttle.probe_rate_limited(failure.retry_after)
            self._budget.rate_limited(until - self._clock.now())
            log.debug("judge still rate limited: next probe in %.2fs", until - self._clock.now())

    async def _probe_once(self) -> AttemptFailure | None:
        outgoing = self._build()
        try:
            permit = await self._budget.acquire(outgoing.reserved_tokens, self._clock.now() + self._budget_wait,
                                                self._closing)
        except JudgeError:
            # No budget for even a probe: the waiting calls could not go either. Try next round.
            return AttemptFailure("rate_limited", "no budget for a probe", True)
        self.probes_sent += 1
        failure: AttemptFailure | None = None
        try:
            failure = await self._send(outgoing)
        finally:
            permit.finish(None)  # charged at its (tiny) reservation, whatever the answer
        self._telemetry.tokens("", "prompt", outgoing.prompt_tokens, call=PROBE_CALL)
        if failure is not None:
            self._telemetry.attempt_failed(PROBE_CALL, failure.outcome)
        return failure
