"""Client-wide reaction to rate limits: a shared pause and a congestion window (AIMD).

A 429 means "this client is sending too fast", not "this request was unlucky". So a 429 does two
things for every call of the client, not just the one that got it:

* **Pause.** Nobody sends until ``paused_until``: the server's ``Retry-After`` when it gave one,
  and never less than a step that doubles with each consecutive rate-limited round
  (``backoff_initial_seconds`` … ``backoff_max_seconds``, equal jitter so replicas drift apart),
  reset by the next successful reply. Without this, one call sleeps while the others keep firing.
* **Window.** At most ``floor(window)`` attempts are in flight. The window starts at
  ``max_concurrency``, halves on a rate-limited round (multiplicative decrease, once per round:
  the 429s of attempts sent before the last decrease belong to the round already counted) and
  grows by ``1/window`` per successful reply (additive increase: about one slot per window of
  successes), like TCP's congestion window. After a storm the first attempts are single probes,
  so a storm costs one request per pause, not one per waiting call.

Slots are handed out first come, first served, and a call whose attempt was rate limited queues
again at the back: the probes of a long storm rotate across the waiting calls instead of one call
spending all of them. Every wait is bounded by the caller's deadline; time spent waiting is
reported as ``budget_waited("concurrency" | "rate_limit", …)``.
"""

from __future__ import annotations

import asyncio
import collections
import math
import random
from dataclasses import dataclass

from monitor.judge.clock import Clock
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry

__all__ = ["RateLimitThrottle", "Slot", "ThrottleTimeout"]


class ThrottleTimeout(Exception):
    """No slot, or no end of the pause, before the deadline. ``reason`` is ``concurrency``,
    ``rate_limit`` or ``closing`` (the client is shutting down)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class Slot:
    """One attempt's place in the window; ``sent_at`` is stamped by :meth:`RateLimitThrottle.sending`."""

    sent_at: float = math.inf
    released: bool = False


class RateLimitThrottle:
    """The pause and the window shared by all calls of one judge client."""

    def __init__(self, max_concurrency: int, clock: Clock, *, pause_initial_seconds: float,
                 pause_max_seconds: float, rng: random.Random | None = None,
                 telemetry: JudgeTelemetry | None = None) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._max = max_concurrency
        self._clock = clock
        self._pause_initial = pause_initial_seconds
        self._pause_max = pause_max_seconds
        self._rng = rng or random.Random()
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._window = float(max_concurrency)
        self._in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._paused_until = -math.inf
        self._rounds = 0  # consecutive rate-limited rounds since the last success
        self._last_decrease = -math.inf

    @property
    def window(self) -> float:
        """The congestion window (attempts allowed in flight = its floor, at least 1)."""
        return self._window

    @property
    def paused_until(self) -> float:
        """Clock time before which no attempt is sent."""
        return self._paused_until

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _capacity(self) -> int:
        return max(1, math.floor(self._window))

    async def acquire(self, deadline: float) -> Slot:
        """A slot in the window, first come first served; raise :class:`ThrottleTimeout` at
        ``deadline``."""
        started = self._clock.now()
        if self._in_flight < self._capacity() and not self._waiters:
            self._in_flight += 1
            return Slot()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(max(0.0, deadline - started)):
                await waiter
        except ThrottleTimeout:
            raise  # closing: the waiter already left the queue
        except TimeoutError:
            self._abandon(waiter)
            # Waiting behind a window shrunk by 429s is waiting out a rate limit.
            reason = "rate_limit" if self.limiting else "concurrency"
            self._telemetry.budget_shed(reason)
            raise ThrottleTimeout(reason) from None
        except BaseException:
            self._abandon(waiter)
            raise
        self._telemetry.budget_waited("concurrency", self._clock.now() - started)
        return Slot()

    async def wait_for_pause(self, deadline: float, wake: asyncio.Event) -> bool:
        """Sleep until the shared pause is over. False when ``wake`` was set; raise
        :class:`ThrottleTimeout` when the pause outlasts ``deadline`` (without waiting in vain)."""
        started = self._clock.now()
        waited = False
        while (now := self._clock.now()) < self._paused_until:
            if self._paused_until > deadline:
                raise ThrottleTimeout("rate_limit")
            waited = True
            if not await self._clock.sleep(self._paused_until - now, wake):
                return False
        if waited:
            self._telemetry.budget_waited("rate_limit", self._clock.now() - started)
        return True

    def paused(self) -> bool:
        """True while the shared pause lasts."""
        return self._clock.now() < self._paused_until

    @property
    def limiting(self) -> bool:
        """True while a rate limit holds the client back (paused, or the window below its
        ceiling): a call that runs out of time now ran out of it waiting for the rate limit."""
        return self._window < self._max or self.paused()

    def sending(self, slot: Slot) -> None:
        """The attempt holding ``slot`` is being sent now."""
        slot.sent_at = self._clock.now()

    def succeeded(self) -> None:
        """A reply came back: the storm (if any) is over; grow the window additively."""
        self._rounds = 0
        if self._window < self._max:
            self._window = min(float(self._max), self._window + 1.0 / self._window)
            self._wake_waiters()

    def rate_limited(self, slot: Slot, retry_after: float | None) -> float:
        """The attempt of ``slot`` got a 429: pause everyone, shrink the window once per round.
        Returns the pause's end."""
        now = self._clock.now()
        if slot.sent_at >= self._last_decrease:
            self._last_decrease = now
            self._window = max(1.0, self._window / 2.0)
            step = min(self._pause_max, self._pause_initial * 2.0 ** min(self._rounds, 30))
            self._rounds += 1
            own = step / 2.0 + self._rng.uniform(0.0, step / 2.0)  # equal jitter
            self._paused_until = max(self._paused_until, now + max(retry_after or 0.0, own))
        elif retry_after is not None:
            self._paused_until = max(self._paused_until, now + retry_after)
        return self._paused_until

    def close(self) -> None:
        """Shutdown: every caller still queued for a slot gets ``ThrottleTimeout("closing")``
        now instead of at its deadline."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ThrottleTimeout("closing"))

    def release(self, slot: Slot) -> None:
        """Give the slot back (always, whatever happened to the attempt). Idempotent."""
        if slot.released:
            return
        slot.released = True
        self._in_flight -= 1
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        while self._waiters and self._in_flight < self._capacity():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._in_flight += 1  # handed over: the woken caller owns it
                waiter.set_result(None)

    def _abandon(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done() and not waiter.cancelled():
            # The slot was handed over just as the caller gave up: pass it on.
            self._in_flight -= 1
            self._wake_waiters()
        else:
            waiter.cancel()
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass
