"""The fleet's store on a real PostgreSQL server: replicas migrating together, backlog leases
handed over exactly once, and PostgreSQL going away (at start, mid-run) without a lost result."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exporters.config import StoreConfig
from exporters.result_store import STORE_DUPLICATE_RESULTS, STORE_WRITE_FAILURES, StoreOpenError
from exporters.store_postgres import PostgresStore
from exporters.store_schema import SCHEMA_VERSION
from exporters.store_spill import STORE_SPILL
from monitor.model import EvaluationResult, SamplingDecision
from monitor.telemetry import BACKLOG
from tests.exporters.results import WriterTelemetry
from tests.exporters.test_result_store import quality, result, until
from tests.support.postgres_server import PostgresServer, postgres_server, postgres_url  # noqa: F401  (fixtures)

DECISION = SamplingDecision(True, "probabilistic", 0.5)
REPO_ROOT = Path(__file__).resolve().parents[2]


def store(url: str, replica: str, telemetry: WriterTelemetry | None = None, **overrides: Any) -> PostgresStore:
    config = StoreConfig.model_validate({"url": url, "flush_interval_seconds": 0.02, "backlog_flush_seconds": 0.02,
                                         "timeout_seconds": 2, **overrides})
    return PostgresStore(config, telemetry or WriterTelemetry(), replica_id=replica)


async def stop(*stores: PostgresStore) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    await asyncio.gather(*(s.shutdown(deadline) for s in stores))


async def scalar(url: str, sql: str) -> Any:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(sql)).fetchone()  # type: ignore[arg-type]
        return row[0] if row else None


def count_is(s: PostgresStore, n: int) -> Any:
    async def check() -> bool:
        return await s.count() == n
    return check


async def test_replicas_starting_together_migrate_once(postgres_url: str) -> None:
    replicas = [store(postgres_url, f"r{i}") for i in range(4)]
    await asyncio.gather(*(r.start() for r in replicas))
    try:
        assert all(r.ready for r in replicas)
        assert await scalar(postgres_url, "SELECT count(*) FROM rag_monitor_schema") == 1
        assert await scalar(postgres_url, "SELECT version FROM rag_monitor_schema") == SCHEMA_VERSION
        for i, r in enumerate(replicas):
            r.consume_result(result(quality("fluency", 1 + i)))
        await until(count_is(replicas[0], 4))
        # Every replica reads the fleet's results.
        assert {e.value for e in await replicas[3].evaluations()} == {1.0, 2.0, 3.0, 4.0}
        # Types as declared for PostgreSQL.
        assert await scalar(postgres_url, "SELECT data_type FROM information_schema.columns "
                                          "WHERE table_name = 'scores' AND column_name = 'value'") == "double precision"
        assert await scalar(postgres_url, "SELECT is_identity FROM information_schema.columns "
                                          "WHERE table_name = 'results' AND column_name = 'id'") == "YES"
    finally:
        await stop(*replicas)


async def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    first = store(postgres_url, "a")
    await first.start()
    await stop(first)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("UPDATE rag_monitor_schema SET version = 99")
    with pytest.raises(StoreOpenError, match="schema version 99"):
        await store(postgres_url, "b").start()


async def test_a_dead_replicas_backlog_is_claimed_once_by_one_of_many(postgres_url: str) -> None:
    lease = 1.0
    dead = store(postgres_url, "dead", lease_seconds=lease)
    await dead.start()
    turns = [result(quality("fluency", 3)).turn for _ in range(30)]
    for turn in turns:
        assert dead.defer(turn, DECISION)

    async def all_deferred() -> bool:
        return await dead.backlog_size() == len(turns)

    await until(all_deferred)
    await stop(dead)  # from the database's side a dead replica: its rows stay claimed, nobody renews them

    telemetry = WriterTelemetry()
    claimers = [store(postgres_url, f"live-{i}", telemetry, lease_seconds=lease) for i in range(3)]
    await asyncio.gather(*(c.start() for c in claimers))
    try:
        assert [await c.claim_expired(100) for c in claimers] == [[], [], []]  # the lease still runs
        claimed: dict[str, list[str]] = {c._replica: [] for c in claimers}

        async def claim(c: PostgresStore) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            while sum(map(len, claimed.values())) < len(turns) and loop.time() < deadline:
                for _, turn, decision in await c.claim_expired(4):
                    assert decision == DECISION
                    claimed[c._replica].append(turn.trace_id)
                    c.consume_result(EvaluationResult(turn, (quality("fluency", 4),), decision.weight, decision.policy))
                await asyncio.sleep(0.01)

        await asyncio.gather(*(claim(c) for c in claimers))
        every = [t for ids in claimed.values() for t in ids]
        assert Counter(every) == Counter(t.trace_id for t in turns)  # each exactly once
        await until(count_is(claimers[0], len(turns)))  # evaluated, stored, and gone from the backlog
        assert await scalar(postgres_url, "SELECT count(*) FROM pending") == 0
        assert telemetry.write_failed == 0
    finally:
        await stop(*claimers)


async def test_a_live_replica_keeps_its_leases(postgres_url: str) -> None:
    owner, other = store(postgres_url, "owner", lease_seconds=0.6), store(postgres_url, "other", lease_seconds=0.6)
    await asyncio.gather(owner.start(), other.start())
    try:
        turn = result(quality("fluency", 3)).turn
        owner.defer(turn, DECISION)

        async def deferred() -> bool:
            return await owner.backlog_size() == 1

        await until(deferred)
        first = await scalar(postgres_url, "SELECT lease_until FROM pending")

        async def renewed() -> bool:
            return bool(await scalar(postgres_url, "SELECT lease_until FROM pending") > first)

        await until(renewed)  # renewed every lease/3, so never expired while the owner lives
        assert await other.claim_expired(10) == []
        assert await owner.claim_expired(10) == []  # its own rows are in its queue already
        assert [t.trace_id for _, t, _ in await owner.load_backlog(0, 10)] == [turn.trace_id]
    finally:
        await stop(owner, other)


async def test_postgres_stopped_and_restarted_mid_run_loses_nothing(
        postgres_server: PostgresServer, postgres_url: str, caplog: pytest.LogCaptureFixture) -> None:
    telemetry = WriterTelemetry()
    s = store(postgres_url, "r1", telemetry)
    await s.start()
    try:
        before = [result(quality("fluency", 4)) for _ in range(20)]
        for r in before:
            s.consume_result(r)
        await until(count_is(s, 20))

        await asyncio.to_thread(postgres_server.stop)
        during = [result(quality("relevance", 2)) for _ in range(50)]
        caplog.set_level(logging.WARNING, logger="exporters.store_postgres")
        for r in during:
            s.defer(r.turn, DECISION)
            s.consume_result(r)
        waiting = result(quality("coherence", 3))
        s.defer(waiting.turn, DECISION)  # deferred while down, never evaluated: must reach the backlog

        async def spilled() -> bool:
            return s.spilled >= len(during) + 1 and not s.ready

        await until(spilled)
        with pytest.raises(Exception):
            await s.count()  # reads fail while it is down (the API answers 503)

        await asyncio.to_thread(postgres_server.start)

        async def back() -> bool:
            return s.ready

        await until(back, timeout=30)
        await until(count_is(s, 70))
        assert s.spilled == 0 and s.ready
        assert [t.trace_id for _, t, _ in await s.load_backlog(0, 100)] == [waiting.turn.trace_id]
        assert telemetry.value(STORE_SPILL, event="dropped") == 0
        assert telemetry.value(STORE_SPILL, event="written") == telemetry.value(STORE_SPILL, event="spilled") > 0
        assert telemetry.write_failed == 0 and telemetry.dropped == Counter()
        down_logs = [r for r in caplog.records if "unreachable" in r.getMessage()]
        assert 1 <= len(down_logs) <= 3  # once per cause, not per batch
    finally:
        await stop(s)


async def test_starting_while_postgres_is_down_does_not_fail(postgres_server: PostgresServer,
                                                            postgres_url: str) -> None:
    await asyncio.to_thread(postgres_server.stop)
    telemetry = WriterTelemetry()
    s = store(postgres_url, "r1", telemetry)
    try:
        await s.start()  # does not raise: keeps connecting in the background
        assert not s.ready
        s.consume_result(result(quality("fluency", 4)))
        deferred = result(quality("fluency", 2)).turn
        assert s.defer(deferred, DECISION)

        async def spilled() -> bool:
            return s.spilled == 2

        await until(spilled)
        await asyncio.to_thread(postgres_server.start)

        async def ready() -> bool:
            return s.ready

        await until(ready, timeout=30)  # reads fail until then: the tables may not even exist yet
        await until(count_is(s, 1))
        assert [t.trace_id for _, t, _ in await s.load_backlog(0, 10)] == [deferred.trace_id]
        assert telemetry.write_failed == 0
    finally:
        await stop(s)


async def test_the_spill_is_bounded_and_counts_what_it_drops(postgres_server: PostgresServer) -> None:
    telemetry = WriterTelemetry()
    # Nothing listens there: the store never comes up.
    unreachable = postgres_server.dsn("nothing").replace(f":{postgres_server.port}/", ":1/")
    s = store(unreachable, "r1", telemetry, spill_max_items=5, batch_size=1, timeout_seconds=1)
    await s.start()
    try:
        for _ in range(12):
            s.consume_result(result(quality("fluency", 4)))

        async def settled() -> bool:
            return s.queue_depth == 0 and telemetry.value(STORE_SPILL, event="spilled") == 12

        await until(settled)
        assert s.spilled == 5
        assert telemetry.value(STORE_SPILL, event="dropped") == 7
        assert telemetry.value(STORE_WRITE_FAILURES) == 7
    finally:
        await stop(s)
    # At shutdown what could not be written is dropped and counted too, never hidden.
    assert telemetry.value(STORE_SPILL, event="dropped") == 12 and telemetry.write_failed == 12
    assert telemetry.value(BACKLOG, event="not_persisted") == 0


async def test_a_released_claim_goes_to_the_next_claimer(postgres_url: str) -> None:
    dead = store(postgres_url, "dead", lease_seconds=0.3)
    await dead.start()
    turn = result(quality("fluency", 3)).turn
    dead.defer(turn, DECISION)

    async def deferred() -> bool:
        return await dead.backlog_size() == 1

    await until(deferred)
    await stop(dead)
    first, second = store(postgres_url, "first"), store(postgres_url, "second")
    await asyncio.gather(first.start(), second.start())
    try:
        claimed: list[Any] = []

        async def claimed_by_first() -> bool:
            claimed.extend(await first.claim_expired(10))
            return bool(claimed)

        await until(claimed_by_first)
        assert await second.claim_expired(10) == []  # first's lease runs now
        await first.release([seq for seq, _, _ in claimed])  # no room after all
        ((_, again, _),) = await second.claim_expired(10)
        assert again.trace_id == turn.trace_id and await second.backlog_size() == 1
    finally:
        await stop(first, second)


_DOOMED_REPLICA = """
import asyncio, sys
from exporters.config import StoreConfig
from exporters.store_postgres import PostgresStore
from monitor.model import SamplingDecision, Turn
from monitor.telemetry import NullTelemetry

