"""Score-level reads of the result store, written once for both dialects (SQLite, PostgreSQL).

Every function takes a :data:`Fetch`: the store's way to run one ``SELECT`` off the event loop
and return its rows as tuples. The SQL uses ``?`` placeholders and only what both engines share
(``CASE``, ``NULLS LAST``, no boolean aggregates); the PostgreSQL store converts the placeholders
(:func:`pyformat`). Turn-level reads are in :mod:`exporters.turn_queries`, over the same ``Fetch``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, Sequence

from exporters.store_schema import SCORE_COLUMNS
from exporters.turn_queries import Fetch, OutcomeReason, StoredTurn, goodness, outcome_reasons, worst_turns

__all__ = ["Fetch", "StoreReads", "StoredEvaluation", "ScoreRow", "ObservationRow", "MAX_QUERY_ROWS", "MAX_REFILL_ROWS", "pyformat",
           "evaluations", "worst_recent", "scores_since", "scores_after", "observations_after",
           "first_score_id_since", "count"]

MAX_QUERY_ROWS = 1000
MAX_REFILL_ROWS = 1_000_000

ScoreRow = tuple[int, float, str, str, str, float, "float | None"]
"""``(score id, timestamp, metric, service, outcome, weight, value)``."""

ObservationRow = tuple[int, float, str, str, str, "float | None", float, float, float, str]
"""``(score id, timestamp, metric, service, outcome, value, scale low, scale high, weight, labels
JSON)`` of a scored evaluation: what the release comparisons read (the version is a label)."""


@dataclass(frozen=True, slots=True)
class StoredEvaluation:
    """One stored score with its result's turn fields (one row per result and metric)."""

    id: int
    timestamp: float
    metric: str
    outcome: str
    value: float | None
    scale: tuple[float, float]
    label: str | None
    reason: str | None
    status: str
    error_type: str | None
    weight: float
    sampling_policy: str
    trace_id: str
    span_id: str | None
    conversation_id: str
    service: str
    labels: dict[str, str]
    question: str
    answer: str
    turn_start_unix_nano: int
    judge_model: str | None = None
    """The judge model that produced the score (None: a local metric, or stored before schema 6)."""
    prompt_version: str | None = None
    """The hash of the metric's prompt templates when it was judged."""


def pyformat(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled). The shared SQL has no
    ``?`` or ``%`` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


_SCORE_NAMES = frozenset(c.name for c in SCORE_COLUMNS)


def _select_list() -> tuple[str, list[str]]:
    # Each StoredEvaluation field is read from the column of the same name (the score's when
    # both tables have one); the scale is its two columns.
    parts, names = [], []
    for f in fields(StoredEvaluation):
        if f.name == "scale":
            parts += ["s.scale_low", "s.scale_high"]
            names += ["scale_low", "scale_high"]
        else:
            parts.append(f"{'s' if f.name in _SCORE_NAMES else 'r'}.{f.name}")
            names.append(f.name)
    return ", ".join(parts), names


_COLUMNS, _NAMES = _select_list()
_SELECT = f"SELECT {_COLUMNS} FROM scores s JOIN results r ON r.id = s.result_id"


def _stored(row: Sequence[Any]) -> StoredEvaluation:
    values = dict(zip(_NAMES, row))
    values["scale"] = (values.pop("scale_low"), values.pop("scale_high"))
    labels = json.loads(values["labels"])
    values["labels"] = labels if isinstance(labels, dict) else {}
    return StoredEvaluation(**values)


def _capped(limit: int, cap: int = MAX_QUERY_ROWS) -> int:
    return max(0, min(limit, cap))


async def evaluations(fetch: Fetch, *, metric: str | None, outcome: str | None, since: float | None,
                      limit: int) -> list[StoredEvaluation]:
    """Stored scores matching every given filter, newest first; at most ``limit`` (≤ 1000)."""
    where: list[str] = []
    params: list[Any] = []
    for clause, value in (("s.metric = ?", metric), ("s.outcome = ?", outcome), ("s.timestamp >= ?", since)):
        if value is not None:
            where.append(clause)
            params.append(value)
    sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY s.timestamp DESC, s.id DESC LIMIT ?"
    return [_stored(r) for r in await fetch(sql, [*params, _capped(limit)])]


async def worst_recent(fetch: Fetch, *, since: float, limit: int, risk: Sequence[str]) -> list[StoredEvaluation]:
    """The worst scored (status ``ok``) evaluations since ``since``: defects first, then by
    :func:`goodness` ascending (a degenerate scale last), ties newest first."""
    good, good_params = goodness(risk)
    sql = (_SELECT + " WHERE s.timestamp >= ? AND s.status = 'ok' ORDER BY "
           "CASE WHEN s.outcome = 'defect' THEN 0 ELSE 1 END, "
           f"{good} ASC NULLS LAST, s.timestamp DESC, s.id DESC LIMIT ?")
    return [_stored(r) for r in await fetch(sql, [since, *good_params, _capped(limit)])]


async def scores_since(fetch: Fetch, since: float) -> list[tuple[float, str, str, str, float, float | None]]:
    """``(timestamp, metric, service, outcome, weight, value)`` of every score since ``since``,
    oldest first. Past 1,000,000 rows the newest million (what short windows need most)."""
    rows = await fetch("SELECT s.timestamp, s.metric, r.service, s.outcome, r.weight, s.value FROM scores s "
                       "JOIN results r ON r.id = s.result_id WHERE s.timestamp >= ? "
                       "ORDER BY s.timestamp DESC, s.id DESC LIMIT ?", [since, MAX_REFILL_ROWS])
    out = [(float(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4]), r[5]) for r in rows]
    out.reverse()
    return out


