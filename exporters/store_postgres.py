"""The fleet's result store on PostgreSQL: results, scores and the durable evaluation backlog of
every replica in one database (``exporters.store.url: postgresql://…``).

Same surface as the SQLite :class:`exporters.result_store.ResultStore`, same tables (one column
declaration, :mod:`exporters.store_schema`, rendered for PostgreSQL) and the same reads
(:mod:`exporters.store_queries`, :mod:`exporters.turn_queries`), so every replica's API and page
read the whole fleet. One ``psycopg_pool.AsyncConnectionPool`` per process, opened in
:meth:`PostgresStore.start` and closed in :meth:`PostgresStore.shutdown`.

- **Schema**: migrated at start in one transaction under ``pg_advisory_xact_lock``, so replicas
  starting together migrate once; the version is in ``rag_monitor_schema``.
- **Exactly once**: one result per trace, one score per (result, metric), by unique keys; a
  repeated write (a turn evaluated again after a crash or a hand-over) is ``ON CONFLICT DO
  NOTHING`` and counted (``rag_monitor_store_duplicate_results_total``).
- **Ordered ids**: result batches are written under a fleet-wide transaction lock, so score ids
  become visible in id order and :meth:`PostgresStore.scores_after` never skips a late commit.
- **Backlog with leases**: a deferred turn's row names its claimant (this replica) and a lease
  (database time) renewed every third of ``lease_seconds``; :meth:`PostgresStore.claim_expired`
  takes rows whose lease ran out (a dead replica's) with ``FOR UPDATE SKIP LOCKED`` in one short
  statement. A row leaves the backlog in the transaction that stores its result.
- **PostgreSQL down**: writes wait in a bounded, counted in-memory spill
  (:mod:`exporters.store_spill`) and are written in order when it returns, retried with
  exponential backoff and jitter; past the bound the oldest are dropped and counted. Starting
  with PostgreSQL unreachable does not fail: the store keeps connecting in the background and
  logs once per cause. Reads raise while it is down (the API answers 503).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Awaitable, Callable, Collection, Sequence, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from exporters import store_pg_sql as pg_sql
from exporters.batch_writer import Batch, BatchWriter
from exporters.config import StoreConfig
from exporters.result_store import (HIGHER_IS_WORSE, STORE_DUPLICATE_RESULTS, STORE_WRITE_FAILURES, StoreOpenError,
                                    decode_backlog)
from exporters.store_pg_schema import migrate
from exporters.store_queries import StoreReads, pyformat
from exporters.store_spill import PendingOp, Spill, WriteUnit
from monitor.model import SamplingDecision, Turn
from monitor.telemetry import BACKLOG, Telemetry

__all__ = ["PostgresStore"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_BACKOFF_FIRST, _BACKOFF_MAX = 0.2, 10.0


def _retryable(exc: BaseException) -> bool:
    """Connection lost or refused, pool timeout, server shutting down, statement timeout, no
    answer within the store's own bound (a silent network): the database may come back.
    Anything else (a value it refuses) would fail again."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, TimeoutError))


