"""One call to a remote scoring service: concurrency slot, budget, circuit breaker, attempt,
retries with jittered backoff, all inside one deadline — the LLM judge's policy, on the judge's
own building blocks (:class:`~monitor.judge.budget.JudgeBudget`,
:class:`~monitor.judge.breaker.CircuitBreaker`, :class:`~monitor.judge.retry.Backoff`).

Failures end as :class:`~monitor.judge.types.JudgeError` with the judge's outcome names, so a
service-backed metric reports errors exactly as a judged one does, and each call is counted
once through the judge telemetry protocol (``call_finished``/``attempt_failed``). As for the
judge: a 429 is ridden out (retried after ``Retry-After``) and is not an outage; 5xx, timeouts
and connection errors are retried and count against the breaker; other 4xx are permanent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable, TypeVar

from monitor.evaluation.content_safety.config import ContentSafetyConfig
from monitor.judge.breaker import Admission, CircuitBreaker
from monitor.judge.budget import JudgeBudget
from monitor.judge.clock import Clock, LoopClock
from monitor.judge.retry import Backoff
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry
from monitor.judge.types import JudgeError
from monitor.model import JudgeUsage

__all__ = ["AttemptFailed", "ServiceFailure", "ServiceCalls"]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServiceFailure:
    """How one attempt failed: a judge outcome name and what it means for retry and breaker."""

    outcome: str
    message: str
    retryable: bool
    outage: bool
    retry_after: float | None = None


class AttemptFailed(Exception):
    """Raised by an attempt function with its classified failure."""

    def __init__(self, failure: ServiceFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class ServiceCalls:
    """The call policy of one service client; every call of the client goes through :meth:`run`."""

    def __init__(self, name: str, config: ContentSafetyConfig, *, telemetry: JudgeTelemetry | None = None,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self._name = name
        self._config = config
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._clock = clock or LoopClock()
        self._budget = JudgeBudget(
            requests_per_minute=config.requests_per_minute, tokens_per_minute=None,
            on_exhausted=config.on_budget_exhausted, max_wait_seconds=config.max_budget_wait_seconds,
            clock=self._clock, telemetry=self._telemetry)
        self._breaker = CircuitBreaker(config.circuit_breaker.failure_threshold,
                                       config.circuit_breaker.open_seconds, self._clock, self._telemetry)
        self._backoff = Backoff(config.backoff_initial_seconds, config.backoff_max_seconds, rng)
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self.closing = asyncio.Event()

    @property
    def circuit_state(self) -> str:
        return self._breaker.state

    async def run(self, operation: str, attempt: Callable[[float], Awaitable[T]]) -> tuple[T, JudgeUsage]:
        """``await attempt(timeout_seconds)`` under the policy; returns its value and the usage
        (latency, attempts). Raises JudgeError; never outlives ``deadline_seconds``."""
        started = self._clock.now()
        deadline = started + self._config.deadline_seconds
        attempts = 0
        outcome: str | None = "ok"
        try:
            retries = 0
            last: JudgeError | None = None
            while True:
                if self.closing.is_set():
                    raise last or JudgeError("connection_error", f"{self._name} client is closing")
                attempts += 1
                try:
                    value = await self._attempt(operation, attempt, deadline)
                    return value, JudgeUsage(0, 0, self._clock.now() - started, attempts)
                except AttemptFailed as failed:
                    failure = failed.failure
                last = JudgeError(failure.outcome, failure.message)
                if not failure.retryable or retries >= self._config.max_retries:
                    raise last
                delay = self._backoff.delay(retries, failure.retry_after)
                if self._clock.now() + delay >= deadline:
                    raise last
                retries += 1
                if not await self._clock.sleep(delay, self.closing):
                    raise last
        except JudgeError as err:
            outcome = err.outcome
            err.usage = JudgeUsage(0, 0, self._clock.now() - started, attempts)
            raise
        except asyncio.CancelledError:
            outcome = None
            raise
        finally:
            if outcome is not None:
                self._telemetry.call_finished(operation, outcome, self._clock.now() - started)

    async def _attempt(self, operation: str, attempt: Callable[[float], Awaitable[T]], deadline: float) -> T:
        async with self._slot(deadline):
            permit = await self._budget.acquire(0, deadline, self.closing)
            # Admission after every wait, right before the send: a circuit that opened while
            # this call queued stops it here.
            admission = self._breaker.allow()
            if admission is None:
                permit.finish()
                raise JudgeError("circuit_open", f"{self._name} circuit is open")
            try:
                return await self._send(operation, attempt, deadline, admission)
            finally:
                permit.finish()

    async def _send(self, operation: str, attempt: Callable[[float], Awaitable[T]], deadline: float,
                    admission: Admission) -> T:
        remaining = deadline - self._clock.now()
        timeout = min(self._config.timeout_seconds, remaining)
        try:
            if timeout <= 0:
                raise TimeoutError
            async with asyncio.timeout(timeout):
                value = await attempt(timeout)
        except TimeoutError:
            failure = ServiceFailure("timeout", f"{self._name} request timed out", True, True)
        except AttemptFailed as failed:
            failure = failed.failure
        except BaseException:
            self._breaker.release(admission)  # cancelled (or a bug): no verdict on the service
            raise
        else:
            self._breaker.success(admission)
            return value
        if failure.outage:
            self._breaker.failure(admission)
        else:
            self._breaker.success(admission)
        self._telemetry.attempt_failed(operation, failure.outcome)
        raise AttemptFailed(failure)

    @contextlib.asynccontextmanager
    async def _slot(self, deadline: float) -> AsyncIterator[None]:
        started = self._clock.now()
        busy = self._slots.locked()
        try:
            async with asyncio.timeout(max(0.0, deadline - started)):
                await self._slots.acquire()
        except TimeoutError:
            self._telemetry.budget_shed("concurrency")
            raise JudgeError("timeout", f"no {self._name} slot became free before the deadline") from None
        if busy:
            self._telemetry.budget_waited("concurrency", self._clock.now() - started)
        try:
            yield
        finally:
            self._slots.release()