async def scores_after(fetch: Fetch, after_id: int, limit: int) -> list[ScoreRow]:
    """:data:`ScoreRow` of the scores with an id above ``after_id``, in id order; at most
    ``limit`` (≤ 1,000,000). A reader that keeps the last id it saw gets every score once."""
    rows = await fetch("SELECT s.id, s.timestamp, s.metric, r.service, s.outcome, r.weight, s.value FROM scores s "
                       "JOIN results r ON r.id = s.result_id WHERE s.id > ? ORDER BY s.id LIMIT ?",
                       [after_id, _capped(limit, MAX_REFILL_ROWS)])
    return [(int(r[0]), float(r[1]), str(r[2]), str(r[3]), str(r[4]), float(r[5]), r[6]) for r in rows]


async def observations_after(fetch: Fetch, after_id: int, limit: int) -> list[ObservationRow]:
    """:data:`ObservationRow` of the scored (status ``ok``) evaluations with a score id above
    ``after_id``, in id order; at most ``limit`` (≤ 1,000,000). Read like :func:`scores_after`."""
    rows = await fetch("SELECT s.id, s.timestamp, s.metric, r.service, s.outcome, s.value, s.scale_low, s.scale_high, "
                       "r.weight, r.labels FROM scores s JOIN results r ON r.id = s.result_id "
                       "WHERE s.id > ? AND s.status = 'ok' ORDER BY s.id LIMIT ?",
                       [after_id, _capped(limit, MAX_REFILL_ROWS)])
    return [(int(r[0]), float(r[1]), str(r[2]), str(r[3]), str(r[4]), None if r[5] is None else float(r[5]),
             float(r[6]), float(r[7]), float(r[8]), str(r[9])) for r in rows]


async def first_score_id_since(fetch: Fetch, since: float) -> int:
    """The lowest score id stored at or after ``since``; one past the highest id when none is
    (so ``scores_after(first - 1, …)`` starts the window, and an empty store gives 1)."""
    rows = await fetch("SELECT coalesce((SELECT min(id) FROM scores WHERE timestamp >= ?), "
                       "(SELECT coalesce(max(id), 0) + 1 FROM scores))", [since])
    return int(rows[0][0])


async def count(fetch: Fetch) -> int:
    """Number of stored score rows."""
    rows = await fetch("SELECT count(*) FROM scores", [])
    return int(rows[0][0])


class StoreReads(ABC):
    """The read surface both stores share, over the store's :meth:`_fetch`; ``_risk_metrics``
    names the metrics whose value grows with risk (they order the worst-first reads)."""

    _risk_metrics: tuple[str, ...]

    @abstractmethod
    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        """Run one read (:data:`Fetch`); raises ``RuntimeError`` while the store is not running."""

    async def evaluations(self, *, metric: str | None = None, outcome: str | None = None,
                          since: float | None = None, limit: int = 100) -> list[StoredEvaluation]:
        """Stored scores matching every given filter, newest first; at most ``limit`` (≤ 1000)."""
        return await evaluations(self._fetch, metric=metric, outcome=outcome, since=since, limit=limit)

    async def worst_recent(self, *, since: float, limit: int = 20) -> list[StoredEvaluation]:
        """The worst scored (status ``ok``) evaluations since ``since``.

        Badness order: defects before passes; then by goodness ascending, where goodness is the
        value's position on its scale, (value - low) / (high - low), flipped (1 - position) for
        the metrics where higher is worse (severities, risk flags), so a severity 7 ranks like a
        groundedness 1; a degenerate scale ranks last; ties newest first.
        """
        return await worst_recent(self._fetch, since=since, limit=limit, risk=self._risk_metrics)

    async def worst_turns(self, *, since: float, metric: str | None = None, limit: int = 20) -> list[StoredTurn]:
        """The worst turns since ``since`` (of ``metric`` when given), one entry per turn with all
        its scores and documents (``exporters.turn_queries.worst_turns``); at most ``limit``."""
        return await worst_turns(self._fetch, since=since, metric=metric, limit=_capped(limit),
                                 risk=self._risk_metrics)

    async def outcome_reasons(self, *, since: float) -> list[OutcomeReason]:
        """Skipped and failed evaluations since ``since`` by metric and cause."""
        return await outcome_reasons(self._fetch, since=since)

    async def scores_since(self, since: float) -> list[tuple[float, str, str, str, float, float | None]]:
        """``(timestamp, metric, service, outcome, weight, value)`` of every score since ``since``,
        oldest first. Past 1,000,000 rows the newest million (what short windows need most)."""
        return await scores_since(self._fetch, since)

    async def scores_after(self, after_id: int, limit: int) -> list[ScoreRow]:
        """:data:`ScoreRow` ``(score id, timestamp, metric, service, outcome, weight, value)`` of
        the scores with an id above ``after_id``, in id order, at most ``limit``: a reader that
        keeps the last id it saw reads every score once (ids become visible in order)."""
        return await scores_after(self._fetch, after_id, limit)

    async def observations_after(self, after_id: int, limit: int) -> list[ObservationRow]:
        """:data:`ObservationRow` of the scored evaluations with a score id above ``after_id``, in
        id order, at most ``limit``: the fleet-wide input of the release comparisons."""
        return await observations_after(self._fetch, after_id, limit)

    async def first_score_id_since(self, since: float) -> int:
        """The lowest score id stored at or after ``since`` (one past the highest when none)."""
        return await first_score_id_since(self._fetch, since)

    async def count(self) -> int:
        """Number of stored score rows."""
        return await count(self._fetch)
