"""The result store's contract on both engines, each real: the SQLite file and a PostgreSQL
server (tests.support.postgres_server). Round trip, filters, orderings, caps, the id cursor,
exactly-once writes, retention, restart, and the factory that picks the engine."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import AsyncIterator, Callable

import pytest

from exporters.config import StoreConfig
from exporters.result_store import MAX_QUERY_ROWS, STORE_DUPLICATE_RESULTS, ResultStore
from exporters.store_factory import Store, build_store
from exporters.store_postgres import PostgresStore
from exporters.store_schema import SCHEMA_VERSION
from monitor.model import SamplingDecision, Score, ScoreStatus
from tests.exporters.results import WriterTelemetry
from tests.exporters.test_result_store import Clock, quality, result, severity, stop, until
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)

MakeStore = Callable[..., Store]


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """``make(telemetry, clock, **config overrides)``: a store on one database per test."""
    if request.param == "sqlite":
        target = {"path": str(tmp_path / "results.sqlite3")}
    else:
        target = {"url": request.getfixturevalue("postgres_url")}

    def make(telemetry: WriterTelemetry, clock: Clock | None = None, *, replica_id: str = "replica-1",
             **overrides: object) -> Store:
        config = StoreConfig.model_validate({**target, "flush_interval_seconds": 0.02, **overrides})
        return build_store(config, telemetry, replica_id=replica_id, clock=clock or Clock())

    return make


@pytest.fixture
async def running(make_store: MakeStore) -> AsyncIterator[tuple[Store, Clock, WriterTelemetry]]:
    clock, telemetry = Clock(), WriterTelemetry()
    store = make_store(telemetry, clock, max_text_chars=40)
    await store.start()
    yield store, clock, telemetry
    await stop(store)  # type: ignore[arg-type]


def count_is(store: Store, n: int) -> Callable[[], object]:
    async def check() -> bool:
        return await store.count() == n
    return check


async def test_round_trip_filters_and_newest_first(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    first = result(quality("groundedness", 2), quality("relevance", 5), labels={"route": "/a"},
                   request_model="gpt-x", response_model="gpt-x-2024")
    store.consume_result(first)
    clock.now += 10
    second = result(quality("groundedness", 4, reason="fine"),
                    Score("relevance", None, (1.0, 5.0), status=ScoreStatus.ERROR, error_type="timeout"),
                    request_model="gpt-y", weight=4.0)
    store.consume_result(second)
    await until(count_is(store, 4))  # type: ignore[arg-type]

    everything = await store.evaluations()
    assert [e.trace_id for e in everything] == [second.turn.trace_id] * 2 + [first.turn.trace_id] * 2
    grounded = await store.evaluations(metric="groundedness")
    assert [(e.value, e.outcome, e.reason) for e in grounded] == [(4.0, "pass", "fine"), (2.0, "defect", None)]
    assert [e.metric for e in await store.evaluations(outcome="error")] == ["relevance"]
    assert [e.trace_id for e in await store.evaluations(since=clock.now)] == [second.turn.trace_id] * 2
    assert len(await store.evaluations(limit=3)) == 3
    err = (await store.evaluations(outcome="error"))[0]
    assert (err.status, err.value, err.error_type, err.scale, err.weight) == ("error", None, "timeout", (1.0, 5.0), 4.0)
    old = grounded[1]
    assert old.labels == {"route": "/a", "model": "gpt-x-2024"}
    assert (old.timestamp, err.timestamp) == (clock.now - 10, clock.now)
    assert (old.sampling_policy, old.turn_start_unix_nano) == ("probabilistic", first.turn.start_time_unix_nano)
    assert (old.question, old.answer, old.span_id) == ("What is the refund window?", "30 days.",
                                                       first.turn.chat_span_id)


async def test_worst_recent_worst_turns_and_reasons(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    store.consume_result(result(quality("groundedness", 1)))  # too old for `since`
    clock.now += 100
    since = clock.now
    store.consume_result(result(quality("groundedness", 2), severity("violence", 7)))
    clock.now += 1
    store.consume_result(result(quality("relevance", 2), severity("violence", 5), severity("sexual", 1),
                                Score("coherence", None, (1.0, 5.0), status=ScoreStatus.SKIPPED, reason="no answer")))
    clock.now += 1
    store.consume_result(result(quality("fluency", 5), quality("coherence", 4)))
    await until(count_is(store, 9))  # type: ignore[arg-type]

    worst = await store.worst_recent(since=since)
    assert [(w.metric, w.value) for w in worst] == [
        ("violence", 7.0), ("relevance", 2.0), ("groundedness", 2.0), ("violence", 5.0),
        ("coherence", 4.0), ("sexual", 1.0), ("fluency", 5.0)]
    turns = await store.worst_turns(since=since)
    assert [[s.metric for s in t.scores] for t in turns] == [
        ["violence", "groundedness"], ["relevance", "violence", "sexual", "coherence"], ["coherence", "fluency"]]
    assert [t.trace_id for t in await store.worst_turns(since=since, metric="relevance")] == [turns[1].trace_id]
    (reason,) = await store.outcome_reasons(since=since)
    assert (reason.metric, reason.outcome, reason.key, reason.count) == ("coherence", "skipped", "no answer", 1)


async def test_limits_are_capped_and_text_is_cut(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, _, _ = running
    store.consume_result(result(quality("coherence", 1, reason="r" * 100), question="q" * 100))
    for _ in range(MAX_QUERY_ROWS + 4):
        store.consume_result(result(quality("fluency", 3)))
    await until(count_is(store, MAX_QUERY_ROWS + 5))  # type: ignore[arg-type]
    assert len(await store.evaluations(limit=10_000)) == MAX_QUERY_ROWS
    assert len(await store.worst_recent(since=0, limit=10_000)) == MAX_QUERY_ROWS
    assert await store.evaluations(limit=0) == []
    (cut,) = await store.evaluations(metric="coherence")
    assert cut.question == "q" * 39 + "…" and cut.reason == "r" * 39 + "…"


async def test_scores_since_and_the_id_cursor(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    store.consume_result(result(quality("groundedness", 1)))
    clock.now += 60
    store.consume_result(result(quality("groundedness", 2), weight=3.0))
    clock.now += 60
    store.consume_result(result(quality("relevance", 5), Score("coherence", None, (1.0, 5.0), status="error",
                                                               error_type="timeout"), weight=0.5))
    await until(count_is(store, 4))  # type: ignore[arg-type]
    assert await store.scores_since(clock.now - 60) == [
        (clock.now - 60, "groundedness", "shop", "defect", 3.0, 2.0),
        (clock.now, "relevance", "shop", "pass", 0.5, 5.0),
        (clock.now, "coherence", "shop", "error", 0.5, None)]

    everything = await store.scores_after(0, 100)
    ids = [row[0] for row in everything]
    assert ids == sorted(ids) and len(ids) == 4
    assert [row[1:] for row in everything[:2]] == [(clock.now - 120, "groundedness", "shop", "defect", 1.0, 1.0),
                                                   (clock.now - 60, "groundedness", "shop", "defect", 3.0, 2.0)]
    assert await store.scores_after(ids[1], 1) == [everything[2]]
    assert await store.scores_after(ids[-1], 100) == []
    assert await store.first_score_id_since(clock.now - 60) == ids[1]
    assert await store.first_score_id_since(clock.now + 1) == ids[-1] + 1
    store.consume_result(result(quality("fluency", 4)))
    await until(count_is(store, 5))  # type: ignore[arg-type]
    (newer,) = await store.scores_after(ids[-1], 100)
    assert newer[0] > ids[-1] and newer[2] == "fluency"


async def test_a_turn_stored_twice_is_kept_once_and_counted(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, _, telemetry = running
    first = result(quality("groundedness", 2), quality("relevance", 4))
    store.consume_result(first)
    await until(count_is(store, 2))  # type: ignore[arg-type]
    # Evaluated again (a crash before the backlog row went, a hand-over): same trace, other scores.
    again = type(first)(first.turn, (quality("groundedness", 5), quality("fluency", 5)), 1.0, "probabilistic")
    store.consume_result(again)
    store.consume_result(result(quality("fluency", 1)))
    await until(count_is(store, 3))  # type: ignore[arg-type]

    async def counted() -> bool:
        return telemetry.value(STORE_DUPLICATE_RESULTS) == 1

    await until(counted)
    assert sorted((e.metric, e.value) for e in await store.evaluations() if e.trace_id == first.turn.trace_id) == [
        ("groundedness", 2.0), ("relevance", 4.0)]
    assert telemetry.write_failed == 0


async def test_backlog_leaves_with_the_result(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, _, _ = running
    kept, evaluated = result(quality("fluency", 4)), result(quality("fluency", 3))
    assert store.defer(kept.turn, _decision()) and store.defer(evaluated.turn, _decision())

    async def size_is(n: int) -> bool:
        return await store.backlog_size() == n

    await until(lambda: size_is(2))
    store.consume_result(evaluated)
    await until(lambda: size_is(1))
    ceiling = await store.backlog_ceiling()
    ((seq, turn, decision),) = await store.load_backlog(0, 10)
    assert (seq, turn, decision) == (ceiling, kept.turn, _decision())
    assert await store.claim_expired(10) == []  # nobody else's lease ran out
    store.forget(kept.turn.trace_id)
    await until(lambda: size_is(0))


def _decision() -> SamplingDecision:
    return SamplingDecision(True, "probabilistic", 0.25)


async def test_restart_keeps_everything_and_age_retention_applies(make_store: MakeStore) -> None:
    clock, telemetry = Clock(), WriterTelemetry()
    store = make_store(telemetry, clock, max_age_hours=1)
    await stop(store)  # type: ignore[arg-type]  # shutdown without start is a no-op
    await store.start()
    old = result(quality("groundedness", 2))
    store.consume_result(old)
    clock.now += 1800
    fresh = result(quality("groundedness", 5))
    store.consume_result(fresh)
    await stop(store)  # type: ignore[arg-type]  # drains the queue before closing
    await stop(store)  # type: ignore[arg-type]  # safe twice

    clock.now += 1801  # `old` is past the hour now: the next start's retention removes it
    again = make_store(telemetry, clock, max_age_hours=1)
    await again.start()
    try:
        await until(count_is(again, 1))  # type: ignore[arg-type]
        assert [e.trace_id for e in await again.evaluations()] == [fresh.turn.trace_id]
    finally:
        await stop(again)  # type: ignore[arg-type]
    assert telemetry.dropped == {} and telemetry.write_failed == 0


def test_the_factory_picks_the_engine(tmp_path: Path) -> None:
    telemetry = WriterTelemetry()
    sqlite = build_store(StoreConfig(url=f"sqlite:///{tmp_path}/r.sqlite3"), telemetry, replica_id="r")  # type: ignore[arg-type]
    assert isinstance(sqlite, ResultStore)
    assert isinstance(build_store(StoreConfig(path="x.sqlite3"), telemetry, replica_id="r"), ResultStore)
    pg = build_store(StoreConfig(url="postgresql://ragmon@127.0.0.1:1/db"), telemetry, replica_id="r")  # type: ignore[arg-type]
    assert isinstance(pg, PostgresStore)
    with pytest.raises(ValueError, match="replica_id"):
        build_store(StoreConfig(url="postgresql://ragmon@127.0.0.1:1/db"), telemetry, replica_id="")  # type: ignore[arg-type]



async def test_a_nul_character_does_not_cost_the_batch(running: tuple[Store, Clock, WriterTelemetry]) -> None:
    store, _, telemetry = running
    store.consume_result(result(quality("fluency", 4, reason="bad\x00reason"), question="q\x00"))
    store.consume_result(result(quality("fluency", 5)))
    await until(count_is(store, 2))  # type: ignore[arg-type]
    assert telemetry.write_failed == 0
    assert {e.question for e in await store.evaluations()} >= {"What is the refund window?"}


async def test_a_version_3_sqlite_file_with_duplicates_gains_the_unique_keys(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    config = StoreConfig(path=str(path), flush_interval_seconds=0.02)
    first = ResultStore(config, WriterTelemetry())
    await first.start()
    stored = result(quality("groundedness", 2), quality("relevance", 4))
    first.consume_result(stored)
    await until(count_is(first, 2))  # type: ignore[arg-type]
    await stop(first)
    with closing(sqlite3.connect(path)) as conn:  # the previous release's file, where a repeat was stored twice
        conn.executescript("DROP INDEX results_trace; DROP INDEX scores_result_metric; "
                           "CREATE INDEX scores_result ON scores(result_id);")
        conn.execute("INSERT INTO results (timestamp, trace_id, span_id, conversation_id, service, labels, weight, "
                     "sampling_policy, question, answer, turn_start_unix_nano, documents) SELECT timestamp, trace_id, "
                     "span_id, conversation_id, service, labels, weight, sampling_policy, question, answer, "
                     "turn_start_unix_nano, documents FROM results")
        conn.execute("INSERT INTO scores (result_id, timestamp, metric, outcome, value, scale_low, scale_high, "
                     "status) SELECT (SELECT max(id) FROM results), timestamp, metric, outcome, value, scale_low, "
                     "scale_high, status FROM scores")
        conn.execute("PRAGMA user_version=3")
        conn.commit()
    telemetry = WriterTelemetry()
    again = ResultStore(config, telemetry)
    await again.start()
    try:
        assert await again.count() == 2  # the first write kept, the repeat gone
        again.consume_result(stored)
        again.consume_result(result(quality("fluency", 5)))
        await until(count_is(again, 3))  # type: ignore[arg-type]
        assert telemetry.value(STORE_DUPLICATE_RESULTS) == 1
    finally:
        await stop(again)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
