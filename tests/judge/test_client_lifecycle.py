"""Start/shutdown contract, Azure routing, and the key staying out of logs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from monitor.judge.client import JudgeClient
from monitor.judge.config import JudgeConfig
from monitor.judge.telemetry import RecordingJudgeTelemetry
from monitor.judge.types import JudgeError
from tests.judge.conftest import FAST, ClientFactory
from tests.judge.fakes import GOOD, make_request
from tests.support.judge_server import JudgeServer, hang, rate_limited, reply_json, status


def client_for(server: JudgeServer, **overrides: object) -> tuple[JudgeClient, RecordingJudgeTelemetry]:
    telemetry = RecordingJudgeTelemetry()
    config = JudgeConfig(**{**FAST, "base_url": server.base_url, **overrides})
    return JudgeClient(config, telemetry=telemetry, environ={}), telemetry


def deadline(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


def test_disabled_config_is_refused() -> None:
    with pytest.raises(ValueError, match="judge.model"):
        JudgeClient(JudgeConfig())


async def test_shutdown_is_safe_twice_and_without_start(server: JudgeServer) -> None:
    client, _ = client_for(server)
    await client.shutdown(deadline(1))
    await client.shutdown(deadline(1))
    await client.start()
    await client.shutdown(deadline(1))
    await client.shutdown(deadline(1))


async def test_calls_outside_start_and_shutdown_are_counted_errors(server: JudgeServer) -> None:
    client, telemetry = client_for(server)
    with pytest.raises(JudgeError) as info:
        await client.complete_json(make_request())
    assert info.value.outcome == "connection_error"
    await client.start()
    await client.complete_json(make_request())
    await client.shutdown(deadline(1))
    with pytest.raises(JudgeError):
        await client.complete_json(make_request())
    await client.start()  # and it can start again
    await client.complete_json(make_request())
    await client.shutdown(deadline(1))
    assert telemetry.outcomes == {"connection_error": 2, "ok": 2}
    assert len(server.requests) == 2


async def test_shutdown_cuts_a_backoff_sleep(server: JudgeServer) -> None:
    server.script(rate_limited(retry_after=20))
    client, _ = client_for(server, deadline_seconds=60)
    await client.start()
    call = asyncio.create_task(client.complete_json(make_request()))
    while not server.requests:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # let the client start its 20 s sleep
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.shutdown(deadline(5))
    with pytest.raises(JudgeError) as info:
        await call
    assert info.value.outcome == "rate_limited"
    assert loop.time() - started < 1.0
    assert len(server.requests) == 1


async def test_shutdown_lets_in_flight_calls_finish(server: JudgeServer) -> None:
    server.latency = 0.2
    client, _ = client_for(server)
    await client.start()
    call = asyncio.create_task(client.complete_json(make_request()))
    while not server.requests:
        await asyncio.sleep(0.01)
    await client.shutdown(deadline(2))
    assert (await call).data == GOOD


async def test_shutdown_deadline_ends_a_hanging_call(server: JudgeServer) -> None:
    server.default = hang(30)
    client, _ = client_for(server, timeout_seconds=10, deadline_seconds=20)
    await client.start()
    call = asyncio.create_task(client.complete_json(make_request()))
    while not server.requests:
        await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.shutdown(deadline(0.2))
    with pytest.raises(JudgeError) as info:
        await call
    assert info.value.outcome in ("connection_error", "timeout")
    assert loop.time() - started < 1.0


async def test_azure_routes_by_deployment_with_api_key_header(server: JudgeServer,
                                                              make_client: ClientFactory) -> None:
    endpoint = server.base_url.removesuffix("/v1")
    azure = {"endpoint": endpoint, "deployment": "judge-deploy", "api_version": "2024-10-21"}
    async with make_client(azure=azure, model=None) as (client, _):
        assert (await client.complete_json(make_request())).data == GOOD
    recorded = server.requests[0]
    assert recorded.path == "/openai/deployments/judge-deploy/chat/completions"
    assert recorded.headers["api-key"] == FAST["api_key"]
    assert recorded.body["model"] == "judge-deploy"


async def test_api_key_never_logged(server: JudgeServer, make_client: ClientFactory,
                                    caplog: pytest.LogCaptureFixture) -> None:
    secret = str(FAST["api_key"])
    server.script(reply_json(GOOD), rate_limited(retry_after=0.01), reply_json(GOOD),
                  status(401, {"error": {"message": "Incorrect API key provided"}}))
    errors: list[str] = []
    with caplog.at_level(logging.DEBUG):
        async with make_client(circuit_breaker={"failure_threshold": 1, "open_seconds": 0.01}) as (client, _):
            for _ in range(3):
                try:
                    await client.complete_json(make_request())
                except JudgeError as err:
                    errors.append(str(err))
            assert secret not in repr(client.__dict__)
    assert len(server.requests) == 5 and errors  # the 429's storm probe is the fifth
    assert caplog.records, "debug logging was captured"
    assert secret not in caplog.text
    assert all(secret not in e for e in errors)


async def test_async_context_manager_and_repr(server: JudgeServer) -> None:
    client, _ = client_for(server)
    async with client as judge:
        assert (await judge.complete_json(make_request())).data == GOOD
        assert "judge-model" in repr(judge) and str(FAST["api_key"]) not in repr(judge)
    with pytest.raises(JudgeError):
        await client.complete_json(make_request())


async def test_shutdown_ends_calls_queued_for_a_slot_at_once(server: JudgeServer) -> None:
    server.latency = 0.3
    client, telemetry = client_for(server, max_concurrency=1, deadline_seconds=30)
    await client.start()
    calls = [asyncio.create_task(client.complete_json(make_request())) for _ in range(4)]
    while not server.requests:
        await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.shutdown(deadline(2))
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert loop.time() - started < 1.0  # the in-flight call finished; the queued three did not wait
    assert not isinstance(results[0], BaseException) and results[0].data == GOOD
    assert [r.outcome for r in results[1:] if isinstance(r, JudgeError)] == ["connection_error"] * 3
    assert len(server.requests) == 1
    assert telemetry.outcomes == {"ok": 1, "connection_error": 3}
