"""Each way a judge call can go lands as the right counted outcome (real openai client, real HTTP)."""

from __future__ import annotations

import asyncio
import json

import pytest

from monitor.judge.types import JudgeError
from tests.judge.conftest import ClientFactory
from tests.judge.fakes import GOOD, SCHEMA, is_probe, make_request
from tests.support.judge_server import (
    JudgeServer,
    close_connection,
    content_filtered,
    hang,
    rate_limited,
    reply,
    reply_json,
    server_error,
    status,
    unused_base_url,
)


async def expect_failure(client, outcome: str) -> JudgeError:
    with pytest.raises(JudgeError) as info:
        await client.complete_json(make_request())
    assert info.value.outcome == outcome, str(info.value)
    return info.value


async def test_valid_reply_is_parsed_with_usage(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(reply_json(GOOD, prompt_tokens=42, completion_tokens=7))
    async with make_client() as (client, telemetry):
        result = await client.complete_json(make_request())
    assert result.data == GOOD
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.calls) == (42, 7, 1)
    assert telemetry.outcomes == {"ok": 1}
    assert telemetry.token_counts[("groundedness", "prompt")] == 42
    assert telemetry.token_counts[("groundedness", "completion")] == 7


async def test_request_carries_schema_temperature_and_limits(server: JudgeServer,
                                                             make_client: ClientFactory) -> None:
    async with make_client() as (client, _):
        await client.complete_json(make_request(max_output_tokens=123))
    body = server.requests[0].body
    assert body["model"] == "judge-model"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 123
    assert body["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "groundedness", "schema": SCHEMA, "strict": True}}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert server.requests[0].headers["Authorization"] == "Bearer sk-test-not-a-real-key"


async def test_fenced_json_is_accepted(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(reply("```json\n" + json.dumps(GOOD) + "\n```"))
    async with make_client() as (client, _):
        assert (await client.complete_json(make_request())).data == GOOD


@pytest.mark.parametrize("content", [
    "The score is 4.",
    '{"score": 4, "reason": "ok"} and also {"score": 5}',
    '{"score": 4, "reason": "ok"}\nHope this helps!',
    '[{"score": 4, "reason": "ok"}]',
    '{"score": 4, "reason": "ok", "score": 2}',
    '{"score": NaN, "reason": "ok"}',
    "",
    "   ",
    None,
])
async def test_malformed_or_empty_reply_is_parse_error(server: JudgeServer, make_client: ClientFactory,
                                                       content: str | None) -> None:
    server.script(reply(content))
    async with make_client() as (client, telemetry):
        error = await expect_failure(client, "parse_error")
    assert len(server.requests) == 1, "a parse error is not retried"
    assert telemetry.outcomes == {"parse_error": 1}
    assert error.usage.calls == 1 and error.usage.completion_tokens == 5


@pytest.mark.parametrize("obj, outcome", [
    ({"score": 9, "reason": "x"}, "out_of_range"),
    ({"score": 0, "reason": "x"}, "out_of_range"),
    ({"score": "4", "reason": "x"}, "parse_error"),
    ({"score": 4}, "parse_error"),
    ({"score": 4, "reason": "x", "extra": 1}, "parse_error"),
])
async def test_schema_violations(server: JudgeServer, make_client: ClientFactory, obj: object,
                                 outcome: str) -> None:
    server.script(reply_json(obj))
    async with make_client() as (client, telemetry):
        await expect_failure(client, outcome)
    assert telemetry.outcomes == {outcome: 1}


@pytest.mark.parametrize("behaviour", [
    reply(None, refusal="I can't help with that."),
    reply(None, finish_reason="content_filter"),
    reply('{"score": 4, "reas', finish_reason="content_filter"),
    content_filtered(),
], ids=["message.refusal", "finish_reason", "finish_reason-partial", "azure-400-content_filter"])
async def test_refusal_and_content_filter_are_refused(server: JudgeServer, make_client: ClientFactory,
                                                      behaviour: object) -> None:
    """Not an error: counted ``refused``, not retried, and the breaker hears a working server."""
    server.script(behaviour)  # type: ignore[arg-type]
    async with make_client(max_retries=2) as (client, telemetry):
        await expect_failure(client, "refused")
        assert client.circuit_state == "closed"
    assert len(server.requests) == 1
    assert telemetry.outcomes == {"refused": 1}


async def test_free_text_refusal_without_the_providers_signal_stays_parse_error(
        server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(reply("I'm sorry, I can't rate this content."))
    async with make_client() as (client, telemetry):
        await expect_failure(client, "parse_error")
    assert telemetry.outcomes == {"parse_error": 1}


async def test_a_400_without_content_filter_stays_request_rejected(server: JudgeServer,
                                                                   make_client: ClientFactory) -> None:
    server.script(status(400, {"error": {"message": "bad", "type": "invalid_request_error", "code": "invalid"}}))
    async with make_client() as (client, _):
        await expect_failure(client, "request_rejected")


async def test_429_then_ok_honours_retry_after(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(rate_limited(retry_after=0.3))
    async with make_client() as (client, telemetry):
        result = await client.complete_json(make_request())
    first, probe, second = server.requests
    assert is_probe(probe.body) and not is_probe(second.body)
    assert probe.arrived_at - first.arrived_at >= 0.3
    assert second.arrived_at >= probe.arrived_at
    assert result.usage.calls == 2
    assert telemetry.outcomes == {"ok": 1}
    assert telemetry.attempt_failures == {"rate_limited": 1}


async def test_429_honours_retry_after_ms(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(rate_limited(retry_after=0.25, in_ms=True))
    async with make_client() as (client, _):
        await client.complete_json(make_request())
    first, probe, _second = server.arrivals()
    assert probe - first >= 0.25


async def test_persistent_429_is_ridden_out_until_the_deadline(server: JudgeServer,
                                                               make_client: ClientFactory) -> None:
    """A 429 is not an error to give up on after max_retries: the call waits for the storm's end
    until its deadline, while the client probes, spaced by a pause that grows while the rate limit
    lasts; the call itself sent one request; the breaker stays shut."""
    server.default = rate_limited(retry_after=0.01)
    loop = asyncio.get_running_loop()
    async with make_client(max_retries=0, deadline_seconds=1.5, backoff_initial_seconds=0.1,
                           backoff_max_seconds=0.4,
                           circuit_breaker={"failure_threshold": 2, "open_seconds": 30}) as (client, telemetry):
        started = loop.time()
        error = await expect_failure(client, "rate_limited")
        assert loop.time() - started <= 1.5 + 0.05
        assert client.circuit_state == "closed"
    arrivals = server.arrivals()
    assert 3 <= len(arrivals) <= 9
    assert [is_probe(r.body) for r in server.requests] == [False] + [True] * (len(arrivals) - 1)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert gaps[-1] >= 0.2 > gaps[0] - 0.05  # the pause doubled from 0.05-0.1 s towards 0.4 s
    assert error.usage.calls == 1
    assert telemetry.outcomes == {"rate_limited": 1}
    assert telemetry.circuit_states == []


async def test_retry_after_beyond_deadline_fails_fast(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(rate_limited(retry_after=30))
    loop = asyncio.get_running_loop()
    async with make_client(deadline_seconds=2.0) as (client, _):
        started = loop.time()
        await expect_failure(client, "rate_limited")
        assert loop.time() - started < 1.0
    assert len(server.requests) == 1


async def test_5xx_is_retried_then_succeeds(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(server_error(500), server_error(503), reply_json(GOOD))
    async with make_client(max_retries=2) as (client, telemetry):
        assert (await client.complete_json(make_request())).data == GOOD
    assert len(server.requests) == 3
    assert telemetry.attempt_failures == {"server_error": 2}


async def test_persistent_5xx_is_server_error(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = server_error(500)
    async with make_client(max_retries=1) as (client, telemetry):
        await expect_failure(client, "server_error")
    assert len(server.requests) == 2
    assert telemetry.outcomes == {"server_error": 1}


@pytest.mark.parametrize("code, outcome", [
    (401, "auth_error"), (403, "auth_error"), (404, "not_found"), (400, "request_rejected"),
    (422, "request_rejected"),
])
async def test_permanent_4xx_has_its_own_outcome_and_is_not_an_outage(
        server: JudgeServer, make_client: ClientFactory, code: int, outcome: str) -> None:
    server.default = status(code, {"error": {"message": "Incorrect API key provided"}})
    async with make_client(max_retries=2, circuit_breaker={"failure_threshold": 2, "open_seconds": 30}) as (
            client, telemetry):
        for _ in range(3):
            await expect_failure(client, outcome)
        assert client.circuit_state == "closed"  # a configuration mistake, not an outage
    assert len(server.requests) == 3  # one request per call: never retried
    assert telemetry.outcomes == {outcome: 3}


async def test_hang_past_timeout_is_timeout(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = hang(30)
    loop = asyncio.get_running_loop()
    async with make_client(timeout_seconds=0.3, max_retries=0) as (client, telemetry):
        started = loop.time()
        await expect_failure(client, "timeout")
        assert 0.25 <= loop.time() - started < 1.0
    assert telemetry.outcomes == {"timeout": 1}


async def test_hangs_never_outlive_the_deadline(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = hang(30)
    loop = asyncio.get_running_loop()
    async with make_client(timeout_seconds=0.3, deadline_seconds=0.5, max_retries=5) as (client, _):
        started = loop.time()
        await expect_failure(client, "timeout")
        assert loop.time() - started < 0.5 + 0.1
    assert len(server.requests) == 2  # 0.3 s, then the rest of the deadline


async def test_connection_refused_is_connection_error(make_client: ClientFactory) -> None:
    async with make_client(base_url=unused_base_url(), max_retries=1) as (client, telemetry):
        error = await expect_failure(client, "connection_error")
    assert error.usage.calls == 2
    assert telemetry.attempt_failures == {"connection_error": 2}


async def test_dropped_connection_is_connection_error(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = close_connection()
    async with make_client(max_retries=0) as (client, _):
        await expect_failure(client, "connection_error")


async def test_a_reply_is_counted_ok_only_when_its_values_validate(server: JudgeServer,
                                                                  make_client: ClientFactory) -> None:
    """The declaration is checked before the call is counted: a well-formed reply whose score is
    out of range or whose shape is wrong is counted once, with that outcome, never as ok; the
    server answered, so the breaker does not count it as an outage."""
    server.script(reply_json(GOOD), reply_json({**GOOD, "score": 9}), reply_json({"score": 4}))
    async with make_client(max_retries=0, circuit_breaker={"failure_threshold": 1, "open_seconds": 30}) as (
            client, telemetry):
        value = (await client.complete_json(make_request())).value
        assert (value.score, value.reason) == (GOOD["score"], GOOD["reason"])
        await expect_failure(client, "out_of_range")
        await expect_failure(client, "parse_error")
        assert client.circuit_state == "closed"
    assert telemetry.outcomes == {"ok": 1, "out_of_range": 1, "parse_error": 1}
    assert telemetry.rejected == {}


async def test_a_shared_call_splits_its_tokens_across_its_metrics(server: JudgeServer,
                                                                  make_client: ClientFactory) -> None:
    """A combined call's tokens land on real metric ids (never on the call's own id), and the
    per-metric shares add up to what the call used."""
    from dataclasses import replace

    server.script(reply_json(GOOD, prompt_tokens=100, completion_tokens=11))
    request = replace(make_request("combined_rubrics"), metrics=("groundedness", "relevance", "coherence"))
    async with make_client() as (client, telemetry):
        await client.complete_json(request)
    assert telemetry.token_counts == {
        ("groundedness", "prompt"): 34, ("relevance", "prompt"): 33, ("coherence", "prompt"): 33,
        ("groundedness", "completion"): 4, ("relevance", "completion"): 4, ("coherence", "completion"): 3,
    }
    assert telemetry.outcomes_by_metric == {("combined_rubrics", "ok"): 1}