async def main(url: str, n: int) -> None:
    store = PostgresStore(StoreConfig(url=url, backlog_flush_seconds=0.02, lease_seconds=1.0), NullTelemetry(),
                          replica_id="doomed")
    await store.start()
    for i in range(n):
        store.defer(Turn(f"{i:032x}", f"conv-{i}", f"question {i}", "answer"), SamplingDecision(True, "p", 0.5))
    while await store.backlog_size() < n:
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_a_replica_killed_with_9_has_its_backlog_finished_once_by_the_others(postgres_url: str) -> None:
    n = 20
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _DOOMED_REPLICA, postgres_url, str(n), cwd=str(REPO_ROOT),
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), 30) == b"ready\n"
        child.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), 10) == -signal.SIGKILL
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()

    telemetry = WriterTelemetry()
    others = [store(postgres_url, f"survivor-{i}", telemetry) for i in range(2)]
    await asyncio.gather(*(o.start() for o in others))
    try:
        claimed: list[str] = []

        async def finish(o: PostgresStore) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while len(claimed) < n and loop.time() < deadline:
                for _, turn, decision in await o.claim_expired(3):
                    claimed.append(turn.trace_id)
                    o.consume_result(EvaluationResult(turn, (quality("fluency", 4),), decision.weight,
                                                      decision.policy))
                await asyncio.sleep(0.02)

        await asyncio.gather(*(finish(o) for o in others))
        assert sorted(claimed) == [f"{i:032x}" for i in range(n)]  # every turn, once
        await until(count_is(others[0], n))
        assert await scalar(postgres_url, "SELECT count(*) FROM pending") == 0
        assert telemetry.value(STORE_DUPLICATE_RESULTS) == 0
    finally:
        await stop(*others)
