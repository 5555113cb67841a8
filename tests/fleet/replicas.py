"""In-process replicas of the fleet's coordination parts, sharing one real Redis (the sidecar-level
tests in tests/fleet/test_fleet_sidecars.py run whole processes)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from monitor.fleet.config import FleetConfig
from monitor.fleet.decisions import FleetDecider
from monitor.fleet.link import FleetLink
from monitor.fleet.traffic import FleetTraffic
from monitor.model import SamplingDecision, Turn
from monitor.telemetry import CountingTelemetry
from samplers.build import build_sampler
from samplers.config import load_sampling_config
from samplers.stage import SamplingStage
from samplers.weighting import CellLedger

__all__ = ["Replica", "running", "turn"]


def turn(conversation: str, index: int) -> Turn:
    return Turn(f"{abs(hash((conversation, index))):032x}"[:32], conversation, f"Question {index}?", "Answer.")


@dataclass
class Replica:
    name: str
    redis_url: str
    sampling: dict[str, Any]
    fleet: dict[str, Any] = field(default_factory=dict)
    telemetry: CountingTelemetry = field(default_factory=CountingTelemetry)
    delivered: list[tuple[Turn, SamplingDecision]] = field(default_factory=list)

    def __post_init__(self) -> None:
        config = FleetConfig.model_validate({"redis_url": self.redis_url, "replica_id": self.name,
                                             "timeout_seconds": 0.5, "sync_seconds": 0.1,
                                             "heartbeat_seconds": 0.5, **self.fleet})
        sampling = load_sampling_config(self.sampling)
        self.link = FleetLink(config, self.telemetry)
        self.traffic = FleetTraffic(self.link, self.telemetry, interval_seconds=sampling.weight_interval_seconds,
                                    horizon_seconds=60.0)
        self.ledger = CellLedger(sampling.weight_interval_seconds)
        self.stage = SamplingStage(build_sampler(sampling, time.time, shared=self.traffic), ledger=self.ledger)
        self.decider = FleetDecider(self.stage, self.link, self.traffic, self.telemetry, ttl_seconds=3600,
                                    max_pending=config.max_pending_decisions,
                                    max_batch_wait_seconds=config.max_batch_wait_seconds)

    def deliver(self, t: Turn, decision: SamplingDecision) -> None:
        self.delivered.append((t, decision))

    def submit(self, t: Turn) -> None:
        self.decider.submit(t, self.deliver)

    async def start(self) -> None:
        await self.link.start()
        await self.traffic.start()
        await self.decider.start()

    async def stop(self) -> None:
        await self.decider.shutdown()
        await self.traffic.shutdown()
        await self.link.shutdown()


@contextlib.asynccontextmanager
async def running(*replicas: Replica) -> AsyncIterator[None]:
    """Start ``replicas`` and stop every one that started, whatever the test does (stop is idempotent)."""
    started: list[Replica] = []
    try:
        for r in replicas:
            await r.start()
            started.append(r)
        yield
    finally:
        for r in started:
            await r.stop()
