"""Turn-level reads of the result store: the worst recent turns with all their scores and
retrieved documents, and why evaluations were skipped or failed.

``/api/worst`` lists scores, so one bad turn judged on eight metrics fills eight of its slots and
a noisy metric crowds out the others. An on-call engineer wants turns: one entry per turn, its
failing metrics together, the documents the answer was built from, optionally restricted to the
metric being investigated. These are plain functions over a :data:`Fetch` (run one query off the
event loop, return its rows), written once for both stores: the SQL uses ``?`` placeholders and
only what SQLite and PostgreSQL share (no boolean aggregates), and the PostgreSQL store converts
the placeholders.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import Any, Awaitable, Callable, Collection, Sequence

from monitor.model import Document

__all__ = ["Fetch", "goodness", "StoredScore", "StoredDocument", "StoredTurn", "OutcomeReason", "encode_documents",
           "worst_turns", "outcome_reasons", "MAX_STORED_DOCUMENTS", "MAX_DOCUMENT_CHARS"]

MAX_STORED_DOCUMENTS = 10
"""Documents kept per turn (the first ones, in retrieval order)."""
MAX_DOCUMENT_CHARS = 1000
"""Characters kept per document (``exporters.store.max_text_chars`` when smaller)."""
_MAX_REASON_ROWS = 500

Fetch = Callable[[str, Sequence[Any]], Awaitable[list[Sequence[Any]]]]
"""Run one query with ``?`` placeholders off the event loop; its rows as sequences."""


@dataclass(frozen=True, slots=True)
class StoredScore:
    metric: str
    outcome: str
    status: str
    value: float | None
    scale: tuple[float, float]
    label: str | None
    reason: str | None
    error_type: str | None


@dataclass(frozen=True, slots=True)
class StoredDocument:
    id: str | None
    title: str | None
    content: str | None
    score: float | None


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One evaluated turn: its text, documents and every score it got, worst first."""

    result_id: int
    timestamp: float
    trace_id: str
    span_id: str | None
    conversation_id: str
    service: str
    labels: dict[str, str]
    weight: float
    sampling_policy: str
    question: str
    answer: str
    turn_start_unix_nano: int
    documents: tuple[StoredDocument, ...]
    scores: tuple[StoredScore, ...]


@dataclass(frozen=True, slots=True)
class OutcomeReason:
    """How many ``outcome`` (skipped | error) evaluations of ``metric`` share ``key`` (the error
    type, or the skip reason), with one full reason as an example."""

    metric: str
    outcome: str
    key: str
    count: int
    example: str | None


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def encode_documents(documents: Sequence[Document], max_chars: int) -> str:
    """The stored JSON of a turn's documents: the first :data:`MAX_STORED_DOCUMENTS`, each cut."""
    limit = min(max_chars, MAX_DOCUMENT_CHARS)
    kept = [{"id": d.id, "title": d.title, "content": _cut(d.content, limit),
             "score": d.score if d.score is not None and math.isfinite(d.score) else None}
            for d in documents[:MAX_STORED_DOCUMENTS]]
    return json.dumps(kept, ensure_ascii=False)


def _documents(text: str | None) -> tuple[StoredDocument, ...]:
    try:
        items = json.loads(text or "[]")
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    out = []
    for item in items:
        if isinstance(item, dict):
            score = item.get("score")
            out.append(StoredDocument(item.get("id"), item.get("title"), item.get("content"),
                                      float(score) if isinstance(score, (int, float)) else None))
    return tuple(out)


def _columns(record: type, renamed: dict[str, str]) -> list[str]:
    # The columns named like the record's fields (``renamed`` maps a field to its column(s)).
    out: list[str] = []
    for f in fields(record):
        if f.name in renamed:
            if renamed[f.name]:
                out.extend(renamed[f.name].split(", "))
        else:
            out.append(f.name)
    return out


_TURN_NAMES = _columns(StoredTurn, {"result_id": "id", "scores": ""})
_SCORE_NAMES = _columns(StoredScore, {"scale": "scale_low, scale_high"})
_TURN_COLUMNS = ", ".join(_TURN_NAMES)
_SCORE_COLUMNS = ", ".join("s." + c for c in _SCORE_NAMES)


