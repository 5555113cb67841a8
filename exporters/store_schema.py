"""The result store's columns, declared once: what each holds, where its value comes from, and
the schema version that added it.

Everything else is derived from these tables, for each dialect (SQLite, PostgreSQL): the
``CREATE``/``ALTER`` statements of each schema version, the ``INSERT`` statements (named
parameters), and the reads, which map columns to the record fields of the same name. A column has a
portable type (``real`` is ``REAL`` in SQLite and ``DOUBLE PRECISION`` in PostgreSQL, ``id`` an
``AUTOINCREMENT`` or an identity column), so one declaration serves both stores. Adding a column
is one :class:`Column` here (with ``since`` = the new :data:`SCHEMA_VERSION`), plus a field of that
name on a record type if a read should return it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from exporters.labels import recorded_labels
from exporters.turn_queries import encode_documents
from monitor.model import EvaluationResult, Score

__all__ = ["Column", "Table", "DIALECTS", "RESULT_COLUMNS", "SCORE_COLUMNS", "PENDING_COLUMNS", "VERDICT_COLUMNS",
           "TABLES",
           "SCHEMA_VERSION", "MIGRATIONS", "migrations", "INSERT_RESULT", "INSERT_SCORE", "insert_result",
           "insert_score", "result_values", "score_values", "cut", "finite"]

_TRUNCATED = "…"


def cut(text: str | None, limit: int) -> str | None:
    """``text`` shortened to ``limit`` characters (the last one an ellipsis)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + _TRUNCATED


def finite(value: float | None) -> float | None:
    # SQLite stores NaN as NULL and would turn an infinite weight into a REAL inf; keep both out.
    return value if value is None or math.isfinite(value) else None


def _detail(score: Score, key: str) -> str | None:
    value = score.details.get(key)
    return value[:200] if isinstance(value, str) else None


def _labels(result: EvaluationResult) -> str:
    return json.dumps(recorded_labels(result.turn), ensure_ascii=False, sort_keys=True)


DIALECTS = ("sqlite", "postgresql")
# Each column's portable type, rendered per dialect. "id": the table's own key, assigned by the
# database and never reused; "time": a database timestamp (lease expiry, compared with now()).
_TYPES: dict[str, dict[str, str]] = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "integer": "INTEGER", "text": "TEXT",
               "time": "REAL"},
    "postgresql": {"id": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "real": "DOUBLE PRECISION",
                   "integer": "BIGINT", "text": "TEXT", "time": "TIMESTAMPTZ"},
}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # a key of _TYPES: id, real, integer, text, time
    source: Callable[..., Any] | None = None  # None: set by the database (ids) or by the caller
    since: int = 1  # the schema version that added it; 1 = the first schema
    default: str = ""  # SQL default that fills existing rows when a later version adds the column
    nullable: bool = False
    unique: bool = False
    references: str = ""  # "results(id)": the row goes with the one it points at

    def render(self, dialect: str) -> str:
        """The column's definition in ``CREATE TABLE`` / ``ADD COLUMN`` for ``dialect``."""
        sql = f"{self.name} {_TYPES[dialect][self.type]}"
        if self.type != "id" and not self.nullable:
            sql += " NOT NULL"
        if self.unique:
            sql += " UNIQUE"
        if self.references:
            sql += f" REFERENCES {self.references} ON DELETE CASCADE"
        if self.default:
            sql += f" DEFAULT {self.default}"
        return sql


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    since: int = 1  # the schema version that created it


RESULT_COLUMNS: tuple[Column, ...] = (
    Column("id", "id"),
    Column("timestamp", "real", lambda ts, r, n: ts),
    Column("trace_id", "text", lambda ts, r, n: r.turn.trace_id),
    Column("span_id", "text", lambda ts, r, n: r.turn.chat_span_id, nullable=True),
    Column("conversation_id", "text", lambda ts, r, n: r.turn.conversation_id),
    Column("service", "text", lambda ts, r, n: r.turn.service),
    Column("labels", "text", lambda ts, r, n: _labels(r)),
    Column("weight", "real", lambda ts, r, n: finite(r.weight) or 0.0),
    Column("sampling_policy", "text", lambda ts, r, n: r.sampling_policy),
    Column("question", "text", lambda ts, r, n: cut(r.turn.question, n)),
    Column("answer", "text", lambda ts, r, n: cut(r.turn.answer, n)),
    Column("turn_start_unix_nano", "integer", lambda ts, r, n: r.turn.start_time_unix_nano),
    Column("documents", "text", lambda ts, r, n: encode_documents(r.turn.documents, n), since=3,
           default="'[]'"),
)

