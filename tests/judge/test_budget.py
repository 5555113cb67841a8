from __future__ import annotations

import asyncio

import pytest

from monitor.judge.budget import JudgeBudget, SlidingWindowLimiter
from monitor.judge.telemetry import RecordingJudgeTelemetry
from monitor.judge.types import JudgeError
from tests.judge.fakes import FakeClock


def test_limiter_counts_until_a_window_after_the_attempt_finished() -> None:
    clock = FakeClock()
    limiter = SlidingWindowLimiter("requests", 2, clock, window_seconds=60)
    first, second = limiter.take(1), limiter.take(1)
    assert limiter.wait_time(1) == 60  # both in flight: at least a window
    clock.advance(5)
    limiter.finish(first)
    clock.advance(10)
    limiter.finish(second)
    assert limiter.wait_time(1) == pytest.approx(50)  # the first leaves at 5 + 60
    clock.advance(50)
    assert limiter.wait_time(1) == 0
    assert limiter.used == 1


def test_limiter_never_fits_more_than_its_limit() -> None:
    limiter = SlidingWindowLimiter("tokens", 100, FakeClock())
    assert limiter.wait_time(101) is None
    with pytest.raises(ValueError):
        SlidingWindowLimiter("tokens", 0, FakeClock())


def test_finish_replaces_the_reservation() -> None:
    clock = FakeClock()
    limiter = SlidingWindowLimiter("tokens", 100, clock)
    entry = limiter.take(80)
    assert limiter.wait_time(30) == 60
    limiter.finish(entry, 50)
    assert limiter.used == 50
    assert limiter.wait_time(30) == 0


def make_budget(clock: FakeClock, telemetry: RecordingJudgeTelemetry, **kw) -> JudgeBudget:
    args = dict(requests_per_minute=2, tokens_per_minute=None, on_exhausted="wait",
                max_wait_seconds=120.0, clock=clock, telemetry=telemetry)
    args.update(kw)
    return JudgeBudget(**args)  # type: ignore[arg-type]


async def test_wait_mode_waits_for_the_window() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry)
    wake = asyncio.Event()
    for _ in range(2):
        (await budget.acquire(10, clock.now() + 500, wake)).finish()
    start = clock.now()
    await budget.acquire(10, clock.now() + 500, wake)
    assert clock.now() - start == pytest.approx(60)
    assert telemetry.waits == [("requests", pytest.approx(60))]


async def test_shed_mode_refuses_at_once() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry, on_exhausted="shed")
    wake = asyncio.Event()
    await budget.acquire(10, clock.now() + 500, wake)
    await budget.acquire(10, clock.now() + 500, wake)
    with pytest.raises(JudgeError) as info:
        await budget.acquire(10, clock.now() + 500, wake)
    assert info.value.outcome == "budget_exhausted"
    assert clock.sleeps == []
    assert telemetry.sheds == {"requests": 1}


async def test_wait_beyond_the_deadline_is_shed_without_sleeping() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry)
    wake = asyncio.Event()
    for _ in range(2):
        (await budget.acquire(10, clock.now() + 500, wake)).finish()
    with pytest.raises(JudgeError):
        await budget.acquire(10, clock.now() + 30, wake)  # needs 60 s, has 30
    assert clock.sleeps == []


async def test_oversized_request_is_shed() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry, requests_per_minute=None, tokens_per_minute=100)
    with pytest.raises(JudgeError, match="larger than the budget"):
        await budget.acquire(101, clock.now() + 500, asyncio.Event())
    assert telemetry.sheds == {"tokens": 1}


async def test_shutdown_cuts_a_budget_wait() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry)
    wake = asyncio.Event()
    for _ in range(2):
        await budget.acquire(10, clock.now() + 500, wake)
    wake.set()
    with pytest.raises(JudgeError, match="shutting down"):
        await budget.acquire(10, clock.now() + 500, wake)


async def test_wait_mode_without_a_wait_limit_waits_up_to_the_deadline() -> None:
    """The default (no max_budget_wait_seconds): a call that fits before its deadline waits,
    even a whole window, instead of being shed as in-flight grants make the wait look long."""
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry, max_wait_seconds=None)
    wake = asyncio.Event()
    held = [await budget.acquire(10, clock.now() + 90, wake) for _ in range(2)]
    clock.advance(1)
    for permit in held:
        permit.finish()
    start = clock.now()
    await budget.acquire(10, start + 90, wake)
    assert clock.now() - start == pytest.approx(60)
    assert telemetry.sheds == {}


async def test_a_cancelled_permit_gives_everything_back() -> None:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry, tokens_per_minute=100)
    wake = asyncio.Event()
    (await budget.acquire(60, clock.now() + 500, wake)).cancel()
    start = clock.now()
    (await budget.acquire(60, clock.now() + 500, wake)).finish()
    (await budget.acquire(1, clock.now() + 500, wake)).finish()  # the first request's slot is free too
    assert clock.now() == start


async def test_a_permit_finished_without_usage_keeps_its_reservation() -> None:
    """What the client does for a 429/5xx/timeout: the server may have counted the request."""
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    budget = make_budget(clock, telemetry, requests_per_minute=None, tokens_per_minute=100)
    wake = asyncio.Event()
    (await budget.acquire(70, clock.now() + 500, wake)).finish(None)
    start = clock.now()
    await budget.acquire(70, clock.now() + 500, wake)
    assert clock.now() - start == pytest.approx(60)