def goodness(risk: Sequence[str]) -> tuple[str, list[str]]:
    """SQL and its parameters: a score's position on its scale, 0 = worst, flipped for the
    higher-is-worse metrics ``risk``; NULL for a degenerate scale."""
    marks = ", ".join("?" * len(risk)) or "NULL"
    return ("CASE WHEN s.scale_high > s.scale_low THEN "
            f"(CASE WHEN s.metric IN ({marks}) THEN s.scale_high - s.value ELSE s.value - s.scale_low END) "
            "/ (s.scale_high - s.scale_low) END"), list(risk)


_DEFECT = "CASE WHEN s.outcome = 'defect' THEN 1 ELSE 0 END"


async def _ranked_ids(fetch: Fetch, since: float, metric: str | None, limit: int, risk: Sequence[str]) -> list[int]:
    # Rank turns by their scored evaluations (of ``metric`` only, when given): a defect first,
    # then the lowest goodness, then more defects, then the newest.
    good, good_params = goodness(risk)
    where = "s.timestamp >= ? AND s.status = 'ok'" + (" AND s.metric = ?" if metric else "")
    sql = (f"SELECT s.result_id, MAX({_DEFECT}) AS bad, MIN({good}) AS worst, "
           f"SUM({_DEFECT}) AS defects, MAX(s.timestamp) AS ts FROM scores s "
           f"WHERE {where} GROUP BY s.result_id "
           "ORDER BY bad DESC, worst ASC NULLS LAST, defects DESC, ts DESC, s.result_id DESC LIMIT ?")
    params: list[Any] = [*good_params, since, *([metric] if metric else []), limit]
    return [int(r[0]) for r in await fetch(sql, params)]


async def worst_turns(fetch: Fetch, *, since: float, metric: str | None, limit: int,
                      risk: Collection[str]) -> list[StoredTurn]:
    """The worst turns evaluated since ``since`` (see :func:`_ranked_ids`), each with all its
    scores (defects first, then worst goodness) and documents."""
    risk_list = tuple(sorted(risk))
    ids = await _ranked_ids(fetch, since, metric, limit, risk_list)
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    results = {r["id"]: r for r in (dict(zip(_TURN_NAMES, row)) for row in await fetch(
        f"SELECT {_TURN_COLUMNS} FROM results WHERE id IN ({marks})", ids))}
    good, good_params = goodness(risk_list)
    scores: dict[int, list[StoredScore]] = {}
    for row in await fetch(
            f"SELECT s.result_id, {_SCORE_COLUMNS} FROM scores s WHERE s.result_id IN ({marks}) "
            f"ORDER BY {_DEFECT} DESC, CASE WHEN s.status = 'ok' THEN 1 ELSE 0 END DESC, "
            f"{good} ASC NULLS FIRST, s.metric",
            [*ids, *good_params]):
        r = dict(zip(_SCORE_NAMES, row[1:]))
        r["scale"] = (r.pop("scale_low"), r.pop("scale_high"))
        scores.setdefault(int(row[0]), []).append(StoredScore(**r))
    turns = []
    for rid in ids:
        found = results.get(rid)
        if found is None:  # deleted by retention between the two reads
            continue
        values = dict(found)
        values["result_id"] = values.pop("id")
        values["documents"] = _documents(values["documents"])
        labels = json.loads(values["labels"])
        values["labels"] = labels if isinstance(labels, dict) else {}
        turns.append(StoredTurn(**values, scores=tuple(scores.get(rid, ()))))
    return turns


async def outcome_reasons(fetch: Fetch, *, since: float) -> list[OutcomeReason]:
    """Skipped and failed evaluations since ``since`` grouped by metric and cause, most first.
    Errors group by error type (bounded: the judge outcomes), skips by their reason text."""
    rows = await fetch(
        "SELECT s.metric, s.outcome, CASE WHEN s.outcome = 'error' THEN coalesce(s.error_type, s.reason, '') "
        "ELSE coalesce(s.reason, '') END AS cause, count(*), max(s.reason) FROM scores s "
        "WHERE s.timestamp >= ? AND s.outcome IN ('skipped', 'error') "
        "GROUP BY s.metric, s.outcome, cause ORDER BY count(*) DESC, s.metric LIMIT ?",
        [since, _MAX_REASON_ROWS])
    return [OutcomeReason(r[0], r[1], r[2], int(r[3]), r[4]) for r in rows]
