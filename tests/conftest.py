from __future__ import annotations

from typing import AsyncIterator

import pytest

from monitor.app import Sidecar
from tests.support.pipeline import RecordingSink, running_sidecar


@pytest.fixture
async def sidecar() -> AsyncIterator[tuple[Sidecar, RecordingSink]]:
    async with running_sidecar() as pair:
        yield pair