SCORE_COLUMNS: tuple[Column, ...] = (
    Column("id", "id"),
    Column("result_id", "integer", references="results(id)"),
    Column("timestamp", "real", lambda ts, s, n: ts),
    Column("metric", "text", lambda ts, s, n: s.metric),
    Column("outcome", "text", lambda ts, s, n: s.outcome),
    Column("value", "real", lambda ts, s, n: finite(s.value), nullable=True),
    Column("scale_low", "real", lambda ts, s, n: s.scale[0]),
    Column("scale_high", "real", lambda ts, s, n: s.scale[1]),
    Column("label", "text", lambda ts, s, n: s.label, nullable=True),
    Column("reason", "text", lambda ts, s, n: cut(s.reason, n), nullable=True),
    Column("status", "text", lambda ts, s, n: s.status),
    Column("error_type", "text", lambda ts, s, n: s.error_type, nullable=True),
    # Which judge model and prompt produced the score (monitor.evaluation.judge_identity); NULL for
    # local metrics and for rows written before version 6.
    Column("judge_model", "text", lambda ts, s, n: _detail(s, "judge_model"), since=6, nullable=True),
    Column("prompt_version", "text", lambda ts, s, n: _detail(s, "prompt_version"), since=6, nullable=True),
)

# The evaluation backlog: sampled turns not yet evaluated (payloads by monitor.turn_codec). In a
# fleet each row is claimed by one replica (claimant) until its lease runs out (lease_until).
PENDING_COLUMNS: tuple[Column, ...] = (
    Column("seq", "id", since=2),
    Column("trace_id", "text", since=2, unique=True),
    Column("created", "real", since=2),
    Column("payload", "text", since=2),
    Column("claimant", "text", since=4, nullable=True),
    Column("lease_until", "time", since=4, nullable=True),
)

# People's verdicts on judged turns (monitor.feedback): one row per (trace, metric, reviewer), the
# reviewer an opaque hash. Joined with ``scores`` by trace id and metric, never by row id: the
# judge's result may be stored after the verdict.
VERDICT_COLUMNS: tuple[Column, ...] = (
    Column("id", "id", since=5),
    Column("trace_id", "text", since=5),
    Column("metric", "text", since=5),
    Column("verdict", "text", since=5, nullable=True),
    Column("value", "real", since=5, nullable=True),
    Column("reviewer", "text", since=5),
    Column("source", "text", since=5),
    Column("at", "real", since=5),
    Column("inclusion_probability", "real", since=5, nullable=True),
)

TABLES: tuple[Table, ...] = (Table("results", RESULT_COLUMNS), Table("scores", SCORE_COLUMNS),
                             Table("pending", PENDING_COLUMNS, since=2),
                             Table("human_verdicts", VERDICT_COLUMNS, since=5))

