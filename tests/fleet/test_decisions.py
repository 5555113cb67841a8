"""One sampling decision per conversation across replicas, through a real Redis."""

from __future__ import annotations

import asyncio
import random

from monitor.fleet.decisions import FLEET_DECISIONS
from tests.fleet.replicas import Replica, running, turn

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
    async with running(*replicas):
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


async def test_redis_away_decides_alone_and_writes_back(redis_server):
    a = Replica("a", redis_server.url, RATE_HALF)
    b = Replica("b", redis_server.url, RATE_HALF)
    async with running(a, b):
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


# A fleet bucket of 10 that hardly refills (5 a replica in a fleet of 2), and probabilities that stay 1
# for the test's duration (no interval of the fleet's arrivals becomes final): what is kept is exactly
# what the bucket admits.
BUCKET_OF_FIVE = {"policies": [{"type": "rate_limit", "conversations_per_second": 0.01, "burst": 10,
                                "adjust_seconds": 60}],
                  "weight_interval_seconds": 60}


async def test_conversations_decided_elsewhere_spend_none_of_this_replicas_cap(redis_server):
    # Drawing happens only after the lookup: were the 40 conversations a decided drawn again on b,
    # they would take b's 5 tokens (in uniform order, most before the new ones) and shed the new ones.
    a = Replica("a", redis_server.url, BUCKET_OF_FIVE, fleet={"max_batch_wait_seconds": 0.1})
    b = Replica("b", redis_server.url, BUCKET_OF_FIVE, fleet={"max_batch_wait_seconds": 0.1})
    async with running(a, b):
        for i in range(40):
            a.submit(turn(f"old-{i}", 0))
        await until(lambda: len(a.delivered) == 40)
        for i in range(40):
            b.submit(turn(f"old-{i}", 1))
        for i in range(5):
            b.submit(turn(f"new-{i}", 0))
        await until(lambda: len(b.delivered) == 45)
        decided = {t.conversation_id: d for t, d in b.delivered}
        assert all(decided[f"new-{i}"].sampled for i in range(5)), "a conversation decided elsewhere spent a token"
        assert b.telemetry.value(FLEET_DECISIONS, source="fleet") == 40
        assert b.telemetry.value(FLEET_DECISIONS, source="own") == 5
        mine = {t.conversation_id: d.sampled for t, d in a.delivered}
        assert all(decided[c].sampled == s for c, s in mine.items())


async def test_one_round_trip_per_batch_and_the_heartbeat_rides_along(redis_server):
    r = Replica("solo", redis_server.url, RATE_HALF, fleet={"max_batch_wait_seconds": 0.05,
                                                            "heartbeat_seconds": 30})
    calls: list[str] = []
    script = r.link.script

    async def counted(text, keys, args):
        if "return heartbeat(" in text:
            calls.append("heartbeat")
        else:
            calls.append("exchange+beat" if args[3] else "exchange")
        return await script(text, keys, args)

    r.link.script = counted  # type: ignore[method-assign]
    async with running(r):
        for burst in range(8):
            if burst == 4:
                r.link._last_beat = float("-inf")  # a heartbeat is due: the next exchange carries it
            # Steady traffic: each burst comes while the previous one's draws wait to be proposed.
            keys = {f"b{burst}-{i}" for i in range(10)}
            for key in sorted(keys):
                r.submit(turn(key, 0))
            await until(lambda: {p.key for p in r.decider._proposals} == keys)
        await until(lambda: len(r.delivered) == 80)
        exchanges = [c for c in calls if c.startswith("exchange")]
        # Each burst's lookup rode with the previous burst's proposals; the last proposals went alone.
        # A lookup-then-propose design would have made 16 round trips.
        assert len(exchanges) == 8 + 1, calls
        assert r.telemetry.value(FLEET_DECISIONS, source="own") == 80
        assert "exchange+beat" in calls, calls  # the heartbeat rode on an exchange
        assert r.link.fleet_size == 1


async def test_shutdown_stores_the_drawn_proposals_for_the_fleet(redis_server):
    # Drawn, not yet proposed when the replica stops: the fleet must still learn the decisions, or
    # the conversations' turns elsewhere would be decided again (evaluated in part).
    a = Replica("a", redis_server.url, RATE_HALF, fleet={"max_batch_wait_seconds": 5})
    b = Replica("b", redis_server.url, RATE_HALF, fleet={"max_batch_wait_seconds": 0.05})
    async with running(a, b):
        for i in range(12):
            a.submit(turn(f"late-{i}", 0))
        await until(lambda: len(a.decider._proposals) == 12)  # looked up, drawn, waiting for the next batch
        await a.stop()
        assert len(a.delivered) == 12
        assert a.telemetry.value(FLEET_DECISIONS, source="own") == 12
        for i in range(12):
            b.submit(turn(f"late-{i}", 1))
        await until(lambda: len(b.delivered) == 12)
        assert b.telemetry.value(FLEET_DECISIONS, source="fleet") == 12
        assert {t.conversation_id: d.sampled for t, d in b.delivered} == \
            {t.conversation_id: d.sampled for t, d in a.delivered}