class PostgresStore(BatchWriter, StoreReads):
    """``Component`` + ``ResultConsumer`` + ``Backlog`` on PostgreSQL (see module doc).

    ``replica_id`` names this process in the backlog's ``claimant`` column: stable across
    restarts (a StatefulSet pod name) lets a restarted replica resume its own rows at once;
    otherwise another replica claims them when their lease runs out.
    """

    def __init__(self, config: StoreConfig, telemetry: Telemetry, clock: Callable[[], float] = time.time, *,
                 replica_id: str, higher_is_worse: Collection[str] = HIGHER_IS_WORSE,
                 retention_interval_seconds: float = 60.0) -> None:
        if config.url is None or config.dialect != "postgresql":
            raise ValueError("PostgresStore needs exporters.store.url: postgresql://…")
        if not replica_id:
            raise ValueError("replica_id must not be empty")
        if retention_interval_seconds <= 0:
            raise ValueError("retention_interval_seconds must be positive")
        super().__init__("store", telemetry, clock, capacity=config.queue_size, batch_size=config.batch_size,
                         flush_interval=config.flush_interval_seconds, log=log, label="result store",
                         max_queue_bytes=config.max_queue_bytes)
        self._config = config
        self._telemetry = telemetry
        self._replica = replica_id
        self._risk_metrics = tuple(sorted(higher_is_worse))
        self._retention_interval = retention_interval_seconds
        self._pool: AsyncConnectionPool | None = None
        self._spill = Spill(telemetry, max_items=config.spill_max_items, max_bytes=config.spill_max_bytes)
        self._pending_ops: list[PendingOp] = []
        self._lock = asyncio.Lock()  # one writer at a time, so units reach the database in order
        self._ready = asyncio.Event()  # schema checked; writes go straight to the database
        self._kick = asyncio.Event()  # the spill has something: try now rather than at the next tick
        self._causes: set[str] = set()  # failures logged since the database was last reachable
        self._tasks: list[asyncio.Task[None]] = []
        self._pool_filter = pg_sql.OncePerCause(f"rag-monitor-store-{replica_id}")

    # ------------------------------------------------------------------ lifecycle
    @property
    def ready(self) -> bool:
        """The schema is in place and the last write reached the database."""
        return self._ready.is_set() and not self._causes

    @property
    def spilled(self) -> int:
        """Results and backlog operations waiting in memory for the database."""
        return self._spill.items

    async def start(self) -> None:
        """Open the pool and try to migrate once (bounded by ``timeout_seconds``); if PostgreSQL
        is unreachable, keep trying in the background: writes spill meanwhile. Raises
        :class:`StoreOpenError` only for a schema written by a newer rag-monitor."""
        if self._pool is not None:
            return
        cfg = self._config
        assert cfg.url is not None
        pool = AsyncConnectionPool(
            cfg.url.get_secret_value(), min_size=1, max_size=cfg.pool_size, open=False, timeout=cfg.timeout_seconds,
            name=self._pool_filter.pool_name, check=AsyncConnectionPool.check_connection,
            # The pool's own reconnection backs off to minutes; give up fast and let the next
            # use (the supervisor's, on its own backoff of at most 10 s) try again.
            reconnect_timeout=cfg.timeout_seconds,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(cfg.timeout_seconds)),
                    "application_name": f"rag-monitor {self._replica}"[:63],
                    "options": f"-c statement_timeout={round(cfg.timeout_seconds * 1000)}"})
        logging.getLogger("psycopg.pool").addFilter(self._pool_filter)
        await pool.open(wait=False)
        self._pool = pool
        self._ready = asyncio.Event()
        self._kick = asyncio.Event()
        self._causes.clear()
        try:
            await self._migrate()
        except Exception as exc:
            if isinstance(exc, StoreOpenError) or not _retryable(exc):
                self._pool = None
                await pool.close()
                logging.getLogger("psycopg.pool").removeFilter(self._pool_filter)
                raise
            self._note_down("connect", exc)
        self._start_writer()
        self._tasks = [asyncio.create_task(self._supervise(), name="rag-monitor-store-supervisor"),
                       asyncio.create_task(self._flush_pending_loop(), name="rag-monitor-backlog-writer")]

    async def _migrate(self) -> None:
        assert self._pool is not None
        async with self._pool.connection() as conn:
            found = await migrate(conn)
        if found is not None:
            log.info("result store: PostgreSQL schema migrated from version %d", found)
        self._ready.set()
        await self._renew_leases()  # the rows of this replica's previous run, before anyone claims them

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, write what is queued and spilled until ``deadline`` (``loop.time()``),
        drop and count the rest, close the pool. Safe twice and without start. This replica's
        backlog rows stay claimed until their lease runs out, then another replica takes them."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        pool = self._pool
        if not await self._stop_writer(deadline) or pool is None:
            return
        loop = asyncio.get_running_loop()
        if self._pending_ops:
            await self._submit(WriteUnit(ops=self._take_pending()))
        delay = _BACKOFF_FIRST
        while self._spill and self._ready.is_set() and loop.time() + delay < deadline:
            try:
                flushed = await asyncio.wait_for(self._flush_spill(), deadline - loop.time())
            except TimeoutError:
                break
            if not flushed:
                await asyncio.sleep(delay)
                delay = min(_BACKOFF_MAX, delay * 2)
        if self._spill:
            log.warning("result store: shutdown with %d results and backlog operations unwritten (PostgreSQL "
                        "unreachable); dropped", self._spill.items)
            while self._spill:
                self._spill.drop_oldest()
        self._pool = None
        await pool.close(timeout=max(0.1, deadline - loop.time()))
        logging.getLogger("psycopg.pool").removeFilter(self._pool_filter)

    # ------------------------------------------------------------------ writes
    async def _write_batch(self, batch: Batch) -> None:
        await self._submit(WriteUnit(ops=self._take_pending(), batch=batch))

    async def _submit(self, unit: WriteUnit) -> None:
        """Write ``unit`` now, or spill it behind what is already waiting."""
        async with self._lock:
            if self._spill or not self._ready.is_set():
                self._spill.push(unit)
                self._kick.set()
                return
            try:
                await self._bounded(self._write_unit(unit))
            except Exception as exc:
                if not _retryable(exc):
                    self._lost(unit, exc)
                    return
                self._note_down("write", exc)
                self._spill.push(unit)
                self._kick.set()
                return
        self._note_up()

    async def _flush_spill(self) -> bool:
        """Write spilled units in order until none is left (True) or the database fails (False)."""
        async with self._lock:
            while (unit := self._spill.peek()) is not None:
                try:
                    await self._bounded(self._write_unit(unit))
                except Exception as exc:
                    if _retryable(exc):
                        self._note_down("write", exc)
                        return False
                    self._spill.drop_oldest()
                    self._log_once(f"refused:{type(exc).__name__}", "result store: PostgreSQL refused a write "
                                   "(%r); those results are lost", exc)
                    continue
                self._spill.written()
        self._note_up()
        return True

    def _lost(self, unit: WriteUnit, exc: BaseException) -> None:
        if unit.batch:
            self._telemetry.add(STORE_WRITE_FAILURES, len(unit.batch))
        if unit.deferred:
            self._telemetry.add(BACKLOG, unit.deferred, event="not_persisted")
        self._log_once(f"refused:{type(exc).__name__}", "result store: PostgreSQL refused a write (%r); those "
                       "results are lost", exc)

    async def _bounded(self, operation: Awaitable[T]) -> T:
        """``operation`` within three ``timeout_seconds`` (a connection, a statement, a commit):
        the server's statement_timeout cannot fire when the network drops packets silently."""
        return await asyncio.wait_for(operation, 3 * self._config.timeout_seconds)

    async def _write_unit(self, unit: WriteUnit) -> None:
        """One transaction (``store_pg_sql.write_unit``); counts the results skipped as duplicates."""
        assert self._pool is not None
        async with self._pool.connection() as conn:
            duplicates = await pg_sql.write_unit(conn, unit, replica=self._replica,
                                                 lease_seconds=self._config.lease_seconds,
                                                 max_chars=self._config.max_text_chars)
        if duplicates:
            self._telemetry.add(STORE_DUPLICATE_RESULTS, duplicates)

    # ------------------------------------------------------------------ failures, once per cause
    def _log_once(self, cause: str, message: str, *args: Any) -> None:
        if cause not in self._causes:
            self._causes.add(cause)
            log.warning(message, *args)

    def _note_down(self, what: str, exc: BaseException) -> None:
        self._log_once(f"down:{type(exc).__name__}", "result store: PostgreSQL unreachable (%s: %s); results and "
                       "the backlog wait in memory (at most %d items) and are written when it returns",
                       what, exc, self._config.spill_max_items)

    def _note_up(self) -> None:
        if self._causes:
            self._causes.clear()
            self._pool_filter.reset()
            log.warning("result store: PostgreSQL reachable again")

    # ------------------------------------------------------------------ background upkeep
    async def _supervise(self) -> None:
        """Migrate when the start could not, flush the spill with backoff, renew this replica's
        leases every third of ``lease_seconds``, apply retention every interval."""
        loop = asyncio.get_running_loop()
        delay = _BACKOFF_FIRST
        renew_every = self._config.lease_seconds / 3
        next_renewal = loop.time() + renew_every
        next_retention = loop.time()  # at start, then every interval
        while True:
            try:
                if not self._ready.is_set():
                    await self._migrate()
                if self._spill and not await self._flush_spill():
                    raise _Retry
                if loop.time() >= next_renewal:
                    await self._renew_leases()
                    next_renewal = loop.time() + renew_every
                if loop.time() >= next_retention:
                    await self._retention()
                    next_retention = loop.time() + self._retention_interval
                delay = _BACKOFF_FIRST
                self._kick.clear()
                wait = max(0.0, min(next_renewal, next_retention) - loop.time())
                try:
                    await asyncio.wait_for(self._kick.wait(), wait)
                except TimeoutError:
                    pass
                continue
            except _Retry:
                pass
            except StoreOpenError as exc:
                self._log_once("schema", "result store: %s", exc)
            except Exception as exc:
                if not _retryable(exc):
                    self._log_once(f"upkeep:{type(exc).__name__}", "result store: upkeep failed: %r", exc)
                else:
                    self._note_down("connect" if not self._ready.is_set() else "upkeep", exc)
            # Exponential backoff with full jitter; shutdown cancels the sleep.
            await asyncio.sleep(random.uniform(delay / 2, delay))
            delay = min(_BACKOFF_MAX, delay * 2)

    async def _renew_leases(self) -> None:
        pool = self._pool
        assert pool is not None

        async def renew() -> None:
            async with pool.connection() as conn:
                await pg_sql.renew_leases(conn, replica=self._replica, lease_seconds=self._config.lease_seconds)

        await self._bounded(renew())

    async def _retention(self) -> None:
        """Delete rows older than ``max_age_hours``; one replica at a time (the others skip)."""
        assert self._pool is not None
        cutoff = self._clock() - self._config.max_age_hours * 3600.0
        async with self._pool.connection() as conn:
            await pg_sql.delete_older_than(conn, cutoff)

    # ------------------------------------------------------------------ evaluation backlog
    def defer(self, turn: Turn, decision: SamplingDecision) -> bool:
        """Remember a sampled turn, claimed by this replica, until its result is stored. False
        (counted) when the backlog's queue is full or the store is not running."""
        if not self._tasks or len(self._pending_ops) >= self._config.queue_size:
            self._telemetry.add(BACKLOG, 1, event="not_persisted")
            return False
        self._pending_ops.append(("add", turn.trace_id, (turn, decision), self._clock()))
        return True

    def forget(self, trace_id: str) -> None:
        """Drop a turn from the backlog without a result (its evaluation failed for good)."""
        if self._tasks:
            self._pending_ops.append(("forget", trace_id, None, self._clock()))

    def _take_pending(self) -> list[PendingOp]:
        ops, self._pending_ops = self._pending_ops, []
        return ops

    async def _flush_pending_loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.backlog_flush_seconds)
            if self._pending_ops:
                await self._submit(WriteUnit(ops=self._take_pending()))

    async def backlog_size(self) -> int:
        """Backlog rows claimed by this replica."""
        rows = await self._fetch("SELECT count(*) FROM pending WHERE claimant = ?", [self._replica])
        return int(rows[0][0])

    async def backlog_ceiling(self) -> int:
        """The highest sequence number among this replica's backlog rows (0 when none)."""
        rows = await self._fetch("SELECT coalesce(max(seq), 0) FROM pending WHERE claimant = ?", [self._replica])
        return int(rows[0][0])

    async def load_backlog(self, after_seq: int, limit: int) -> list[tuple[int, Turn, SamplingDecision]]:
        """Up to ``limit`` of this replica's backlog turns above ``after_seq``, oldest first (its
        previous run's, when ``replica_id`` is stable). Unreadable payloads are counted and removed."""
        rows = await self._fetch("SELECT seq, trace_id, payload FROM pending WHERE claimant = ? AND seq > ? "
                                 "ORDER BY seq LIMIT ?", [self._replica, after_seq, max(0, limit)])
        return self._decoded(rows)

    async def claim_expired(self, limit: int) -> list[tuple[int, Turn, SamplingDecision]]:
        """Claim up to ``limit`` backlog rows of other replicas whose lease ran out (a dead
        replica's), oldest first, for this one; feed them to the evaluation stage. One short
        statement (``FOR UPDATE SKIP LOCKED``): concurrent claimers never get the same row.
        [] while PostgreSQL is unreachable."""
        pool = self._pool
        if pool is None or not self._ready.is_set() or limit < 1:
            return []
        async def claim() -> list[Any]:
            async with pool.connection() as conn:
                return await pg_sql.claim_expired(conn, replica=self._replica,
                                                  lease_seconds=self._config.lease_seconds, limit=limit)

        try:
            rows = await self._bounded(claim())
        except Exception as exc:
            if not _retryable(exc):
                raise
            self._note_down("claim", exc)
            return []
        return self._decoded(rows)

    async def release(self, seqs: Sequence[int]) -> None:
        """Give back claimed rows this replica will not evaluate after all (no room in its queue):
        their lease ends now, so the next ``claim_expired`` of any other replica takes them."""
        pool = self._pool
        if pool is None or not seqs:
            return

        async def give_back() -> None:
            async with pool.connection() as conn:
                await pg_sql.release(conn, seqs, replica=self._replica)

        await self._bounded(give_back())

    def _decoded(self, rows: Sequence[Sequence[Any]]) -> list[tuple[int, Turn, SamplingDecision]]:
        return decode_backlog(rows, self._telemetry, self.forget)

    # ------------------------------------------------------------------ reads (the whole fleet's)
    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        """Run one read (``store_queries.Fetch``); raises while the store is not running or
        PostgreSQL is unreachable (within ``timeout_seconds``)."""
        pool = self._pool
        if pool is None:
            raise RuntimeError("the result store is not running")
        async def read() -> list[Sequence[Any]]:
            async with pool.connection() as conn:
                cur = await conn.execute(pyformat(sql), params)
                return [*await cur.fetchall()]

        return await self._bounded(read())


class _Retry(Exception):
    """The spill could not be written: back off (already logged)."""
