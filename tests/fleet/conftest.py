from __future__ import annotations

from typing import AsyncIterator

import pytest

from tests.support.redis_server import RedisServer


@pytest.fixture
async def redis_server(tmp_path) -> AsyncIterator[RedisServer]:
    async with RedisServer(tmp_path / "redis") as server:
        yield server
