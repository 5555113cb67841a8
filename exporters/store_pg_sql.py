"""The PostgreSQL store's statements, each run on one connection from its pool: one write unit's
transaction, the backlog's leases, retention; and the pool's connection warnings once per cause.

Advisory-lock keys ("ragmon" and a number): migrations (:mod:`exporters.store_pg_schema`), result
batches (so score ids become visible in id order across the fleet) and retention (one replica at
a time).
"""

from __future__ import annotations

import logging
from itertools import groupby
from typing import Any, Sequence

import psycopg

from exporters.store_schema import insert_result, insert_score, result_values, score_values
from exporters.store_spill import WriteUnit
from monitor.turn_codec import encode_pending

__all__ = ["OncePerCause", "write_unit", "renew_leases", "claim_expired", "release", "delete_older_than"]

Connection = psycopg.AsyncConnection[Any]

ORDER_LOCK = 0x7261676D6F6E01  # pg_advisory_xact_lock key: result batches, fleet-wide, one at a time
RETENTION_LOCK = 0x7261676D6F6E02  # one replica applies retention at a time
_DELETE_CHUNK = 5000
_INSERT_RESULT = insert_result("postgresql")
_INSERT_SCORE = insert_score("postgresql")
_LEASE = "now() + make_interval(secs => %s)"  # database time: replicas' clocks never compared
_INSERT_PENDING = ("INSERT INTO pending (trace_id, created, payload, claimant, lease_until) "
                   f"VALUES (%s, %s, %s, %s, {_LEASE}) ON CONFLICT (trace_id) DO NOTHING")
# Rows whose lease ran out, oldest first, skipping rows another replica is claiming right now.
_CLAIM = (f"UPDATE pending SET claimant = %s, lease_until = {_LEASE} WHERE seq IN ("
          "SELECT seq FROM pending WHERE (lease_until IS NULL OR lease_until < now()) "
          "AND claimant IS DISTINCT FROM %s ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) "
          "RETURNING seq, trace_id, payload")


class OncePerCause(logging.Filter):
    """Lets the pool's warning about a failed connection attempt of one pool through once per
    cause (refused, authentication failed, …: what an operator needs), not once per attempt;
    :meth:`reset` when the database is reachable again."""

    def __init__(self, pool_name: str) -> None:
        super().__init__()
        self.pool_name = pool_name
        self._seen: set[str] = set()

    def reset(self) -> None:
        self._seen.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        attempt = isinstance(record.msg, str) and record.msg.startswith(("error connecting in",
                                                                         "reconnection attempt in pool"))
        if not (attempt and isinstance(record.args, tuple) and self.pool_name in record.args):
            return True
        cause = record.getMessage()
        if cause in self._seen:
            return False
        self._seen.add(cause)
        return True


def _without_nul(values: dict[str, Any]) -> dict[str, Any]:
    # PostgreSQL's TEXT cannot hold U+0000 (SQLite's can): a NUL in a question must not cost the batch.
    return {k: v.replace("\x00", "\ufffd") if isinstance(v, str) else v for k, v in values.items()}


async def write_unit(conn: Connection, unit: WriteUnit, *, replica: str, lease_seconds: float,
                     max_chars: int) -> int:
    """One transaction: the backlog operations in order (deferred rows claimed by ``replica``),
    then the results, whose turns leave the backlog. Returns the results skipped because their
    trace was already stored."""
    ids: list[int | None] = []
    async with conn.transaction(), conn.cursor() as cur:
        if unit.batch:  # ids become visible in id order (scores_after): one batch at a time, fleet-wide
            await cur.execute("SELECT pg_advisory_xact_lock(%s)", (ORDER_LOCK,))
        for kind, group in groupby(unit.ops, key=lambda op: op[0]):
            ops = list(group)
            if kind == "add":
                await cur.executemany(_INSERT_PENDING, [
                    (trace_id, created, encode_pending(*item), replica, lease_seconds)
                    for _, trace_id, item, created in ops if item is not None])
            else:
                await cur.executemany("DELETE FROM pending WHERE trace_id = %s", [(op[1],) for op in ops])
        if not unit.batch:
            return 0
        await cur.execute("DELETE FROM pending WHERE trace_id = ANY(%s)", ([r.turn.trace_id for _, r in unit.batch],))
        await cur.executemany(_INSERT_RESULT, [_without_nul(result_values(ts, r, max_chars)) for ts, r in unit.batch],
                              returning=True)
        while True:  # one result set per row: its id, or none when the trace was already stored
            row = await cur.fetchone()
            ids.append(int(row[0]) if row else None)
            if not cur.nextset():
                break
        scores = [_without_nul(score_values(rid, ts, score, max_chars))
                  for rid, (ts, result) in zip(ids, unit.batch) if rid is not None for score in result.scores]
        if scores:
            await cur.executemany(_INSERT_SCORE, scores)
    return ids.count(None)


async def renew_leases(conn: Connection, *, replica: str, lease_seconds: float) -> None:
    await conn.execute(f"UPDATE pending SET lease_until = {_LEASE} WHERE claimant = %s", (lease_seconds, replica))


async def claim_expired(conn: Connection, *, replica: str, lease_seconds: float, limit: int) -> list[Any]:
    """``(seq, trace_id, payload)`` of up to ``limit`` rows of other replicas whose lease ran out,
    now claimed by ``replica``, oldest first; one statement, so a short transaction."""
    cur = await conn.execute(_CLAIM, (replica, lease_seconds, replica, limit))
    return sorted(await cur.fetchall())


async def release(conn: Connection, seqs: Sequence[int], *, replica: str) -> None:
    """End ``replica``'s lease on ``seqs`` now: the next claimer takes them."""
    await conn.execute("UPDATE pending SET claimant = NULL, lease_until = NULL WHERE seq = ANY(%s) AND claimant = %s",
                       (list(seqs), replica))


async def delete_older_than(conn: Connection, cutoff: float) -> None:
    """Delete results (scores with them) and backlog rows recorded before ``cutoff``, in chunks;
    skipped while another replica does it."""
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (RETENTION_LOCK,))).fetchone()
    if not row or not row[0]:
        return
    try:
        await conn.execute("DELETE FROM pending WHERE created < %s", (cutoff,))
        while True:
            cur = await conn.execute("DELETE FROM results WHERE id IN (SELECT id FROM results WHERE timestamp < %s "
                                     "LIMIT %s)", (cutoff, _DELETE_CHUNK))
            if cur.rowcount < _DELETE_CHUNK:
                break
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (RETENTION_LOCK,))