_INDEXES = """
CREATE INDEX IF NOT EXISTS results_timestamp ON results(timestamp);
CREATE INDEX IF NOT EXISTS scores_result ON scores(result_id);
CREATE INDEX IF NOT EXISTS scores_timestamp ON scores(timestamp);
CREATE INDEX IF NOT EXISTS scores_metric_timestamp ON scores(metric, timestamp);
CREATE INDEX IF NOT EXISTS scores_outcome_timestamp ON scores(outcome, timestamp)"""
# Version 4: exactly once. One result per trace, one score per (result, metric): a repeated write
# (a turn evaluated again after a crash or a lease hand-over) is a conflict, skipped and counted.
# Duplicates an older file may hold go first, keeping the first write.
_EXACTLY_ONCE = """
DELETE FROM results WHERE id NOT IN (SELECT min(id) FROM results GROUP BY trace_id);
DELETE FROM scores WHERE id NOT IN (SELECT min(id) FROM scores GROUP BY result_id, metric);
CREATE UNIQUE INDEX IF NOT EXISTS results_trace ON results(trace_id);
CREATE UNIQUE INDEX IF NOT EXISTS scores_result_metric ON scores(result_id, metric);
DROP INDEX IF EXISTS scores_result;
CREATE INDEX IF NOT EXISTS pending_lease ON pending(lease_until)"""
_VERDICT_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS human_verdicts_once ON human_verdicts(trace_id, metric, reviewer);
CREATE INDEX IF NOT EXISTS human_verdicts_at ON human_verdicts(at)"""
# Statements that are not tables or columns, by version.
_EXTRA = {1: (_INDEXES,), 4: (_EXACTLY_ONCE,), 5: (_VERDICT_INDEXES,)}

SCHEMA_VERSION = max(max(c.since for t in TABLES for c in t.columns), *_EXTRA)


def _statements(version: int, dialect: str) -> list[str]:
    """What takes a database from ``version - 1`` to ``version``. Idempotent (``IF NOT EXISTS``),
    so a database that already has part of a version is completed, not refused."""
    out = []
    for table in TABLES:
        if table.since == version:
            out.append(f"CREATE TABLE IF NOT EXISTS {table.name} (\n    " + ",\n    ".join(
                c.render(dialect) for c in table.columns if c.since <= version) + "\n)")
        elif table.since < version:
            # SQLite has no ADD COLUMN IF NOT EXISTS: its store skips a column the table has.
            guard = "IF NOT EXISTS " if dialect == "postgresql" else ""
            out += [f"ALTER TABLE {table.name} ADD COLUMN {guard}{c.render(dialect)}"
                    for c in table.columns if c.since == version]
    for block in _EXTRA.get(version, ()):
        out.extend(s.strip() for s in block.split(";") if s.strip())
    return out


def migrations(dialect: str) -> dict[int, tuple[str, ...]]:
    """The statements that bring a database at schema version N (0: a new one) up to date."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect {dialect!r} is not one of {DIALECTS}")
    return {found: tuple(s for v in range(found + 1, SCHEMA_VERSION + 1) for s in _statements(v, dialect))
            for found in range(SCHEMA_VERSION)}


MIGRATIONS = migrations("sqlite")
"""SQLite's: from ``user_version`` N to :data:`SCHEMA_VERSION`."""


def _insert(table: str, columns: Sequence[Column], dialect: str, conflict: str,
            extra: Sequence[str] = (), returning: str = "") -> str:
    names = [*extra, *(c.name for c in columns if c.source is not None)]
    marks = [f"%({n})s" if dialect == "postgresql" else f":{n}" for n in names]
    sql = (f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(marks)}) "
           f"ON CONFLICT ({conflict}) DO NOTHING")
    return sql + (f" RETURNING {returning}" if returning else "")


def insert_result(dialect: str) -> str:
    """Insert one result; a second result of the same trace is skipped (PostgreSQL: returns no id)."""
    return _insert("results", RESULT_COLUMNS, dialect, "trace_id",
                   returning="id" if dialect == "postgresql" else "")


def insert_score(dialect: str) -> str:
    """Insert one score (``result_id`` given); a second score of the same metric is skipped."""
    return _insert("scores", SCORE_COLUMNS, dialect, "result_id, metric", extra=("result_id",))


INSERT_RESULT = insert_result("sqlite")
INSERT_SCORE = insert_score("sqlite")


def result_values(timestamp: float, result: EvaluationResult, max_chars: int) -> dict[str, Any]:
    return {c.name: c.source(timestamp, result, max_chars) for c in RESULT_COLUMNS if c.source is not None}


def score_values(result_id: int, timestamp: float, score: Score, max_chars: int) -> dict[str, Any]:
    values = {c.name: c.source(timestamp, score, max_chars) for c in SCORE_COLUMNS if c.source is not None}
    values["result_id"] = result_id
    return values
