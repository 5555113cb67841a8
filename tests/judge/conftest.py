from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Callable

import pytest

from monitor.judge.client import JudgeClient
from monitor.judge.config import JudgeConfig
from monitor.judge.telemetry import RecordingJudgeTelemetry
from tests.judge.fakes import GOOD
from tests.support.judge_server import JudgeServer, reply_json

ClientFactory = Callable[..., contextlib.AbstractAsyncContextManager[tuple[JudgeClient, RecordingJudgeTelemetry]]]

# Small values so failure paths finish in fractions of a second.
FAST = {
    "model": "judge-model",
    "api_key": "sk-test-not-a-real-key",
    "timeout_seconds": 2.0,
    "deadline_seconds": 5.0,
    "max_retries": 2,
    "backoff_initial_seconds": 0.01,
    "backoff_max_seconds": 0.05,
}


@pytest.fixture
async def server() -> AsyncIterator[JudgeServer]:
    async with JudgeServer(default=reply_json(GOOD)) as srv:
        yield srv


@pytest.fixture
def make_client(server: JudgeServer) -> ClientFactory:
    """``async with make_client(max_retries=0) as (client, telemetry)`` against ``server``."""

    @contextlib.asynccontextmanager
    async def factory(*, clock: Any = None, base_url: str | None = None, window: float = 60.0,
                      **overrides: Any) -> AsyncIterator[tuple[JudgeClient, RecordingJudgeTelemetry]]:
        fields = {**FAST, "base_url": base_url or server.base_url, **overrides}
        if "azure" in overrides:
            fields.pop("base_url")
        telemetry = RecordingJudgeTelemetry()
        client = JudgeClient(JudgeConfig(**fields), telemetry=telemetry, clock=clock, environ={},
                             budget_window_seconds=window)
        await client.start()
        try:
            yield client, telemetry
        finally:
            await client.shutdown(asyncio.get_running_loop().time() + 1.0)

    return factory
