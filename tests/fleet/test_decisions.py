"""One sampling decision per conversation across replicas, through a real Redis."""

from __future__ import annotations

import asyncio
import random

from monitor.fleet.decisions import FLEET_DECISIONS
from tests.fleet.replicas import Replica, turn

RATE_HALF = {"policies": [{"type": "probabilistic", "rate": 0.5}]}
CAPPED = {"policies": [{"type": "rate_limit", "conversations_per_second": 2, "burst": 5, "adjust_seconds": 1}],
          "weight_interval_seconds": 1}


async def until(condition, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


async def test_turns_spread_over_replicas_share_the_first_decision(redis_server):
    # A capped policy: each replica's own draw would differ (its bucket, its arrivals); the fleet's
    # first decision must hold for every turn of the conversation wherever it lands.
    replicas = [Replica(f"r{i}", redis_server.url, CAPPED) for i in range(3)]
    for r in replicas:
        await r.start()
    try:
        rng = random.Random(7)
        conversations = [f"conv-{i}" for i in range(120)]
        sent = 0
        for round_ in range(3):
            for c in conversations:
                rng.choice(replicas).submit(turn(c, round_))
                sent += 1
            await until(lambda: sum(len(r.delivered) for r in replicas) == sent)
        by_conversation: dict[str, set[tuple[bool, float]]] = {}
        for r in replicas:
            for t, d in r.delivered:
                by_conversation.setdefault(t.conversation_id, set()).add((d.sampled, d.probability))
        assert len(by_conversation) == 120
        assert all(len(v) == 1 for v in by_conversation.values()), "a conversation got two decisions"
        kept = sum(1 for v in by_conversation.values() if next(iter(v))[0])
        assert 0 < kept < 120, "the cap should keep some and shed others"
        own = sum(r.telemetry.value(FLEET_DECISIONS, source="own") for r in replicas)
        assert own == 120  # each conversation proposed (and stored) once for the fleet
    finally:
        for r in replicas:
            await r.stop()


async def test_redis_away_decides_alone_and_writes_back(redis_server):
    a = Replica("a", redis_server.url, RATE_HALF)
    b = Replica("b", redis_server.url, RATE_HALF)
    await a.start()
    await b.start()
    try:
        await redis_server.stop()
        for i in range(20):
            a.submit(turn(f"alone-{i}", 0))
        await until(lambda: len(a.delivered) == 20)  # decided alone: nothing waits for Redis
        assert not a.link.healthy
        assert a.telemetry.value(FLEET_DECISIONS, source="local") == 20
        await redis_server.start()
        await until(lambda: a.link.healthy, timeout=15)
        await until(lambda: a.telemetry.value(FLEET_DECISIONS, source="written_back") == 20, timeout=15)
        await until(lambda: b.link.healthy, timeout=15)
        # b now follows a's decisions for those conversations.
        for i in range(20):
            b.submit(turn(f"alone-{i}", 1))
        await until(lambda: len(b.delivered) == 20)
        mine = {t.conversation_id: d.sampled for t, d in a.delivered}
        assert {t.conversation_id: d.sampled for t, d in b.delivered} == mine
    finally:
        await a.stop()
        await b.stop()
