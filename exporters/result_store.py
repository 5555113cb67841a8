"""SQLite result store: every evaluation result, kept for the JSON API, the status page and the
rolling windows' refill after a restart.

Two tables: ``results`` (one row per :class:`EvaluationResult`: the turn's ids, service, labels,
weight and text) and ``scores`` (one row per :class:`Score`, pointing at its result). Text lives
once per result however many metrics scored it; ``scores`` carries a copy of the result's
timestamp so that every filter (time, metric, outcome) and the retention run on an index alone.

Writes never touch the event loop: :meth:`ResultStore.consume_result` appends to a bounded deque,
a writer task takes batches (``batch_size`` or ``flush_interval_seconds``, whichever comes first)
and hands each one to a single writer thread with its own connection, one transaction per batch.
A batch is therefore atomic: after a crash a result is either there with all its scores or absent.
Reads run on a second thread with a read-only connection; WAL lets them proceed during writes.

A third table, ``pending``, is the evaluation backlog: every sampled turn is written there (in
the writer thread, every ``backlog_flush_seconds``) before it is evaluated, and deleted in the
same transaction that stores its result. Turns still pending at a restart — cut off by the
shutdown deadline or by a kill — are evaluated after the next start (:meth:`load_backlog`).

Retention: at start and every ``retention_interval_seconds`` rows older than ``max_age_hours``
go; after every batch, when the data pages exceed ``max_bytes`` the oldest results go in chunks
until the data is under 90% of it, and the freed pages are returned to the file system
(``auto_vacuum=INCREMENTAL``). The WAL is kept to about a tenth of ``max_bytes`` by the
checkpoint interval and ``journal_size_limit``, so the files together stay near ``max_bytes``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import sqlite3
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from exporters.batch_writer import Batch, BatchWriter
from exporters.config import StoreConfig
from exporters.store_queries import MAX_QUERY_ROWS, MAX_REFILL_ROWS, StoredEvaluation, StoreReads
from exporters.store_schema import INSERT_RESULT, INSERT_SCORE, MIGRATIONS, SCHEMA_VERSION, result_values, score_values
from monitor.model import EvaluationResult, SamplingDecision, Turn
from monitor.telemetry import BACKLOG, Telemetry, counter
from monitor.turn_codec import decode_pending, encode_pending

__all__ = ["STORE_WRITE_FAILURES", "STORE_DUPLICATE_RESULTS", "StoredEvaluation", "ResultStore", "StoreOpenError",
           "HIGHER_IS_WORSE", "MAX_QUERY_ROWS", "MAX_REFILL_ROWS"]

log = logging.getLogger(__name__)

# Metrics whose value grows with the risk (the catalogue's "max"-aggregated ones: severities and
# 0/1 risk flags). Everything else is a quality score where lower is worse.
HIGHER_IS_WORSE = frozenset({"hate_unfairness", "sexual", "violence", "self_harm", "jailbreak",
                             "local_jailbreak_attempt", "local_offensive_language", "local_system_prompt_leak"})

_DELETE_CHUNK = 5000
_SIZE_TARGET = 0.9


STORE_WRITE_FAILURES = counter(
    "rag_monitor_store_write_failures_total",
    "Results lost because the result store could not write them (disk full, I/O error).")
STORE_DUPLICATE_RESULTS = counter(
    "rag_monitor_store_duplicate_results_total",
    "Results not stored because the store already held one for the same trace (the turn was evaluated "
    "again: after a crash, a retried write or a backlog hand-over between replicas).")


def decode_backlog(rows: Sequence[Sequence[Any]], telemetry: Telemetry,
                   forget: Callable[[str], None]) -> list[tuple[int, Turn, SamplingDecision]]:
    """``(seq, turn, decision)`` of backlog rows ``(seq, trace_id, payload)``; a payload that cannot be
    read is counted (``invalid``), logged and forgotten. Shared by the SQLite and PostgreSQL stores."""
    out: list[tuple[int, Turn, SamplingDecision]] = []
    for seq, trace_id, payload in rows:
        try:
            turn, decision = decode_pending(payload)
        except ValueError as exc:
            log.warning("result store: backlog row %s is unreadable (%s); removed", seq, exc)
            telemetry.add(BACKLOG, 1, event="invalid")
            forget(trace_id)
            continue
        out.append((int(seq), turn, decision))
    return out


class StoreOpenError(OSError):
    """The database cannot be opened or created; the message names ``exporters.store.path``.
    An ``OSError`` so that ``rag-monitor serve`` reports it as a start failure."""


def _open_database(path: str, max_bytes: int) -> sqlite3.Connection:
    """The writer connection: file created if needed, WAL, schema at the current version."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        # Conversation text: this user only. SQLite gives the -wal and -shm files the database
        # file's permissions, so creating (or tightening) the file first covers all three.
        if path != ":memory:":
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(path, 0o600)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise StoreOpenError(f"exporters.store.path={path!r}: cannot open the result store: {exc}") from exc
    try:
        # Only takes effect before the first table exists, i.e. when the file is new.
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            log.warning("result store %s: journal mode %s (WAL unsupported here)", path, mode)
        # In WAL mode NORMAL syncs at checkpoints, not at every commit: a killed process loses
        # nothing committed (the WAL is in the OS cache) and a power cut may lose the last few
        # batches, never consistency. FULL would add an fsync per batch for no crash benefit.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=ON")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        wal_bytes = max(64 * 1024, max_bytes // 10)
        conn.execute(f"PRAGMA wal_autocheckpoint={max(16, min(1000, wal_bytes // page_size))}")
        conn.execute(f"PRAGMA journal_size_limit={wal_bytes}")
        _migrate(conn, path)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreOpenError(f"exporters.store.path={path!r}: cannot use the result store: {exc}") from exc
        raise
    return conn


_ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def _has_column(conn: sqlite3.Connection, statement: str) -> bool:
    """True for an ``ADD COLUMN`` of a column the table has (SQLite has no ``IF NOT EXISTS`` there)."""
    found = _ADD_COLUMN.match(statement)
    if found is None:
        return False
    table, column = found.groups()
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version not in MIGRATIONS:
        raise StoreOpenError(f"exporters.store.path={path!r}: schema version {version} is not {SCHEMA_VERSION} "
                             "(written by another rag-monitor version); use another path")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in MIGRATIONS[version]:
            if not _has_column(conn, statement):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# A backlog operation: ("add", trace id, (turn, decision), time) or ("forget", trace id, None, time).
PendingOp = tuple[str, str, "tuple[Turn, SamplingDecision] | None", float]


def _apply_pending(conn: sqlite3.Connection, ops: Sequence[PendingOp]) -> None:
    """Backlog inserts and deletes, in the caller's transaction, in the order they were made."""
    for op, trace_id, item, created in ops:
        if op == "add" and item is not None:
            conn.execute("INSERT OR REPLACE INTO pending (trace_id, created, payload) VALUES (?, ?, ?)",
                         (trace_id, created, encode_pending(*item)))
        else:
            conn.execute("DELETE FROM pending WHERE trace_id = ?", (trace_id,))


