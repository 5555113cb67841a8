"""The result store's columns, declared once: what each holds, where its value comes from, and
the schema version that added it.

Everything else is derived from these tables: the ``CREATE``/``ALTER`` statements of each schema
version, the ``INSERT`` statements (named parameters), and the reads, which map columns to the
record fields of the same name. Adding a column is one :class:`Column` here (with ``since`` = the
new :data:`SCHEMA_VERSION`), plus a field of that name on a record type if a read should return it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from exporters.labels import recorded_labels
from exporters.turn_queries import encode_documents
from monitor.model import EvaluationResult, Score

__all__ = ["Column", "RESULT_COLUMNS", "SCORE_COLUMNS", "SCHEMA_VERSION", "MIGRATIONS", "INSERT_RESULT",
           "INSERT_SCORE", "result_values", "score_values", "cut", "finite"]

_TRUNCATED = "…"


def cut(text: str | None, limit: int) -> str | None:
    """``text`` shortened to ``limit`` characters (the last one an ellipsis)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + _TRUNCATED


def finite(value: float | None) -> float | None:
    # SQLite stores NaN as NULL and would turn an infinite weight into a REAL inf; keep both out.
    return value if value is None or math.isfinite(value) else None


def _labels(result: EvaluationResult) -> str:
    return json.dumps(recorded_labels(result.turn), ensure_ascii=False, sort_keys=True)


# What a result row is written from: (timestamp, result, max_chars); a score row: (timestamp, score, max_chars).
ResultSource = Callable[[float, EvaluationResult, int], Any]
ScoreSource = Callable[[float, Score, int], Any]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    sql: str  # type and constraints, as in CREATE TABLE
    source: Callable[..., Any] | None = None  # None: set by SQLite (ids) or by the caller (result_id)
    since: int = 1  # the schema version that added it; 1 = the first schema
    default: str = ""  # SQL default that fills existing rows when a later version adds the column


RESULT_COLUMNS: tuple[Column, ...] = (
    Column("id", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    Column("timestamp", "REAL NOT NULL", lambda ts, r, n: ts),
    Column("trace_id", "TEXT NOT NULL", lambda ts, r, n: r.turn.trace_id),
    Column("span_id", "TEXT", lambda ts, r, n: r.turn.chat_span_id),
    Column("conversation_id", "TEXT NOT NULL", lambda ts, r, n: r.turn.conversation_id),
    Column("service", "TEXT NOT NULL", lambda ts, r, n: r.turn.service),
    Column("labels", "TEXT NOT NULL", lambda ts, r, n: _labels(r)),
    Column("weight", "REAL NOT NULL", lambda ts, r, n: finite(r.weight) or 0.0),
    Column("sampling_policy", "TEXT NOT NULL", lambda ts, r, n: r.sampling_policy),
    Column("question", "TEXT NOT NULL", lambda ts, r, n: cut(r.turn.question, n)),
    Column("answer", "TEXT NOT NULL", lambda ts, r, n: cut(r.turn.answer, n)),
    Column("turn_start_unix_nano", "INTEGER NOT NULL", lambda ts, r, n: r.turn.start_time_unix_nano),
    Column("documents", "TEXT NOT NULL", lambda ts, r, n: encode_documents(r.turn.documents, n), since=3,
           default="'[]'"),
)

SCORE_COLUMNS: tuple[Column, ...] = (
    Column("id", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    Column("result_id", "INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE"),
    Column("timestamp", "REAL NOT NULL", lambda ts, s, n: ts),
    Column("metric", "TEXT NOT NULL", lambda ts, s, n: s.metric),
    Column("outcome", "TEXT NOT NULL", lambda ts, s, n: s.outcome),
    Column("value", "REAL", lambda ts, s, n: finite(s.value)),
    Column("scale_low", "REAL NOT NULL", lambda ts, s, n: s.scale[0]),
    Column("scale_high", "REAL NOT NULL", lambda ts, s, n: s.scale[1]),
    Column("label", "TEXT", lambda ts, s, n: s.label),
    Column("reason", "TEXT", lambda ts, s, n: cut(s.reason, n)),
    Column("status", "TEXT NOT NULL", lambda ts, s, n: s.status),
    Column("error_type", "TEXT", lambda ts, s, n: s.error_type),
)

_INDEXES = """
CREATE INDEX results_timestamp ON results(timestamp);
CREATE INDEX scores_result ON scores(result_id);
CREATE INDEX scores_timestamp ON scores(timestamp);
CREATE INDEX scores_metric_timestamp ON scores(metric, timestamp);
CREATE INDEX scores_outcome_timestamp ON scores(outcome, timestamp)"""
# Version 2: the evaluation backlog (sampled turns not yet evaluated; payloads by monitor.turn_codec).
_PENDING = """CREATE TABLE pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL UNIQUE,
    created REAL NOT NULL,
    payload TEXT NOT NULL
)"""
_TABLES = {"results": RESULT_COLUMNS, "scores": SCORE_COLUMNS}
_EXTRA = {1: (_INDEXES,), 2: (_PENDING,)}  # statements that are not column additions, by version

SCHEMA_VERSION = max(max(c.since for cols in _TABLES.values() for c in cols), *_EXTRA)


def _statements(version: int) -> list[str]:
    """What takes a database from ``version - 1`` to ``version``."""
    if version == 1:
        out = [f"CREATE TABLE {table} (\n    " + ",\n    ".join(f"{c.name} {c.sql}" for c in cols if c.since == 1)
               + "\n)" for table, cols in _TABLES.items()]
    else:
        out = [f"ALTER TABLE {table} ADD COLUMN {c.name} {c.sql}" + (f" DEFAULT {c.default}" if c.default else "")
               for table, cols in _TABLES.items() for c in cols if c.since == version]
    for block in _EXTRA.get(version, ()):
        out.extend(s.strip() for s in block.split(";") if s.strip())
    return out


MIGRATIONS: dict[int, tuple[str, ...]] = {
    found: tuple(s for v in range(found + 1, SCHEMA_VERSION + 1) for s in _statements(v))
    for found in range(SCHEMA_VERSION)}
"""The statements that bring a database at ``user_version`` N (0: a new file) up to date."""


def _insert(table: str, columns: Sequence[Column], extra: Sequence[str] = ()) -> str:
    names = [*extra, *(c.name for c in columns if c.source is not None)]
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})"


INSERT_RESULT = _insert("results", RESULT_COLUMNS)
INSERT_SCORE = _insert("scores", SCORE_COLUMNS, extra=("result_id",))


def result_values(timestamp: float, result: EvaluationResult, max_chars: int) -> dict[str, Any]:
    return {c.name: c.source(timestamp, result, max_chars) for c in RESULT_COLUMNS if c.source is not None}


def score_values(result_id: int, timestamp: float, score: Score, max_chars: int) -> dict[str, Any]:
    values = {c.name: c.source(timestamp, score, max_chars) for c in SCORE_COLUMNS if c.source is not None}
    values["result_id"] = result_id
    return values
