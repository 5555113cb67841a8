"""``/api/turns``: the worst recent turns, one entry per turn, for the status page.

``GET /api/turns?metric=&since=&limit=`` → ``{"items": [T, ...], "count": n, "query": {...}}``,
worst first. Ranking (``exporters.turn_queries``): turns with a defect first, then by their
lowest position on a metric's scale (flipped for higher-is-worse metrics), then by number of
defects, then newest; with ``metric`` only that metric's scores rank the turns, but each entry
still lists all of its scores. ``since`` defaults to the longest window, ``limit`` to 20.

T: ``result_id``, ``timestamp`` (unix s, when evaluated), ``trace_id``, ``span_id``,
``conversation_id``, ``service``, ``labels``, ``weight``, ``sampling_policy``, ``turn_start``
(unix s or null), ``question``/``answer`` (excerpts, with ``*_truncated``), ``failing`` (metric
ids with a defect), ``scores`` ([{``metric``, ``outcome``, ``status``, ``value``, ``scale``,
``label``, ``reason``, ``error_type``}], defects first), ``documents`` ([{``id``, ``title``,
``content`` (excerpt), ``score``}], at most 10 as stored).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from exporters.turn_queries import StoredDocument, StoredScore, StoredTurn
from monitor.admin.api import QueryError, parse_limit, parse_since, single_values

__all__ = ["TurnsQuery", "TurnView", "WorstTurnsSource", "parse_turns_query", "turn_item"]

_METRIC_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")
_DOCUMENT_CHARS = 600

# The store's own records: the admin serves what the exporters keep (docs/architecture.md).
ScoreView = StoredScore
DocumentView = StoredDocument
TurnView = StoredTurn


class WorstTurnsSource(Protocol):
    async def worst_turns(self, *, since: float, metric: str | None = None,
                          limit: int = 20) -> Sequence[TurnView]: ...


@dataclass(frozen=True, slots=True)
class TurnsQuery:
    since: float
    metric: str | None = None
    limit: int = 20


def parse_turns_query(params: Mapping[str, str], now: float, default_seconds: float) -> TurnsQuery:
    """Validate ``/api/turns`` parameters. Raises :class:`~monitor.admin.api.QueryError`."""
    values = single_values(params, ("metric", "since", "limit"))
    metric = values.get("metric")
    if metric is not None and not _METRIC_ID.match(metric):
        raise QueryError("metric", "expected a metric id (letters, digits, _ . : -)")
    since = parse_since(values["since"], now) if "since" in values else now - default_seconds
    return TurnsQuery(since, metric, parse_limit(values["limit"]) if "limit" in values else 20)


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _excerpt(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)].rstrip() + "…", True


def turn_item(turn: TurnView, excerpt_chars: int = 500) -> dict[str, Any]:
    """One turn as JSON (text cut to ``excerpt_chars``, documents to 600 characters)."""
    question, q_cut = _excerpt(turn.question, excerpt_chars)
    answer, a_cut = _excerpt(turn.answer, excerpt_chars)
    scores = [{"metric": s.metric, "outcome": s.outcome, "status": s.status, "value": _finite(s.value),
               "scale": [s.scale[0], s.scale[1]], "label": s.label, "reason": s.reason,
               "error_type": s.error_type} for s in turn.scores]
    documents = [{"id": d.id, "title": d.title, "content": _excerpt(d.content, _DOCUMENT_CHARS)[0],
                  "score": _finite(d.score)} for d in turn.documents]
    return {
        "result_id": turn.result_id, "timestamp": turn.timestamp, "trace_id": turn.trace_id,
        "span_id": turn.span_id, "conversation_id": turn.conversation_id, "service": turn.service,
        "labels": dict(turn.labels), "weight": _finite(turn.weight), "sampling_policy": turn.sampling_policy,
        "turn_start": turn.turn_start_unix_nano / 1e9 if turn.turn_start_unix_nano else None,
        "question": question, "question_truncated": q_cut, "answer": answer, "answer_truncated": a_cut,
        "failing": [s.metric for s in turn.scores if s.outcome == "defect"],
        "scores": scores, "documents": documents,
    }
