"""Issue 14's "done when", measured at the scripted judge server: a 429 storm costs each
evaluation at most two HTTP requests and, when it ends within the deadline, every evaluation is
scored (the judge client alone, and the sidecar end to end); with a 5,000 tokens/minute budget the
judge never receives more than 5,000 prompt tokens in any 60 s of the client's (injected) clock,
whatever it answers."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.judge.types import JudgeError, JudgeRequest
from tests.judge.conftest import ClientFactory
from tests.judge.fakes import GOOD, ScaledClock, is_probe, reply_shape
from tests.judge.test_client_limits import max_in_any_window
from tests.judge.test_rate_limits import prompt_tokens_received, rotating
from tests.judge.test_reply_classes import NOT_A_COMPLETION
from tests.support.judge_server import (
    Behaviour,
    JudgeServer,
    RecordedRequest,
    rate_limited,
    reply_json,
    schema_reply,
    server_error,
)
from tests.support.pipeline import RecordingSink, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter


def storm(seconds: float, served: Behaviour, retry_after: float | None) -> Behaviour:
    """429 for ``seconds`` after the first request, then ``served``."""
    throttled = rate_limited(retry_after=retry_after)
    started: list[float] = []

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        started.append(started[0] if started else rec.arrived_at)
        during = rec.arrived_at - started[0] < seconds
        return await (throttled if during else served)(server, request, rec)

    return behave


def per_evaluation(server: JudgeServer, pattern: str) -> Counter[str]:
    """Requests per evaluation (``pattern`` finds the evaluation's id in the user message)."""
    counts: Counter[str] = Counter()
    for rec in server.requests:
        if not is_probe(rec.body):
            found = re.search(pattern, rec.body["messages"][-1]["content"])
            assert found, rec.body
            counts[found.group(0)] += 1
    return counts


def request_for(n: int, *, user_chars: int = 60) -> JudgeRequest[Any]:
    user = f"<answer>Call {n}: " + "x" * user_chars + "</answer>"
    return JudgeRequest(metric="groundedness", system="Grade 1-5. Reply in JSON.", user=user,
                        reply=reply_shape(), max_output_tokens=100)


async def outcome(client: Any, request: JudgeRequest) -> str:
    try:
        await client.complete_json(request)
    except JudgeError as err:
        return err.outcome
    return "ok"


async def test_calls_arriving_through_a_storm_send_at_most_two_requests_each(
        server: JudgeServer, make_client: ClientFactory) -> None:
    """Sidecar-like traffic: a call every 40 ms while the judge answers 429 for 1.5 s."""
    server.default = storm(1.5, reply_json(GOOD), retry_after=None)
    server.latency = 0.02
    loop = asyncio.get_running_loop()
    async with make_client(max_concurrency=4, deadline_seconds=6, backoff_initial_seconds=0.1,
                           backoff_max_seconds=0.8) as (client, telemetry):
        tasks = []
        for n in range(50):
            tasks.append(asyncio.create_task(outcome(client, request_for(n))))
            await asyncio.sleep(0.04)
        outcomes = await asyncio.gather(*tasks)
        assert client.circuit_state == "closed"
    assert outcomes == ["ok"] * 50
    counts = per_evaluation(server, r"Call \d+")
    assert len(counts) == 50 and max(counts.values()) <= 2, counts
    assert sum(counts.values()) > 50, "some calls met the storm"
    assert telemetry.effective_outcomes() == {"ok": 50}


async def test_the_sidecar_scores_every_turn_through_a_storm_at_two_requests_each() -> None:
    turns = 12
    async with JudgeServer(default=storm(2.0, schema_reply({"coherence": 4}), retry_after=1)) as judge:
        data = test_config().model_dump(mode="json")
        data["judge"] = {"base_url": judge.base_url, "model": "judge-model", "api_key": "sk-test",
                         "timeout_seconds": 5}
        data["evaluation"] = {"metrics": ["coherence"], "combine_metrics": False}
        data["sampling"] = {"policies": [{"type": "always"}]}
        results: list[Any] = []
        done = asyncio.Event()

        class Collect:
            def consume_result(self, result: Any) -> None:
                results.append(result)
                if len(results) == turns:
                    done.set()

        sidecar = Sidecar(MonitorConfig.model_validate(data), sink=RecordingSink(), registry=CollectorRegistry(),
                          result_consumers=[Collect()])
        await sidecar.start()
        try:
            provider = provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sidecar.http.port}/v1/traces"))
            for i in range(turns):
                emit_genai_turn(provider, f"conv-{i}", f"Question {i}: is the tent waterproof?", f"Answer {i}.")
            assert await asyncio.to_thread(provider.force_flush, 10_000)
            await asyncio.to_thread(provider.shutdown)
            await asyncio.wait_for(done.wait(), 30)
        finally:
            await sidecar.shutdown()
    scores = [s for r in results for s in r.scores if s.metric == "coherence"]
    assert [s.value for s in scores] == [4.0] * turns
    counts = per_evaluation(judge, r"Question \d+")
    assert len(counts) == turns and max(counts.values()) <= 2, counts
    assert sum(is_probe(r.body) for r in judge.requests) >= 1


async def test_a_5000_token_budget_holds_in_every_60_seconds_whatever_the_judge_answers(
        server: JudgeServer, make_client: ClientFactory) -> None:
    """The issue's budget case on the client's injected clock (its minute passes in one real
    second): 60 calls of ~480 tokens at once, the judge answering in turn 429, 429 + Retry-After,
    503, an HTML page and a valid reply. The server stamps arrivals with the same clock."""
    clock = ScaledClock(60.0)
    server.clock = clock.now
    server.default = rotating(rate_limited(), rate_limited(retry_after=1), server_error(503),
                              NOT_A_COMPLETION["html page"], reply_json(GOOD, prompt_tokens=460, completion_tokens=10))
    async with make_client(clock=clock, tokens_per_minute=5_000, on_budget_exhausted="wait",
                           deadline_seconds=600, max_retries=10, max_concurrency=16,
                           backoff_initial_seconds=0.5, backoff_max_seconds=20,
                           circuit_breaker={"failure_threshold": 1000, "open_seconds": 1}) as (client, _):
        outcomes = Counter(await asyncio.gather(*(outcome(client, request_for(n, user_chars=1_600))
                                                  for n in range(60))))
    received = [prompt_tokens_received(r) for r in server.requests]
    assert max_in_any_window(server.arrivals(), received, 60.0) <= 5_000
    assert len(server.requests) >= 30, "the run exercised the budget"
    assert outcomes["ok"] > 0 and sum(outcomes.values()) == 60
