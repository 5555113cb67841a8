"""People's verdicts in the result store, and the judge's scores they are joined with.

The ``human_verdicts`` table is declared with the store's other tables (``exporters.store_schema``,
schema version 5) and created by the store's own migration; this module only reads and writes it,
over its own connection: a SQLite connection in one worker thread (WAL lets it write beside the
store's writer), or a small ``psycopg`` pool on the fleet's PostgreSQL database, so that a verdict
received by one replica meets a judge score stored by another.

Both dialects share the SQL below (placeholders rendered per dialect). Every read is bounded
(``LIMIT``, batches of at most :data:`MAX_BATCH` trace ids).
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from monitor.feedback.verdicts import HumanVerdict

__all__ = ["JudgeSide", "JoinedRow", "VerdictStore", "SqliteVerdicts", "PostgresVerdicts", "MAX_BATCH",
           "MAX_JOINED_ROWS"]

MAX_BATCH = 500
MAX_JOINED_ROWS = 100_000

Key = tuple[str, str]  # (trace id, metric)


@dataclass(frozen=True, slots=True)
class JudgeSide:
    """The judge's scored verdict on one metric of one trace (``outcome``: pass | defect)."""

    trace_id: str
    metric: str
    outcome: str
    value: float
    judge_model: str | None = None  # as the score was stamped (monitor.evaluation.judge_identity)


@dataclass(frozen=True, slots=True)
class JoinedRow:
    """A stored human verdict with the judge's score of the same trace and metric."""

    trace_id: str
    metric: str
    verdict: str | None
    value: float | None
    inclusion_probability: float | None
    judge_outcome: str
    judge_value: float
    judge_model: str | None = None


class VerdictStore(Protocol):
    """Where verdicts persist and judge scores are looked up (one store per process)."""

    async def start(self) -> None: ...

    async def shutdown(self, deadline: float) -> None: ...

    async def save(self, verdict: HumanVerdict, inclusion_probability: float | None) -> bool:
        """Store the verdict; False when the same reviewer's verdict on the trace and metric is there."""
        ...

    async def judged(self, keys: Sequence[Key]) -> dict[Key, JudgeSide]:
        """The judge's ok scores among ``keys`` (missing: not scored, or not stored yet)."""
        ...

    async def joined(self, *, since: float, limit: int = MAX_JOINED_ROWS) -> list[JoinedRow]:
        """Verdicts received since ``since`` that have a judge score, newest first."""
        ...

    async def reviewed(self, keys: Sequence[Key]) -> set[Key]:
        """The pairs among ``keys`` that hold at least one person's verdict (the review queue's filter)."""
        ...

    async def forget_before(self, cutoff: float) -> int: ...


def _sql(mark: str) -> dict[str, str]:
    return {
        "save": ("INSERT INTO human_verdicts (trace_id, metric, verdict, value, reviewer, source, at, "
                 f"inclusion_probability) VALUES ({', '.join([mark] * 8)}) "
                 "ON CONFLICT (trace_id, metric, reviewer) DO NOTHING"),
        "joined": ("SELECT h.trace_id, h.metric, h.verdict, h.value, h.inclusion_probability, s.outcome, s.value, "
                   "s.judge_model "
                   "FROM human_verdicts h JOIN results r ON r.trace_id = h.trace_id "
                   "JOIN scores s ON s.result_id = r.id AND s.metric = h.metric "
                   f"WHERE h.at >= {mark} AND s.status = 'ok' ORDER BY h.at DESC LIMIT {mark}"),
        "forget": f"DELETE FROM human_verdicts WHERE at < {mark}",
    }


def _in(mark: str, n: int) -> str:
    return "(" + ", ".join([mark] * n) + ")"


def _judged_sql(mark: str, n: int) -> str:
    return ("SELECT r.trace_id, s.metric, s.outcome, s.value, s.judge_model "
            "FROM results r JOIN scores s ON s.result_id = r.id "
            f"WHERE r.trace_id IN {_in(mark, n)} AND s.status = 'ok'")


def _reviewed_sql(mark: str, n: int) -> str:
    return f"SELECT DISTINCT trace_id, metric FROM human_verdicts WHERE trace_id IN {_in(mark, n)}"


def _save_params(v: HumanVerdict, p: float | None) -> tuple[Any, ...]:
    return (v.trace_id, v.metric, v.verdict, v.value, v.reviewer, v.source, v.at, p)


def _batches(keys: Sequence[Key]) -> list[list[str]]:
    traces = sorted({t for t, _ in keys})
    return [traces[i:i + MAX_BATCH] for i in range(0, len(traces), MAX_BATCH)]


def _judge_sides(rows: Sequence[Sequence[Any]], wanted: set[Key]) -> dict[Key, JudgeSide]:
    return {(str(t), str(m)): JudgeSide(str(t), str(m), str(o), float(v), j)
            for t, m, o, v, j in rows if (t, m) in wanted and v is not None}


