"""Every 200 reply is classified once: a body that is not a chat completion is a counted
``parse_error`` (never an AttributeError, never ``ok``) and tells the breaker the endpoint is not
serving the API. Real openai client, real HTTP, scripted judge on 127.0.0.1."""

from __future__ import annotations

import json
import logging

import pytest
from aiohttp import web

from monitor.judge.types import JudgeError
from tests.judge.conftest import ClientFactory
from tests.judge.fakes import GOOD, make_request
from tests.support.judge_server import Behaviour, JudgeServer, RecordedRequest, reply_json


def raw(body: bytes, content_type: str) -> Behaviour:
    """Answer 200 with ``body`` as it is."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        return web.Response(body=body, status=200, headers={"Content-Type": content_type})

    return behave


HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Corporate proxy login</body></html>"
NOT_A_COMPLETION = {
    "html page": raw(HTML, "text/html; charset=utf-8"),
    "empty body": raw(b"", "application/json"),
    "truncated json": raw(b'{"choices": [{"message": {"content": "{\\"score\\"', "application/json"),
    "json error object": raw(json.dumps({"error": {"message": "upstream failed"}}).encode(), "application/json"),
    "no choices": raw(json.dumps({"choices": [], "usage": None}).encode(), "application/json"),
    "json list": raw(b"[1, 2, 3]", "application/json"),
    "choice without message": raw(json.dumps({"choices": [{"finish_reason": "stop"}]}).encode(),
                                  "application/json"),
    "plain text": raw(b"OK", "text/plain"),
}


@pytest.mark.parametrize("name", sorted(NOT_A_COMPLETION))
async def test_a_200_that_is_not_a_chat_completion_is_a_counted_parse_error(
        server: JudgeServer, make_client: ClientFactory, caplog: pytest.LogCaptureFixture, name: str) -> None:
    server.script(NOT_A_COMPLETION[name])
    caplog.set_level(logging.DEBUG)
    async with make_client(max_retries=2) as (client, telemetry):
        with pytest.raises(JudgeError) as info:
            await client.complete_json(make_request())
    assert info.value.outcome == "parse_error", str(info.value)
    assert "200" in str(info.value)
    assert len(server.requests) == 1  # not retried: the same URL will answer the same page
    assert telemetry.outcomes == {"parse_error": 1}
    assert telemetry.attempt_failures == {"parse_error": 1}
    assert not [r for r in caplog.records if r.exc_info], "no traceback for any reply"


async def test_html_reply_names_what_came_back(server: JudgeServer, make_client: ClientFactory) -> None:
    server.script(NOT_A_COMPLETION["html page"])
    async with make_client() as (client, _):
        with pytest.raises(JudgeError, match=r"text/html, not JSON: '<!doctype html>.*Corporate proxy"):
            await client.complete_json(make_request())


async def test_a_proxy_page_counts_against_the_endpoint(server: JudgeServer, make_client: ClientFactory) -> None:
    """A proxy answering HTML is not a judge serving bad JSON: the breaker opens on it, whereas a
    model that writes prose instead of JSON (a real chat completion) leaves it closed."""
    server.default = NOT_A_COMPLETION["html page"]
    async with make_client(circuit_breaker={"failure_threshold": 2, "open_seconds": 30}) as (client, t):
        outcomes = []
        for _ in range(3):
            try:
                await client.complete_json(make_request())
            except JudgeError as err:
                outcomes.append(err.outcome)
        assert outcomes == ["parse_error", "parse_error", "circuit_open"]
        assert client.circuit_state == "open"
    assert len(server.requests) == 2


async def test_prose_from_a_real_completion_leaves_the_circuit_closed(server: JudgeServer,
                                                                      make_client: ClientFactory) -> None:
    server.default = reply_json("I think the score is four")
    async with make_client(circuit_breaker={"failure_threshold": 2, "open_seconds": 30}) as (client, _):
        for _ in range(3):
            with pytest.raises(JudgeError, match="not an object"):
                await client.complete_json(make_request())
        assert client.circuit_state == "closed"


async def test_a_proxy_page_is_charged_to_the_budget(server: JudgeServer, make_client: ClientFactory) -> None:
    """The request reached something that may count it: the reservation stays charged."""
    server.script(NOT_A_COMPLETION["html page"])
    async with make_client(tokens_per_minute=10_000, on_budget_exhausted="shed", window=60) as (client, _):
        with pytest.raises(JudgeError):
            await client.complete_json(make_request(max_output_tokens=4_000))
        # The reservation (prompt + 4,000) is still held: a second large call does not fit.
        with pytest.raises(JudgeError) as info:
            await client.complete_json(make_request(max_output_tokens=6_000))
        assert info.value.outcome == "budget_exhausted"
        assert (await client.complete_json(make_request(max_output_tokens=100))).data == GOOD


async def test_usage_missing_from_a_valid_reply_is_estimated(server: JudgeServer,
                                                             make_client: ClientFactory) -> None:
    server.script(reply_json(GOOD, usage=False))
    async with make_client() as (client, telemetry):
        result = await client.complete_json(make_request())
    assert result.data == GOOD
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert telemetry.outcomes == {"ok": 1}