def _insert_batch(conn: sqlite3.Connection, batch: Sequence[tuple[float, EvaluationResult]], max_chars: int,
                  pending: Sequence[PendingOp] = ()) -> int:
    """Insert ``batch`` in one transaction (all of it or none), with the backlog operations made
    before it; a stored result's turn leaves the backlog in the same transaction. Returns the
    results skipped because their trace already had one (exactly once: the first write stays)."""
    duplicates = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        _apply_pending(conn, pending)
        conn.executemany("DELETE FROM pending WHERE trace_id = ?", [(r.turn.trace_id,) for _, r in batch])
        for timestamp, result in batch:
            cursor = conn.execute(INSERT_RESULT, result_values(timestamp, result, max_chars))
            if cursor.rowcount == 0:  # ON CONFLICT DO NOTHING: the trace's result is already stored
                duplicates += 1
                continue
            result_id = cursor.lastrowid
            assert result_id is not None  # an INSERT into a rowid table always sets it
            conn.executemany(INSERT_SCORE, [score_values(result_id, timestamp, score, max_chars)
                                            for score in result.scores])
        conn.execute("COMMIT")
        return duplicates
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _delete_older_than(conn: sqlite3.Connection, cutoff: float) -> int:
    """Delete results (and their scores) and backlog rows recorded before ``cutoff``."""
    conn.execute("DELETE FROM pending WHERE created < ?", (cutoff,))
    deleted = 0
    while True:
        n = conn.execute("DELETE FROM results WHERE id IN (SELECT id FROM results WHERE timestamp < ? LIMIT ?)",
                         (cutoff, _DELETE_CHUNK)).rowcount
        deleted += n
        if n < _DELETE_CHUNK:
            return deleted