def _joined_rows(rows: Sequence[Sequence[Any]]) -> list[JoinedRow]:
    return [JoinedRow(str(t), str(m), h, None if hv is None else float(hv), None if p is None else float(p),
                      str(o), float(jv), j) for t, m, h, hv, p, o, jv, j in rows if jv is not None]


class SqliteVerdicts:
    """``VerdictStore`` on the SQLite result store's file (its own connection, one thread)."""

    _SQL = _sql("?")

    def __init__(self, path: str, busy_timeout_ms: int = 5000) -> None:
        self._path = path
        self._busy_ms = busy_timeout_ms
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def _run(self, fn: Any, *args: Any) -> Any:
        if self._executor is None:
            raise RuntimeError("the verdict store is not started")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def start(self) -> None:
        if self._executor is not None:
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rag-monitor-verdicts")
        await self._run(self._open)

    def _open(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={int(self._busy_ms)}")
        self._conn = conn

    async def shutdown(self, deadline: float) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        await asyncio.get_running_loop().run_in_executor(executor, self._close)
        executor.shutdown(wait=False)

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the verdict store is closed")
        return self._conn

    async def save(self, verdict: HumanVerdict, inclusion_probability: float | None) -> bool:
        def run() -> bool:
            return self._db().execute(self._SQL["save"], _save_params(verdict, inclusion_probability)).rowcount == 1
        return bool(await self._run(run))

    async def judged(self, keys: Sequence[Key]) -> dict[Key, JudgeSide]:
        wanted = set(keys)

        def run() -> dict[Key, JudgeSide]:
            out: dict[Key, JudgeSide] = {}
            for batch in _batches(keys):
                out.update(_judge_sides(self._db().execute(_judged_sql("?", len(batch)), batch).fetchall(), wanted))
            return out
        return dict(await self._run(run))

    async def joined(self, *, since: float, limit: int = MAX_JOINED_ROWS) -> list[JoinedRow]:
        rows = await self._run(lambda: self._db().execute(self._SQL["joined"], (since, limit)).fetchall())
        return _joined_rows(rows)

    async def reviewed(self, keys: Sequence[Key]) -> set[Key]:
        wanted = set(keys)

        def run() -> set[Key]:
            out: set[Key] = set()
            for batch in _batches(keys):
                rows = self._db().execute(_reviewed_sql("?", len(batch)), batch).fetchall()
                out.update((str(t), str(m)) for t, m in rows if (t, m) in wanted)
            return out
        return set(await self._run(run))

    async def forget_before(self, cutoff: float) -> int:
        return int(await self._run(lambda: self._db().execute(self._SQL["forget"], (cutoff,)).rowcount))


class PostgresVerdicts:
    """``VerdictStore`` on the fleet's PostgreSQL database (a pool of at most two connections)."""

    _SQL = _sql("%s")

    def __init__(self, url: str, timeout_seconds: float = 5.0) -> None:
        self._url = url
        self._timeout = timeout_seconds
        self._pool: Any = None

    async def start(self) -> None:
        if self._pool is not None:
            return
        from psycopg_pool import AsyncConnectionPool  # only a fleet's store needs it

        pool = AsyncConnectionPool(
            self._url, min_size=1, max_size=2, open=False, timeout=self._timeout, name="rag-monitor-verdicts",
            reconnect_timeout=self._timeout,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(self._timeout)),
                    "options": f"-c statement_timeout={round(self._timeout * 1000)}"})
        # Not waiting: a database that is down at start must not stop the sidecar (reads fail and retry).
        await pool.open(wait=False)
        self._pool = pool

    async def shutdown(self, deadline: float) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=max(0.1, deadline - asyncio.get_running_loop().time()))

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if self._pool is None:
            raise RuntimeError("the verdict store is not started")
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def _execute(self, sql: str, params: Sequence[Any]) -> int:
        if self._pool is None:
            raise RuntimeError("the verdict store is not started")
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return int(cur.rowcount)

    async def save(self, verdict: HumanVerdict, inclusion_probability: float | None) -> bool:
        return await self._execute(self._SQL["save"], _save_params(verdict, inclusion_probability)) == 1

    async def judged(self, keys: Sequence[Key]) -> dict[Key, JudgeSide]:
        wanted, out = set(keys), dict[Key, JudgeSide]()
        for batch in _batches(keys):
            out.update(_judge_sides(await self._fetch(_judged_sql("%s", len(batch)), batch), wanted))
        return out

    async def joined(self, *, since: float, limit: int = MAX_JOINED_ROWS) -> list[JoinedRow]:
        return _joined_rows(await self._fetch(self._SQL["joined"], (since, limit)))

    async def reviewed(self, keys: Sequence[Key]) -> set[Key]:
        wanted, out = set(keys), set[Key]()
        for batch in _batches(keys):
            out.update((str(t), str(m)) for t, m in await self._fetch(_reviewed_sql("%s", len(batch)), batch)
                       if (t, m) in wanted)
        return out

    async def forget_before(self, cutoff: float) -> int:
        return await self._execute(self._SQL["forget"], (cutoff,))
