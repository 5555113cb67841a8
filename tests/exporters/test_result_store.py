"""ResultStore on real SQLite files: round trip, ordering, restart, kill -9, retention, bounds."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable

import pytest

from exporters.config import StoreConfig
from exporters.result_store import HIGHER_IS_WORSE, MAX_QUERY_ROWS, ResultStore, StoreOpenError
from monitor.model import EvaluationResult, Score, ScoreStatus
from tests.exporters.results import WriterTelemetry
from tests.exporters.results import result as build_result
from tests.support.store_writer import SCORES_PER_RESULT

REPO_ROOT = Path(__file__).resolve().parents[2]
TURN_START = 1_699_999_999_000_000_000  # not the default 0, so the round trip shows


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def quality(metric: str, value: float, *, threshold: float = 3.0, reason: str | None = None) -> Score:
    return Score(metric, value, (1.0, 5.0), defect=value < threshold, reason=reason)


def severity(metric: str, value: int, *, level: int = 4) -> Score:
    return Score(metric, float(value), (0.0, 7.0), defect=value >= level, label=f"sev{value}")


def result(*scores: Score, question: str = "What is the refund window?", answer: str = "30 days.",
           labels: dict[str, str] | None = None, request_model: str | None = None,
           response_model: str | None = None, weight: float = 1.0) -> EvaluationResult:
    return build_result(*scores, weight=weight, policy="probabilistic", question=question, answer=answer,
                        service="shop", labels=labels, model=response_model, request_model=request_model,
                        start_time_unix_nano=TURN_START)


def config(path: Path, **overrides: object) -> StoreConfig:
    fields: dict[str, object] = {"path": str(path), "flush_interval_seconds": 0.02, **overrides}
    return StoreConfig.model_validate(fields)


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Poll ``condition`` until true; fails the test at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await condition():
        if loop.time() > deadline:
            pytest.fail("condition not met before the deadline")
        await asyncio.sleep(0.01)


async def stop(store: ResultStore) -> None:
    await store.shutdown(asyncio.get_running_loop().time() + 10)


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[ResultStore, Clock, WriterTelemetry]]:
    clock, telemetry = Clock(), WriterTelemetry()
    store = ResultStore(config(tmp_path / "results.sqlite3", max_text_chars=40), telemetry, clock)
    await store.start()
    yield store, clock, telemetry
    await stop(store)


async def test_round_trip_filters_and_newest_first(running: tuple[ResultStore, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    first = result(quality("groundedness", 2), quality("relevance", 5), labels={"route": "/a"},
                   request_model="gpt-x", response_model="gpt-x-2024")
    store.consume_result(first)
    clock.now += 10
    second = result(quality("groundedness", 4, reason="fine"),
                    Score("relevance", None, (1.0, 5.0), status=ScoreStatus.ERROR, error_type="timeout"),
                    request_model="gpt-y", weight=4.0)
    store.consume_result(second)
    await until(lambda: _count_is(store, 4))

    everything = await store.evaluations()
    assert [(e.trace_id, e.metric) for e in everything] == [
        (second.turn.trace_id, "relevance"), (second.turn.trace_id, "groundedness"),
        (first.turn.trace_id, "relevance"), (first.turn.trace_id, "groundedness")]
    assert [e.id for e in everything] == sorted((e.id for e in everything), reverse=True)

    grounded = await store.evaluations(metric="groundedness")
    assert [(e.value, e.outcome, e.reason) for e in grounded] == [(4.0, "pass", "fine"), (2.0, "defect", None)]
    assert [e.metric for e in await store.evaluations(outcome="error")] == ["relevance"]
    assert [e.trace_id for e in await store.evaluations(since=clock.now)] == [second.turn.trace_id] * 2
    assert [e.metric for e in await store.evaluations(metric="relevance", outcome="pass")] == ["relevance"]
    assert len(await store.evaluations(limit=3)) == 3
    assert await store.evaluations(metric="nope") == []

    err = (await store.evaluations(outcome="error"))[0]
    assert (err.status, err.value, err.error_type, err.scale, err.weight) == ("error", None, "timeout", (1.0, 5.0), 4.0)
    old = grounded[1]
    assert old.labels == {"route": "/a", "model": "gpt-x-2024"}  # the response model wins
    assert err.labels == {"model": "gpt-y"}
    assert (old.timestamp, err.timestamp) == (clock.now - 10, clock.now)
    assert (old.conversation_id, old.service, old.span_id) == (first.turn.conversation_id, "shop",
                                                               first.turn.chat_span_id)
    assert (old.sampling_policy, old.turn_start_unix_nano) == ("probabilistic", first.turn.start_time_unix_nano)
    assert (old.question, old.answer) == ("What is the refund window?", "30 days.")


async def _count_is(store: ResultStore, n: int) -> bool:
    return await store.count() == n


async def test_long_text_is_cut_and_model_label_does_not_override(
        running: tuple[ResultStore, Clock, WriterTelemetry]) -> None:
    store, _, _ = running
    store.consume_result(result(quality("coherence", 1, reason="r" * 100), question="q" * 100, answer="a" * 41,
                                labels={"model": "from-labels"}, response_model="from-span"))
    await until(lambda: _count_is(store, 1))
    (row,) = await store.evaluations()
    for text, char in ((row.question, "q"), (row.answer, "a"), (row.reason, "r")):
        assert text is not None and len(text) == 40 and text == char * 39 + "…"
    assert row.labels == {"model": "from-labels"}


async def test_worst_recent_orders_defects_then_badness_newest_first(
        running: tuple[ResultStore, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    store.consume_result(result(quality("groundedness", 1)))          # too old for `since`
    clock.now += 100
    since = clock.now
    store.consume_result(result(quality("groundedness", 2), severity("violence", 7)))
    clock.now += 1
    store.consume_result(result(quality("relevance", 2), severity("violence", 5), severity("sexual", 1),
                                Score("coherence", None, (1.0, 5.0), status=ScoreStatus.SKIPPED, reason="no answer")))
    clock.now += 1
    store.consume_result(result(quality("fluency", 5), quality("coherence", 4)))
    await until(lambda: _count_is(store, 9))

    worst = await store.worst_recent(since=since)
    # Goodness: violence 7 → 0, relevance 2 / groundedness 2 → 0.25 (newest first), violence 5 → 2/7;
    # then the passes: coherence 4 → 0.75, sexual 1 → 6/7, fluency 5 → 1. Skipped rows are not scores.
    assert [(w.metric, w.value) for w in worst] == [
        ("violence", 7.0), ("relevance", 2.0), ("groundedness", 2.0), ("violence", 5.0),
        ("coherence", 4.0), ("sexual", 1.0), ("fluency", 5.0)]
    assert [w.metric for w in await store.worst_recent(since=since, limit=2)] == ["violence", "relevance"]


async def test_limit_is_capped(running: tuple[ResultStore, Clock, WriterTelemetry]) -> None:
    store, _, _ = running
    for _ in range(MAX_QUERY_ROWS + 5):
        store.consume_result(result(quality("fluency", 3)))
    await until(lambda: _count_is(store, MAX_QUERY_ROWS + 5))
    assert len(await store.evaluations(limit=10_000)) == MAX_QUERY_ROWS
    assert len(await store.worst_recent(since=0, limit=10_000)) == MAX_QUERY_ROWS
    assert await store.evaluations(limit=0) == []


async def test_scores_since_gives_rolling_window_rows_oldest_first(
        running: tuple[ResultStore, Clock, WriterTelemetry]) -> None:
    store, clock, _ = running
    store.consume_result(result(quality("groundedness", 1)))
    clock.now += 60
    store.consume_result(result(quality("groundedness", 2), weight=3.0))
    clock.now += 60
    store.consume_result(result(quality("relevance", 5), Score("coherence", None, (1.0, 5.0), status="error",
                                                               error_type="timeout"), weight=0.5))
    await until(lambda: _count_is(store, 4))
    rows = await store.scores_since(clock.now - 60)
    assert rows == [
        (clock.now - 60, "groundedness", "shop", "defect", 3.0, 2.0),
        (clock.now, "relevance", "shop", "pass", 0.5, 5.0),
        (clock.now, "coherence", "shop", "error", 0.5, None),
    ]
    assert len(await store.scores_since(0)) == 4
    assert await store.scores_since(clock.now + 1) == []


async def test_restart_keeps_everything(tmp_path: Path) -> None:
    path, telemetry = tmp_path / "results.sqlite3", WriterTelemetry()
    store = ResultStore(config(path), telemetry)
    await store.start()
    for i in range(50):
        store.consume_result(result(quality("groundedness", 1 + i % 5), quality("relevance", 3)))
    await stop(store)  # drains the queue before closing
    await stop(store)  # safe twice
    again = ResultStore(config(path), telemetry)
    await again.start()
    try:
        assert await again.count() == 100
        assert len(await again.evaluations(metric="relevance", limit=1000)) == 50
        again.consume_result(result(quality("fluency", 5)))
        await until(lambda: _count_is(again, 101))
    finally:
        await stop(again)
    assert telemetry.dropped == Counter() and telemetry.write_failed == 0
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental


async def test_same_instance_restarts(tmp_path: Path) -> None:
    store = ResultStore(config(tmp_path / "r.sqlite3"), WriterTelemetry())
    await stop(store)  # shutdown without start is a no-op
    await store.start()
    await stop(store)
    await store.start()
    store.consume_result(result(quality("fluency", 4)))
    await until(lambda: _count_is(store, 1))
    await stop(store)


async def test_kill_9_during_writes_leaves_a_consistent_queryable_database(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite3"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.store_writer", str(path), cwd=str(REPO_ROOT),
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), 20) == b"ready\n"

        def committed() -> int:
            with closing(sqlite3.connect(path, timeout=5)) as conn:
                return int(conn.execute("SELECT count(*) FROM scores").fetchone()[0])

        async def enough() -> bool:
            return await asyncio.to_thread(committed) >= 1500

        await until(enough, timeout=30)
        visible = await asyncio.to_thread(committed)
        child.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), 10) == -signal.SIGKILL
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()

    store = ResultStore(config(path), WriterTelemetry())
    await store.start()  # recovers the WAL; must not fail
    try:
        total = await store.count()
        assert total >= visible
        assert total % SCORES_PER_RESULT == 0
        newest = await store.evaluations(limit=5)
        assert len(newest) == 5 and all(e.service == "writer" for e in newest)
        store.consume_result(result(quality("fluency", 5)))
        await until(lambda: _count_is(store, total + 1))
    finally:
        await stop(store)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        partial = conn.execute("SELECT r.id, count(s.id) FROM results r LEFT JOIN scores s ON s.result_id = r.id "
                               "WHERE r.service = 'writer' GROUP BY r.id HAVING count(s.id) != ?",
                               (SCORES_PER_RESULT,)).fetchall()
        assert partial == []


async def test_age_retention_at_start_and_periodically(tmp_path: Path) -> None:
    path, clock = tmp_path / "r.sqlite3", Clock()
    store = ResultStore(config(path, max_age_hours=1), WriterTelemetry(), clock)
    await store.start()
    old = [result(quality("groundedness", 2)) for _ in range(3)]
    for r in old:
        store.consume_result(r)
    clock.now += 1800
    fresh = result(quality("groundedness", 5))
    store.consume_result(fresh)
    await stop(store)

    clock.now += 1801  # the first three are now older than an hour, the last one is not
    store = ResultStore(config(path, max_age_hours=1), WriterTelemetry(), clock)
    await store.start()
    try:
        assert [e.trace_id for e in await store.evaluations()] == [fresh.turn.trace_id]
    finally:
        await stop(store)

    store = ResultStore(config(path, max_age_hours=1), WriterTelemetry(), clock, retention_interval_seconds=0.05)
    await store.start()
    try:
        newer = result(quality("relevance", 4))
        store.consume_result(newer)
        await until(lambda: _count_is(store, 2))
        clock.now += 1800  # `fresh` is past the hour now; the periodic pass removes it
        await until(lambda: _count_is(store, 1))
        assert [e.trace_id for e in await store.evaluations()] == [newer.turn.trace_id]
    finally:
        await stop(store)


async def test_size_retention_removes_the_oldest_and_keeps_the_newest(tmp_path: Path) -> None:
    path, max_bytes = tmp_path / "r.sqlite3", 256 * 1024
    store = ResultStore(config(path, max_bytes=max_bytes, max_text_chars=4000, batch_size=20), WriterTelemetry())
    await store.start()
    results = [result(quality("groundedness", 3), quality("relevance", 4), question=f"{i} " + "q" * 2000,
                      answer="a" * 1000) for i in range(600)]  # ~1.8 MB of text
    for r in results:
        store.consume_result(r)
    await stop(store)

    with closing(sqlite3.connect(path)) as conn:
        pages, free, page_size = (conn.execute(f"PRAGMA {p}").fetchone()[0]
                                  for p in ("page_count", "freelist_count", "page_size"))
        assert (pages - free) * page_size <= max_bytes
        assert free * page_size < 64 * 1024  # freed pages went back to the file system
        kept = [row[0] for row in conn.execute("SELECT trace_id FROM results ORDER BY id")]
    assert 10 < len(kept) < 200
    assert kept == [r.turn.trace_id for r in results[-len(kept):]]  # a suffix: the newest survive
    assert path.stat().st_size <= max_bytes * 1.1


async def test_full_queue_drops_and_counts_without_raising(tmp_path: Path) -> None:
    telemetry = WriterTelemetry()
    store = ResultStore(config(tmp_path / "r.sqlite3", queue_size=5), telemetry)
    await store.start()
    for _ in range(100):  # no await in between: the writer cannot drain meanwhile
        store.consume_result(result(quality("fluency", 4), quality("coherence", 4)))
    assert store.queue_depth == 5
    assert telemetry.dropped == Counter({"store": 95})
    await stop(store)
    assert store.queue_depth == 0
    store.consume_result(result(quality("fluency", 4)))  # after shutdown: refused and counted
    assert telemetry.dropped == Counter({"store": 96})
    again = ResultStore(config(tmp_path / "r.sqlite3"), telemetry)
    await again.start()
    try:
        assert await again.count() == 10
    finally:
        await stop(again)


async def test_write_failures_are_counted_and_the_writer_keeps_going(tmp_path: Path) -> None:
    path, telemetry = tmp_path / "r.sqlite3", WriterTelemetry()
    store = ResultStore(config(path), telemetry)
    await store.start()
    try:
        with closing(sqlite3.connect(path)) as conn:  # a real SQLite failure for every insert from now on
            conn.execute("DROP TABLE scores")
        for _ in range(3):
            store.consume_result(result(quality("fluency", 4)))

        async def failed() -> bool:
            return telemetry.write_failed == 3

        await until(failed)
        store.consume_result(result(quality("fluency", 4)))

        async def failed_again() -> bool:
            return telemetry.write_failed == 4

        await until(failed_again)
    finally:
        await stop(store)


@pytest.mark.parametrize("layout", ["parent_is_a_file", "not_a_database"])
async def test_unusable_path_fails_start_naming_the_key(tmp_path: Path, layout: str) -> None:
    blocker = tmp_path / "blocker"
    if layout == "parent_is_a_file":
        blocker.write_text("a file, not a directory")
        path = blocker / "results.sqlite3"
    else:
        path = blocker
        path.write_bytes(b"this is not an SQLite database" * 100)
    store = ResultStore(config(path), WriterTelemetry())
    with pytest.raises(StoreOpenError, match=r"exporters\.store\.path") as caught:
        await store.start()
    assert isinstance(caught.value, OSError)  # `rag-monitor serve` reports OSErrors as start failures
    await stop(store)  # nothing running: a no-op


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version=99")
    with pytest.raises(StoreOpenError, match="schema version 99"):
        await ResultStore(config(path), WriterTelemetry()).start()


def test_higher_is_worse_matches_the_catalogue() -> None:
    from monitor.evaluation.registry import default_registry

    registry = default_registry()
    assert HIGHER_IS_WORSE == {m for m in registry.ids() if registry.aggregation(m) == "max"}
