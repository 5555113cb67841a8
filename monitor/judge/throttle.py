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

* **Storm gate.** From the first 429 until the storm is found to be over, no evaluation sends:
  every call (the rate-limited ones and new ones) waits in :meth:`wait_for_calm`. The end of the
  storm is found by the client's *probe* — one minimal request per pause round, owned by no
  evaluation (see ``JudgeClient``) — or by a reply to an attempt sent after the storm began. So a
  storm that ends costs each evaluation at most two requests: the one that met the 429 and the one
  after the storm; its probes cost the client one small request per pause round, whatever the
  number of waiting calls. When nobody waits any more the gate opens (the pause still holds), so
  an idle client never probes.

Slots are handed out first come, first served. Every wait is bounded by the caller's deadline;
time spent waiting is reported as ``budget_waited("concurrency" | "rate_limit", …)``.
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
        self._calm = asyncio.Event()
        self._calm.set()
        self._storm_since = math.inf  # clock time the current storm began
        self._storm_waiters = 0
        self._closed = False

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
    def storming(self) -> bool:
        """True from a 429 until a probe (or a later attempt) got another answer."""
        return not self._calm.is_set()

    @property
    def storm_waiters(self) -> int:
        """Calls waiting in :meth:`wait_for_calm` now."""
        return self._storm_waiters

    async def wait_for_calm(self, deadline: float) -> None:
        """Wait until the storm is over (at once when there is none); raise
        :class:`ThrottleTimeout` ``rate_limit`` at ``deadline``, ``closing`` on :meth:`close`."""
        if self._calm.is_set():
            return
        if self._paused_until > deadline:
            # The next probe goes after the deadline: waiting could only end in vain.
            self._telemetry.budget_shed("rate_limit")
            raise ThrottleTimeout("rate_limit")
        started = self._clock.now()
        self._storm_waiters += 1
        try:
            async with asyncio.timeout(max(0.0, deadline - started)):
                await self._calm.wait()
        except TimeoutError:
            self._telemetry.budget_shed("rate_limit")
            raise ThrottleTimeout("rate_limit") from None
        finally:
            self._storm_waiters -= 1
        if self._closed:
            raise ThrottleTimeout("closing")
        self._telemetry.budget_waited("rate_limit", self._clock.now() - started)

    @property
    def limiting(self) -> bool:
        """True while a rate limit holds the client back (a storm, a pause, or the window below
        its ceiling): a call that runs out of time now ran out of it waiting for the rate limit."""
        return self._window < self._max or self.paused() or self.storming

    def sending(self, slot: Slot) -> None:
        """The attempt holding ``slot`` is being sent now."""
        slot.sent_at = self._clock.now()

    def succeeded(self, slot: Slot) -> None:
        """A reply came back: grow the window additively. A reply to an attempt sent after the
        storm began ends the storm (one sent before it says nothing about the storm)."""
        if self.storming and slot.sent_at >= self._storm_since:
            self.storm_over()
        if not self.storming:
            self._rounds = 0
        if self._window < self._max:
            self._window = min(float(self._max), self._window + 1.0 / self._window)
            self._wake_waiters()

    def rate_limited(self, slot: Slot, retry_after: float | None) -> float:
        """The attempt of ``slot`` got a 429: pause everyone, shrink the window once per round.
        Returns the pause's end."""
        now = self._clock.now()
        if self._calm.is_set():
            self._calm.clear()
            self._storm_since = now
        if slot.sent_at >= self._last_decrease:
            self._new_round(now, retry_after)
        elif retry_after is not None:
            self._paused_until = max(self._paused_until, now + retry_after)
        return self._paused_until

    def probe_rate_limited(self, retry_after: float | None) -> float:
        """The storm's probe got a 429: another round (window halved, longer pause). Returns
        the pause's end, when the next probe goes."""
        self._new_round(self._clock.now(), retry_after)
        return self._paused_until

    def storm_over(self) -> None:
        """A probe (or an attempt sent during the storm) got an answer that is not a 429: the
        waiting calls go, within the window."""
        self._rounds = 0
        self._storm_since = math.inf
        self._calm.set()

    def abandon_storm(self) -> None:
        """Nobody waits for the storm's end any more: stop probing. The pause still holds, so
        the next call goes after it and, met by a 429, starts a new storm."""
        self._storm_since = math.inf
        self._calm.set()

    def _new_round(self, now: float, retry_after: float | None) -> None:
        self._last_decrease = now
        self._window = max(1.0, self._window / 2.0)
        step = min(self._pause_max, self._pause_initial * 2.0 ** min(self._rounds, 30))
        self._rounds += 1
        own = step / 2.0 + self._rng.uniform(0.0, step / 2.0)  # equal jitter
        self._paused_until = max(self._paused_until, now + max(retry_after or 0.0, own))

    def reopen(self) -> None:
        """Undo :meth:`close` (the client was started again)."""
        self._closed = False

    def close(self) -> None:
        """Shutdown: every caller still queued for a slot gets ``ThrottleTimeout("closing")``
        now instead of at its deadline; so does every caller waiting for a storm's end."""
        self._closed = True
        self._calm.set()
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
