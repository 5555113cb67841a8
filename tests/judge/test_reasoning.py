"""Reasoning models get ``max_completion_tokens`` and no ``temperature``: by name, by config, or
after the 400 OpenAI answers the classic parameters with (real openai client, scripted judge)."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from monitor.judge.request_body import looks_like_reasoning_model
from monitor.judge.types import JudgeError
from tests.judge.conftest import ClientFactory
from tests.judge.fakes import GOOD, make_request
from tests.support.judge_server import JudgeServer, status

MAX_TOKENS_REFUSED = status(400, {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})
TEMPERATURE_REFUSED = status(400, {"error": {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) "
               "value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}})


@pytest.mark.parametrize("name, expected", [
    ("o1", True), ("o1-mini", True), ("o3-mini", True), ("o4-mini-2025-04-16", True), ("gpt-5", True),
    ("gpt-5-mini", True), ("openai/o3", True), ("azure/gpt-5-nano", True),
    ("gpt-4o", False), ("gpt-4.1-mini", False), ("llama3.1:8b", False), ("qwen2.5-7b-instruct", False),
    ("mistral-large", False), ("judge-model", False), ("gpt-4o-2024-08-06", False), ("claude-sonnet", False),
])
def test_reasoning_models_are_recognised_by_name(name: str, expected: bool) -> None:
    assert looks_like_reasoning_model(name) is expected


async def test_a_reasoning_model_by_name_gets_reasoning_parameters(server: JudgeServer,
                                                                   make_client: ClientFactory) -> None:
    async with make_client(model="o3-mini", reasoning_effort="low", reasoning_extra_output_tokens=1000) as (
            client, _):
        assert (await client.complete_json(make_request(max_output_tokens=200))).data == GOOD
    body = server.requests[0].body
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 1200  # the reply's 200 plus room to reason
    assert body["reasoning_effort"] == "low"


async def test_a_classic_model_gets_temperature_zero(server: JudgeServer, make_client: ClientFactory) -> None:
    async with make_client(model="gpt-4o", reasoning_effort="low") as (client, _):
        await client.complete_json(make_request(max_output_tokens=200))
    body = server.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0, 200)
    assert "max_completion_tokens" not in body and "reasoning_effort" not in body


@pytest.mark.parametrize("refusal", [MAX_TOKENS_REFUSED, TEMPERATURE_REFUSED])
async def test_the_400_for_classic_parameters_switches_the_client(server: JudgeServer, make_client: ClientFactory,
                                                                  refusal) -> None:
    """An Azure deployment name says nothing about the model: the server's 400 does. The switch
    is a resend, not a retry, and it is remembered."""
    server.script(refusal)
    async with make_client(model="my-deployment", max_retries=0) as (client, telemetry):
        assert (await client.complete_json(make_request())).data == GOOD
        assert client.reasoning_model
        assert (await client.complete_json(make_request())).data == GOOD
    first, second, third = (r.body for r in server.requests)
    assert "max_tokens" in first and "temperature" in first
    for body in (second, third):
        assert "max_tokens" not in body and "temperature" not in body and "max_completion_tokens" in body
    assert telemetry.outcomes == {"ok": 2}


async def test_pinned_classic_parameters_do_not_switch(server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = MAX_TOKENS_REFUSED
    async with make_client(model="o3-mini", reasoning_model=False) as (client, _):
        with pytest.raises(JudgeError) as info:
            await client.complete_json(make_request())
        assert info.value.outcome == "request_rejected"
        assert not client.reasoning_model
    assert len(server.requests) == 1 and "max_tokens" in server.requests[0].body


async def test_a_reply_cut_short_by_reasoning_says_what_to_raise(server: JudgeServer,
                                                                 make_client: ClientFactory) -> None:
    async def length(srv, request, rec):  # a reasoning model that spent its tokens thinking
        body = {"choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": ""}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 2248}}
        return web.Response(text=json.dumps(body), content_type="application/json")

    server.script(length)
    async with make_client(model="gpt-5-mini") as (client, telemetry):
        with pytest.raises(JudgeError, match="reasoning_extra_output_tokens"):
            await client.complete_json(make_request())
    assert telemetry.outcomes == {"parse_error": 1}
    assert telemetry.token_counts[("groundedness", "completion")] == 2248