def _data_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of pages in use (the file size once the WAL is checkpointed and free pages returned)."""
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((page_count - free) * page_size)


def _return_free_pages(conn: sqlite3.Connection) -> None:
    # The pragma frees one page per step; execute() steps once, executescript() to the end.
    conn.executescript("PRAGMA incremental_vacuum;")


def _enforce_size(conn: sqlite3.Connection, max_bytes: int) -> int:
    """Past ``max_bytes`` delete the oldest results until under 90% of it; returns results deleted."""
    used = _data_bytes(conn)
    if used <= max_bytes:
        return 0
    target = max_bytes * _SIZE_TARGET
    deleted = 0
    for _ in range(1000):  # each round deletes at least one result; a bound against surprises
        results = conn.execute("SELECT count(*) FROM results").fetchone()[0]
        if used <= target or results == 0:
            break
        # Index pages free up less than proportionally, so estimate and repeat.
        chunk = max(1, min(_DELETE_CHUNK, math.ceil((used - target) / (used / results))))
        deleted += conn.execute("DELETE FROM results WHERE id IN (SELECT id FROM results ORDER BY id LIMIT ?)",
                                (chunk,)).rowcount
        _return_free_pages(conn)
        used = _data_bytes(conn)
    return deleted


class ResultStore(BatchWriter, StoreReads):
    """``Component`` + ``ResultConsumer``: keeps evaluation results in SQLite (see module doc).

    ``higher_is_worse`` names the metrics whose value grows with risk (it orders
    :meth:`worst_recent`); queries raise ``RuntimeError`` while the store is not running. The
    database file is ``config.sqlite_path`` (``path``, or a ``sqlite:///`` URL).
    """

    def __init__(self, config: StoreConfig, telemetry: Telemetry, clock: Callable[[], float] = time.time, *,
                 higher_is_worse: Collection[str] = HIGHER_IS_WORSE,
                 retention_interval_seconds: float = 60.0) -> None:
        if retention_interval_seconds <= 0:
            raise ValueError("retention_interval_seconds must be positive")
        super().__init__("store", telemetry, clock, capacity=config.queue_size, batch_size=config.batch_size,
                         flush_interval=config.flush_interval_seconds, log=log, label="result store",
                         max_queue_bytes=config.max_queue_bytes)
        self._config = config
        self._telemetry = telemetry
        self._risk_metrics = tuple(sorted(higher_is_worse))
        self._retention_interval = retention_interval_seconds
        self._next_retention = 0.0
        self._writer_pool: ThreadPoolExecutor | None = None
        self._reader_pool: ThreadPoolExecutor | None = None
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._failing = False
        self._lost_in_burst = 0
        # Backlog operations waiting for the writer thread; bounded like the result queue.
        self._pending_ops: deque[PendingOp] = deque()
        self._pending_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open or create the database, apply retention once, start the writer."""
        if self._writer_running:
            return
        loop = asyncio.get_running_loop()
        cfg = self._config
        writer_pool = ThreadPoolExecutor(1, thread_name_prefix="rag-monitor-store-write")
        reader_pool = ThreadPoolExecutor(1, thread_name_prefix="rag-monitor-store-read")
        try:
            self._writer = await loop.run_in_executor(writer_pool, _open_database, cfg.sqlite_path, cfg.max_bytes)
            await loop.run_in_executor(writer_pool, self._retention)
            self._reader = await loop.run_in_executor(reader_pool, self._open_reader)
        except BaseException:
            writer, self._writer = self._writer, None
            if writer is not None:
                await loop.run_in_executor(writer_pool, writer.close)
            writer_pool.shutdown(wait=False)
            reader_pool.shutdown(wait=False)
            raise
        self._writer_pool, self._reader_pool = writer_pool, reader_pool
        self._next_retention = loop.time() + self._retention_interval
        self._start_writer()
        self._pending_task = asyncio.create_task(self._flush_pending_loop(), name="rag-monitor-backlog-writer")

    # ------------------------------------------------------------------ evaluation backlog
    def defer(self, turn: Turn, decision: SamplingDecision) -> bool:
        """Remember a sampled turn until its result is stored. False (counted) when the backlog's
        queue is full or the store is not running: the turn is then evaluated but not durable."""
        if self._pending_task is None or len(self._pending_ops) >= self._config.queue_size:
            self._telemetry.add(BACKLOG, 1, event="not_persisted")
            return False
        self._pending_ops.append(("add", turn.trace_id, (turn, decision), self._clock()))
        return True

    def forget(self, trace_id: str) -> None:
        """Drop a turn from the backlog without a result (its evaluation failed for good)."""
        if self._pending_task is not None:
            self._pending_ops.append(("forget", trace_id, None, self._clock()))

    def _take_pending(self) -> list[PendingOp]:
        ops = list(self._pending_ops)
        self._pending_ops.clear()
        return ops

    async def _flush_pending_loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.backlog_flush_seconds)
            await self._flush_pending()

    async def _flush_pending(self) -> None:
        ops = self._take_pending()
        if not ops:
            return
        try:
            await self._in_writer(self._write_pending, ops)
        except Exception as exc:
            self._telemetry.add(BACKLOG, sum(1 for op in ops if op[0] == "add"), event="not_persisted")
            log.error("result store: writing the evaluation backlog to %s failed: %s", self._config.sqlite_path, exc)

    def _write_pending(self, ops: Sequence[PendingOp]) -> None:
        assert self._writer is not None
        self._writer.execute("BEGIN IMMEDIATE")
        try:
            _apply_pending(self._writer, ops)
            self._writer.execute("COMMIT")
        except BaseException:
            if self._writer.in_transaction:
                self._writer.execute("ROLLBACK")
            raise

    async def backlog_size(self) -> int:
        rows = await self._fetch("SELECT count(*) FROM pending", ())
        return int(rows[0][0])

    async def backlog_ceiling(self) -> int:
        rows = await self._fetch("SELECT coalesce(max(seq), 0) FROM pending", ())
        return int(rows[0][0])

    async def claim_expired(self, limit: int) -> list[tuple[int, Turn, SamplingDecision]]:
        """Backlog rows of dead replicas: none here, one process owns the file (see
        ``exporters.store_postgres.PostgresStore.claim_expired`` for a fleet)."""
        return []

    async def release(self, seqs: Sequence[int]) -> None:
        """Nothing is claimed here (see ``PostgresStore.release``)."""

    async def load_backlog(self, after_seq: int, limit: int) -> list[tuple[int, Turn, SamplingDecision]]:
        """Up to ``limit`` backlog turns with a sequence number above ``after_seq``, oldest first.
        A payload that cannot be read is counted (``invalid``) and removed."""
        rows = await self._fetch("SELECT seq, trace_id, payload FROM pending WHERE seq > ? ORDER BY seq LIMIT ?",
                                 (after_seq, max(0, limit)))
        return decode_backlog(rows, self._telemetry, self.forget)

    def _open_reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._config.sqlite_path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA query_only=ON")
        return conn

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, write what is queued until ``deadline`` (``loop.time()``), close.
        The backlog is written whatever the deadline: one small transaction, and what it holds
        is exactly what the next start must not lose."""
        pending_task, self._pending_task = self._pending_task, None
        if pending_task is not None:
            pending_task.cancel()
            await asyncio.gather(pending_task, return_exceptions=True)
        if not await self._stop_writer(deadline):
            return
        await self._flush_pending()
        loop = asyncio.get_running_loop()
        writer_pool, reader_pool = self._writer_pool, self._reader_pool
        self._writer_pool = self._reader_pool = None
        assert writer_pool is not None and reader_pool is not None
        writer, reader = self._writer, self._reader
        self._writer = self._reader = None
        # Queued behind any batch still running in the thread, so the close never cuts a commit.
        if writer is not None:
            await loop.run_in_executor(writer_pool, writer.close)
        if reader is not None:
            await loop.run_in_executor(reader_pool, reader.close)
        writer_pool.shutdown(wait=False)
        reader_pool.shutdown(wait=False)

    async def _after_batch(self) -> None:
        # Retention shares the writer thread, so it never runs inside a batch's transaction.
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_retention:
            self._next_retention = loop.time() + self._retention_interval
            await self._in_writer(self._retention)

    async def _write_batch(self, batch: Batch) -> None:
        pending = self._take_pending()
        try:
            duplicates = await self._in_writer(self._write_and_trim, batch, pending)
        except Exception as exc:  # disk full, I/O error, a bad value: count it, never stop the writer
            self._telemetry.add(STORE_WRITE_FAILURES, len(batch))
            adds = sum(1 for op in pending if op[0] == "add")
            if adds:
                self._telemetry.add(BACKLOG, adds, event="not_persisted")
            self._lost_in_burst += len(batch)
            if not self._failing:  # once per burst, not per batch
                self._failing = True
                log.error("result store: writing to %s failed (%s); results are lost until it recovers",
                          self._config.sqlite_path, exc)
            return
        if duplicates:
            self._telemetry.add(STORE_DUPLICATE_RESULTS, duplicates)
        if self._failing:
            log.warning("result store: writes recovered after %d lost results", self._lost_in_burst)
            self._failing, self._lost_in_burst = False, 0

    def _write_and_trim(self, batch: Sequence[tuple[float, EvaluationResult]],
                        pending: Sequence[PendingOp] = ()) -> int:
        assert self._writer is not None
        duplicates = _insert_batch(self._writer, batch, self._config.max_text_chars, pending)
        try:
            _enforce_size(self._writer, self._config.max_bytes)
        except sqlite3.Error as exc:  # the batch is committed; trimming retries after the next one
            log.warning("result store: size retention failed: %s", exc)
        return duplicates

    def _retention(self) -> None:
        assert self._writer is not None
        try:
            cutoff = self._clock() - self._config.max_age_hours * 3600.0
            if _delete_older_than(self._writer, cutoff):
                _return_free_pages(self._writer)
            _enforce_size(self._writer, self._config.max_bytes)
            # Returns the WAL's disk space (journal_size_limit) once readers let it restart.
            self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as exc:
            log.warning("result store: retention failed: %s", exc)

    async def _in_writer(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._writer_pool, fn, *args)

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        """Run one read on the reader thread (``store_queries.Fetch``)."""
        reader, pool = self._reader, self._reader_pool
        if reader is None or pool is None:
            raise RuntimeError("the result store is not running")
        rows: list[Sequence[Any]] = await asyncio.get_running_loop().run_in_executor(
            pool, lambda: reader.execute(sql, params).fetchall())
        return rows
