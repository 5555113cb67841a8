"""Request and token budgets for judge calls.

Each limiter is a sliding window ("at most N in any 60 s"), not a token bucket: a bucket that
starts full lets through up to twice its rate in the first minute, and the budget is a promise
to whoever pays for the judge, so it must hold over every window *as the server counts it*. The
server sees a request some time between our grant and its reply (connection set-up, TLS and
first-call imports sit in between), so a grant occupies the window from the grant until
``window`` after the attempt *finished*: whatever the latency, the next request that would
overfill the server's window cannot arrive inside it. The price is a rate lower by roughly
latency / window.

Every attempt that may have reached the server is charged, whatever it answered: tokens are
reserved *before* the send (the prompt estimated from the body, plus the reply's output limit)
and settled afterwards to the server-reported usage, or kept at the reservation when the server
reports none — a 429, a 5xx, a timeout (a provider counts the request against its own limit when
it reads it, and a throttled client that charged nothing would resend at full speed). Only an
attempt that certainly never left (refused connection, or cancelled before the send) is refunded.
(If a server reports more than the reservation, the excess is charged when settled and later
calls wait longer.)

When a limiter has no room, the call waits (``on_budget_exhausted: wait``) until its deadline,
or ``max_budget_wait_seconds`` when that is set, or is shed at once (``shed``); a refused call
raises ``JudgeError("budget_exhausted")``. Waiting is decided up front: when the earliest moment
the call could fit is beyond its limit, it is shed without waiting in vain. Budgets are per
replica; in a fleet (``fleet.redis_url``) ``monitor.fleet.judge_budget`` keeps the same promise
fleet-wide.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol

from monitor.judge.clock import Clock
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry
from monitor.judge.types import JudgeError

__all__ = ["SlidingWindowLimiter", "JudgeBudget", "Permit", "BudgetPermit", "Budget"]


class BudgetPermit(Protocol):
    """Budget granted to one attempt: finished (with the tokens it used) or cancelled, always."""

    reserved_tokens: int

    def finish(self, tokens: int | None = None) -> None: ...

    def cancel(self) -> None: ...


class Budget(Protocol):
    """What the judge client asks of a budget: this process's (:class:`JudgeBudget`) or the fleet's
    (``monitor.fleet.judge_budget.FleetJudgeBudget``)."""

    async def acquire(self, tokens: int, deadline: float, wake: asyncio.Event) -> BudgetPermit: ...

    def rate_limited(self, pause_seconds: float) -> None:
        """A 429 paused the client for ``pause_seconds`` (the fleet's budget pauses every replica)."""
        ...

# Slack for float arithmetic when an entry leaves the window exactly at the wake-up time.
_EPSILON = 1e-9


class _Entry:
    __slots__ = ("amount", "finished_at")

    def __init__(self, amount: int) -> None:
        self.amount = amount
        self.finished_at: float | None = None  # None while the attempt is in flight


class SlidingWindowLimiter:
    """At most ``limit`` units in any window of ``window_seconds``; a unit counts from its grant
    until ``window_seconds`` after its attempt finished."""

    def __init__(self, name: str, limit: int, clock: Clock, window_seconds: float = 60.0) -> None:
        if limit < 1:
            raise ValueError(f"{name}: limit must be at least 1")
        self.name = name
        self.limit = limit
        self._clock = clock
        self._window = window_seconds
        # At most ``limit`` entries (each holds at least one unit), so linear scans stay cheap.
        self._entries: list[_Entry] = []

    @property
    def used(self) -> int:
        """Units counted in the current window."""
        self._expire(self._clock.now())
        return sum(e.amount for e in self._entries)

    def wait_time(self, amount: int) -> float | None:
        """Seconds until ``amount`` may fit (0 when it fits now; a lower bound while the entries
        that must leave are still in flight); None when it never can."""
        if amount > self.limit:
            return None
        now = self._clock.now()
        self._expire(now)
        excess = sum(e.amount for e in self._entries) + amount - self.limit
        if excess <= 0:
            return 0.0
        finished = sorted((e for e in self._entries if e.finished_at is not None),
                          key=lambda e: e.finished_at or 0.0)
        for entry in finished:
            excess -= entry.amount
            if excess <= 0:
                return max(0.0, (entry.finished_at or 0.0) + self._window - now)
        return self._window  # in-flight entries leave no earlier than a window from now

    def take(self, amount: int) -> _Entry:
        """Count ``amount`` from now (the caller checked :meth:`wait_time`)."""
        entry = _Entry(amount)
        self._entries.append(entry)
        return entry

    def finish(self, entry: _Entry, amount: int | None = None) -> None:
        """The attempt ended: start the entry's last window, optionally with the real amount."""
        if entry.finished_at is None:
            entry.finished_at = self._clock.now()
        if amount is not None:
            entry.amount = max(0, amount)

    def cancel(self, entry: _Entry) -> None:
        """The grant was never used: forget it."""
        try:
            self._entries.remove(entry)
        except ValueError:
            pass  # already expired

    def _expire(self, now: float) -> None:
        self._entries = [e for e in self._entries
                         if e.finished_at is None or e.finished_at + self._window > now + _EPSILON]


class Permit:
    """Budget granted to one HTTP attempt. :meth:`finish` it when the attempt ends (always: an
    unfinished permit holds its budget forever)."""

    def __init__(self, grants: list[tuple[SlidingWindowLimiter, _Entry]], tokens: _Entry | None,
                 reserved_tokens: int) -> None:
        self._grants = grants
        self._tokens = tokens
        self.reserved_tokens = reserved_tokens

    def finish(self, tokens: int | None = None) -> None:
        """Record the end of the attempt and the tokens it really used (None: keep the
        reservation). Idempotent, so a ``finally`` can call it after an explicit finish."""
        for limiter, entry in self._grants:
            limiter.finish(entry, tokens if entry is self._tokens else None)

    def cancel(self) -> None:
        """The attempt was never sent: give the whole grant back."""
        for limiter, entry in self._grants:
            limiter.cancel(entry)
        self._grants = []


class JudgeBudget:
    """Requests-per-minute and tokens-per-minute limits shared by all judge calls."""

    def __init__(self, *, requests_per_minute: int | None, tokens_per_minute: int | None,
                 on_exhausted: Literal["wait", "shed"], max_wait_seconds: float | None, clock: Clock,
                 telemetry: JudgeTelemetry | None = None, window_seconds: float = 60.0) -> None:
        self._clock = clock
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._on_exhausted = on_exhausted
        self._max_wait = max_wait_seconds
        self._requests = (SlidingWindowLimiter("requests", requests_per_minute, clock, window_seconds)
                          if requests_per_minute else None)
        self._tokens = (SlidingWindowLimiter("tokens", tokens_per_minute, clock, window_seconds)
                        if tokens_per_minute else None)

    async def acquire(self, tokens: int, deadline: float, wake: asyncio.Event) -> Permit:
        """Take one request and ``tokens`` tokens, waiting as configured; raise
        ``JudgeError("budget_exhausted")`` when they do not fit in time or ``wake`` is set."""
        start = self._clock.now()
        if self._on_exhausted == "shed":
            limit_at = start
        else:
            limit_at = deadline if self._max_wait is None else min(deadline, start + self._max_wait)
        blocked_by = ""
        while True:
            wait, limiter = self._wait_time(tokens)
            if wait == 0.0:
                return self._grant(tokens, start, blocked_by)
            now = self._clock.now()
            if wait is None or now + wait > limit_at:
                self._telemetry.budget_shed(limiter)
                raise JudgeError("budget_exhausted", f"judge {limiter} budget exhausted"
                                 + (" (request larger than the budget)" if wait is None else ""))
            blocked_by = limiter
            if not await self._clock.sleep(wait, wake):
                raise JudgeError("budget_exhausted", "judge client is shutting down")

    def rate_limited(self, pause_seconds: float) -> None:
        """Nothing to share: the client's own throttle holds the pause."""

    def _wait_time(self, tokens: int) -> tuple[float | None, str]:
        """The longest wait any limiter imposes, and which limiter it is."""
        worst: tuple[float | None, str] = (0.0, "")
        for limiter, amount in ((self._requests, 1), (self._tokens, tokens)):
            if limiter is None:
                continue
            wait = limiter.wait_time(amount)
            if wait is None:
                return None, limiter.name
            if worst[0] is not None and wait > worst[0]:
                worst = (wait, limiter.name)
        return worst

    def _grant(self, tokens: int, start: float, blocked_by: str) -> Permit:
        if blocked_by:
            self._telemetry.budget_waited(blocked_by, self._clock.now() - start)
        grants: list[tuple[SlidingWindowLimiter, _Entry]] = []
        token_entry = None
        if self._requests is not None:
            grants.append((self._requests, self._requests.take(1)))
        if self._tokens is not None:
            token_entry = self._tokens.take(tokens)
            grants.append((self._tokens, token_entry))
        return Permit(grants, token_entry, tokens)
