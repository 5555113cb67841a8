"""The judge budget held fleet-wide by Redis: no window of the budget overfilled by several replicas,
one replica's 429 storm pausing the others, and the two failure modes when Redis is away."""

from __future__ import annotations

import asyncio
import time

import pytest

from monitor.fleet.config import FleetConfig
from monitor.fleet.judge_budget import FleetJudgeBudget
from monitor.fleet.link import FleetLink
from monitor.judge.clock import LoopClock
from monitor.judge.types import JudgeError
from monitor.telemetry import CountingTelemetry

WINDOW = 2.0  # seconds: the 60 s window scaled down, the same arithmetic


def link_for(url: str, name: str, **fleet) -> FleetLink:
    config = FleetConfig.model_validate({"redis_url": url, "replica_id": name, "timeout_seconds": 0.5,
                                         "heartbeat_seconds": 0.5, **fleet})
    return FleetLink(config, CountingTelemetry())


def budget_for(link: FleetLink, tokens: int | None = 5000, requests: int | None = None) -> FleetJudgeBudget:
    return FleetJudgeBudget(link, requests_per_minute=requests, tokens_per_minute=tokens, on_exhausted="wait",
                            max_wait_seconds=None, clock=LoopClock(), window_seconds=WINDOW)


async def test_three_replicas_never_overfill_a_window(redis_server):
    links = [link_for(redis_server.url, f"r{i}") for i in range(3)]
    for link in links:
        await link.start()
    budgets = [budget_for(link) for link in links]
    charges: list[tuple[float, float, int]] = []  # (granted, finished, tokens) per attempt
    wake = asyncio.Event()

    async def caller(budget: FleetJudgeBudget, estimate: int, used: int) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + 3 * WINDOW
        while loop.time() < end:
            try:
                permit = await budget.acquire(estimate, loop.time() + 2 * WINDOW, wake)
            except JudgeError:
                continue
            granted = time.monotonic()
            await asyncio.sleep(0.05)  # the call
            charges.append((granted, time.monotonic(), used))
            permit.finish(used)

    try:
        # Estimates above what the server reports: charged first, corrected after.
        await asyncio.gather(*(caller(b, 700, 600) for b in budgets for _ in range(4)))
        for b in budgets:
            await b.flush()
    finally:
        for link in links:
            await link.shutdown()
    assert len(charges) > 20
    # Every window: what was granted in it (counted until a window after the attempt finished).
    for start, _, _ in charges:
        in_window = sum(used for g, f, used in charges if g < start + WINDOW and f + WINDOW > start and g >= start)
        assert in_window <= 5000, f"{in_window} tokens granted in one window"
    spent = sum(used for _, _, used in charges)
    assert spent <= 5000 * 4.5  # ~3 windows (+ the first's): never three replicas' worth


async def test_one_replicas_storm_pauses_the_others(redis_server):
    a, b = link_for(redis_server.url, "a"), link_for(redis_server.url, "b")
    await a.start()
    await b.start()
    try:
        budget_a, budget_b = budget_for(a), budget_for(b)
        budget_a.rate_limited(1.0)
        await budget_a.flush()
        loop = asyncio.get_running_loop()
        started = loop.time()
        permit = await budget_b.acquire(10, loop.time() + 5, asyncio.Event())
        assert loop.time() - started >= 0.8  # b waited for a's pause
        permit.finish(10)
        with pytest.raises(JudgeError):  # a call whose deadline ends inside the pause is not sent
            budget_a.rate_limited(2.0)
            await budget_a.flush()
            await budget_b.acquire(10, loop.time() + 0.5, asyncio.Event())
    finally:
        await a.shutdown()
        await b.shutdown()


async def test_redis_away_local_share_grants_a_share(redis_server):
    links = [link_for(redis_server.url, f"r{i}") for i in range(2)]
    for link in links:
        await link.start()
    await links[0]._beat()  # both heartbeats seen: a fleet of 2
    assert links[0].fleet_size == 2
    budget = budget_for(links[0], tokens=1000)
    await redis_server.stop()
    loop = asyncio.get_running_loop()
    try:
        granted = 0
        with pytest.raises(JudgeError):
            while True:  # shed at the share: 1000 / 2 replicas
                permit = await budget.acquire(100, loop.time(), asyncio.Event())
                permit.finish(100)
                granted += 100
        assert granted == 500
        assert not links[0].healthy
    finally:
        for link in links:
            await link.shutdown()


async def test_redis_away_closed_sends_nothing_until_it_returns(redis_server):
    link = link_for(redis_server.url, "c", on_redis_failure="closed")
    await link.start()
    budget = budget_for(link)
    await redis_server.stop()
    loop = asyncio.get_running_loop()
    try:
        await link.run(lambda r: r.ping())  # notices Redis is away
        with pytest.raises(JudgeError, match="Redis is away"):
            await budget.acquire(10, loop.time() + 0.5, asyncio.Event())
        await redis_server.start()
        permit = await budget.acquire(10, loop.time() + 10, asyncio.Event())  # waits for Redis, then grants
        permit.finish(10)
        assert link.healthy
    finally:
        await link.shutdown()
