"""Test doubles for the pipeline: a recording conversation sink and a running sidecar."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.model import Conversation, Turn


class RecordingSink:
    """Records turns and closed conversations; tests await counts instead of sleeping."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.closed: list[Conversation] = []
        self._changed = asyncio.Event()

    def turn_added(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._changed.set()

    def conversation_closed(self, conversation: Conversation) -> None:
        self.closed.append(conversation)
        self._changed.set()

    async def wait_turns(self, n: int, timeout: float = 20.0) -> list[Turn]:
        async def _wait() -> None:
            while len(self.turns) < n:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(_wait(), timeout)
        return self.turns


def test_config(**assembly: Any) -> MonitorConfig:
    """Ephemeral ports on loopback and a short decision wait."""
    data: dict[str, Any] = {
        "receivers": {"http": {"port": 0}, "grpc": {"port": 0}},
        "admin": {"port": 0},
        "assembly": {"decision_wait_seconds": 0.2, **assembly},
        "shutdown_deadline_seconds": 5,
        # The store writes a file; tests that want it set a path under tmp_path.
        "exporters": {"store": {"enabled": False}},
    }
    return MonitorConfig.model_validate(data)


test_config.__test__ = False  # type: ignore[attr-defined]


@asynccontextmanager
async def running_sidecar(config: MonitorConfig | None = None) -> AsyncIterator[tuple[Sidecar, RecordingSink]]:
    sink = RecordingSink()
    sidecar = Sidecar(config or test_config(), sink=sink, registry=CollectorRegistry())
    await sidecar.start()
    try:
        yield sidecar, sink
    finally:
        await sidecar.shutdown()


def metric_value(sidecar: Sidecar, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (the evaluation series
    also carry judge_model and prompt_version, which most tests need not spell out)."""
    return sum(s.value for fam in sidecar.registry.collect() for s in fam.samples
               if s.name == name and labels.items() <= s.labels.items())
