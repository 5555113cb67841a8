"""Budgets, concurrency, the circuit breaker and structured-output fallback, measured at the server."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from monitor.judge.types import JudgeError
from tests.judge.conftest import ClientFactory
from tests.judge.fakes import GOOD, FakeClock, make_request
from tests.support.judge_server import (
    JudgeServer,
    rate_limited,
    reject_response_format,
    reply_json,
    server_error,
)


async def outcome_of(client) -> str:
    try:
        await client.complete_json(make_request())
    except JudgeError as err:
        return err.outcome
    return "ok"


def max_in_any_window(times: list[float], weights: list[int], window: float) -> int:
    """Largest total weight of events inside any half-open window [t, t + window)."""
    pairs = sorted(zip(times, weights))
    best = 0
    for i, (start, _) in enumerate(pairs):
        best = max(best, sum(w for t, w in pairs[i:] if t < start + window - 1e-9))
    return best


async def test_max_concurrency_is_never_exceeded(server: JudgeServer, make_client: ClientFactory) -> None:
    server.latency = 0.05
    async with make_client(max_concurrency=3) as (client, telemetry):
        outcomes = await asyncio.gather(*(outcome_of(client) for _ in range(12)))
    assert outcomes == ["ok"] * 12
    assert server.max_in_flight == 3
    assert any(limiter == "concurrency" for limiter, _ in telemetry.waits)


async def test_requests_per_minute_shed(server: JudgeServer, make_client: ClientFactory) -> None:
    async with make_client(requests_per_minute=3, on_budget_exhausted="shed") as (client, telemetry):
        outcomes = [await outcome_of(client) for _ in range(5)]
    assert outcomes == ["ok"] * 3 + ["budget_exhausted"] * 2
    assert len(server.requests) == 3
    assert telemetry.sheds == {"requests": 2}


async def test_requests_per_minute_wait_holds_in_every_window(server: JudgeServer,
                                                              make_client: ClientFactory) -> None:
    # The real clock with the minute scaled down to 0.5 s, so the server's own arrival times judge.
    async with make_client(window=0.5, requests_per_minute=5, max_concurrency=20) as (client, telemetry):
        outcomes = await asyncio.gather(*(outcome_of(client) for _ in range(12)))
    assert outcomes == ["ok"] * 12
    arrivals = server.arrivals()
    assert max_in_any_window(arrivals, [1] * len(arrivals), 0.5) == 5
    assert max(arrivals) - min(arrivals) >= 1.0  # 12 requests need three windows
    assert {limiter for limiter, _ in telemetry.waits} == {"requests"}


async def test_tokens_per_minute_hold_in_every_window(server: JudgeServer, make_client: ClientFactory) -> None:
    # Each call reserves its prompt estimate + max_output_tokens (100) and settles to the
    # server's usage (95), so later calls fit sooner but no window goes over.
    server.default = reply_json(GOOD, prompt_tokens=35, completion_tokens=60)
    async with make_client(window=0.5, tokens_per_minute=600, max_concurrency=20) as (client, telemetry):
        outcomes = await asyncio.gather(*(outcome_of(client) for _ in range(8)))
    assert outcomes == ["ok"] * 8
    arrivals = server.arrivals()
    assert max_in_any_window(arrivals, [95] * len(arrivals), 0.5) <= 600
    assert {limiter for limiter, _ in telemetry.waits} == {"tokens"}


async def test_budget_wait_beyond_limit_is_shed_without_waiting(server: JudgeServer,
                                                                make_client: ClientFactory) -> None:
    clock = FakeClock()
    async with make_client(clock=clock, requests_per_minute=1, max_budget_wait_seconds=10) as (client, t):
        assert await outcome_of(client) == "ok"
        before = clock.now()
        assert await outcome_of(client) == "budget_exhausted"
        assert clock.now() == before
    assert len(server.requests) == 1
    assert t.sheds == {"requests": 1}


async def test_circuit_opens_and_recovers(server: JudgeServer, make_client: ClientFactory) -> None:
    clock = FakeClock()
    server.default = server_error(500)
    async with make_client(clock=clock, max_retries=0,
                           circuit_breaker={"failure_threshold": 3, "open_seconds": 30}) as (client, t):
        assert [await outcome_of(client) for _ in range(5)] == ["server_error"] * 3 + ["circuit_open"] * 2
        assert len(server.requests) == 3 and client.circuit_state == "open"
        clock.advance(30)
        assert await outcome_of(client) == "server_error"  # the half-open probe fails: reopen
        assert len(server.requests) == 4 and client.circuit_state == "open"
        assert await outcome_of(client) == "circuit_open"
        server.default = reply_json(GOOD)
        clock.advance(30)
        assert await outcome_of(client) == "ok"
        assert client.circuit_state == "closed"
        assert await outcome_of(client) == "ok"
    assert t.circuit_states == ["open", "half_open", "open", "half_open", "closed"]
    assert t.outcomes == {"server_error": 4, "circuit_open": 3, "ok": 2}


async def test_parse_errors_do_not_open_the_circuit(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = reply_json({"score": 99, "reason": "x"})
    async with make_client(circuit_breaker={"failure_threshold": 2, "open_seconds": 30}) as (client, _):
        assert [await outcome_of(client) for _ in range(4)] == ["out_of_range"] * 4
        assert client.circuit_state == "closed"


async def test_judge_answering_only_429_stays_bounded(server: JudgeServer, make_client: ClientFactory) -> None:
    """The issue's "judge answers 429 for 30 s", scaled to 3 s: requests sent stay within twice
    the evaluations attempted, no call outlives its deadline, and a rate limit never opens the
    circuit (every call ends rate_limited, not circuit_open)."""
    server.default = rate_limited(retry_after=0.2)
    loop = asyncio.get_running_loop()
    durations: list[float] = []
    outcomes: Counter[str] = Counter()

    lags: list[float] = [0.0]

    async def evaluate(client) -> None:
        started = loop.time()
        outcomes[await outcome_of(client)] += 1
        durations.append(loop.time() - started)

    async def heartbeat() -> None:
        # How late the loop wakes a 10 ms sleeper: a call cannot end before the loop runs it, so
        # on a loaded machine it may end this much past its deadline without the client being wrong.
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            lags.append(loop.time() - before - 0.01)

    async with make_client(deadline_seconds=1.0, timeout_seconds=0.5, max_retries=3, max_concurrency=8,
                           circuit_breaker={"failure_threshold": 5, "open_seconds": 0.5}) as (client, t):
        beats = asyncio.create_task(heartbeat())
        tasks = []
        end = loop.time() + 3.0
        while loop.time() < end:
            tasks.append(asyncio.create_task(evaluate(client)))
            await asyncio.sleep(0.03)
        await asyncio.gather(*tasks)
        beats.cancel()
        attempted = len(tasks)
        assert len(server.requests) <= 2 * attempted
        # A client that waited out a Retry-After (0.2 s) past the deadline would overrun by far more.
        assert max(durations) <= 1.0 + 0.05 + max(lags), (max(durations), max(lags))
        assert set(outcomes) == {"rate_limited"}
        assert client.circuit_state == "closed" and t.circuit_states == []
        assert client.throttle.window == 1.0
        # The judge recovers: once the pause is over the next call goes through.
        server.default = reply_json(GOOD)
        await asyncio.sleep(max(0.0, client.throttle.paused_until - loop.time()))
        assert await outcome_of(client) == "ok"
    assert sum(t.outcomes.values()) == attempted + 1


async def test_structured_output_falls_back_and_remembers(server: JudgeServer,
                                                          make_client: ClientFactory) -> None:
    server.script(reject_response_format("json_schema"), reject_response_format("json_object"))
    async with make_client(max_retries=0) as (client, t):
        assert (await client.complete_json(make_request())).data == GOOD
        assert client.structured_output == "none"
        assert (await client.complete_json(make_request())).data == GOOD
    formats = [body.get("response_format", {}).get("type") for body in server.bodies()]
    assert formats == ["json_schema", "json_object", None, None]
    # Without a server-side schema the prompt carries it.
    assert '"required": ["score", "reason"]' in server.bodies()[2]["messages"][1]["content"]
    assert t.outcomes == {"ok": 2}
    assert client.circuit_state == "closed"


async def test_json_object_fallback_stops_there_when_accepted(server: JudgeServer,
                                                              make_client: ClientFactory) -> None:
    server.script(reject_response_format("json_schema"))
    async with make_client() as (client, _):
        await client.complete_json(make_request())
        await client.complete_json(make_request())
        assert client.structured_output == "json_object"
    formats = [body.get("response_format", {}).get("type") for body in server.bodies()]
    assert formats == ["json_schema", "json_object", "json_object"]


@pytest.mark.parametrize("mode", ["json_schema", "none"])
async def test_pinned_structured_output_does_not_fall_back(server: JudgeServer, make_client: ClientFactory,
                                                           mode: str) -> None:
    server.script(reject_response_format("json_schema"))
    async with make_client(structured_output=mode, max_retries=2) as (client, _):
        assert await outcome_of(client) == "request_rejected"
        assert client.structured_output == mode
    assert len(server.requests) == 1
