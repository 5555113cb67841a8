"""The review queue's contents: judged turns drawn for people to check and not reviewed yet.

For each judge metric and each side of the judge's verdict (``defect``, ``pass``) the queue reads
the newest stored evaluations of the lookback window (``review.lookback_hours``; the fleet's
store when it is shared, so every replica lists the same queue), keeps the pairs the stratified
draw includes (:class:`~monitor.feedback.review.ReviewDesign`), drops those a person has already
judged, and interleaves the strata so both sides of the verdict reach the reviewers however
lopsided the traffic. Each item names its inclusion probability: the agreement computed from the
verdicts is weighted back to all judged turns with it (monitor.feedback.join).

Bounded: at most ``MAX_ROWS_PER_STRATUM`` rows are read per stratum and ``review.max_items``
items answered.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping, Protocol, Sequence

from exporters.store_queries import StoredEvaluation
from monitor.feedback.review import STRATA, ReviewDesign, ReviewedPairs, ReviewKey

__all__ = ["ReviewQueue", "EvaluationReads", "MAX_ROWS_PER_STRATUM"]

MAX_ROWS_PER_STRATUM = 1000
_EXCERPT_CHARS = 1000


class EvaluationReads(Protocol):
    """The result store's read of stored evaluations (``exporters.store_queries.StoreReads``)."""

    async def evaluations(self, *, metric: str | None = None, outcome: str | None = None,
                          since: float | None = None, limit: int = 100) -> Sequence[StoredEvaluation]: ...


def _excerpt(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= _EXCERPT_CHARS:
        return text, False
    return text[: _EXCERPT_CHARS - 1].rstrip() + "…", True


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _item(row: StoredEvaluation, stratum: str, probability: float) -> dict[str, Any]:
    question, q_cut = _excerpt(row.question)
    answer, a_cut = _excerpt(row.answer)
    return {
        "trace_id": row.trace_id, "metric": row.metric, "stratum": stratum,
        "inclusion_probability": probability, "timestamp": row.timestamp, "service": row.service,
        "labels": dict(row.labels),
        "judge": {"verdict": row.outcome, "value": _finite(row.value), "scale": [row.scale[0], row.scale[1]],
                  "label": row.label, "reason": row.reason, "judge_model": row.judge_model,
                  "prompt_version": row.prompt_version},
        "question": question, "question_truncated": q_cut, "answer": answer, "answer_truncated": a_cut,
    }


def _interleave(groups: Sequence[Sequence[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if i < len(group):
                out.append(group[i])
                if len(out) >= limit:
                    return out
    return out


class ReviewQueue:
    """Builds the ``/api/review`` document. ``metrics``: the judge metrics (people review the
    judge); ``reviewed``: the verdict store's filter (None: nothing filtered, no verdicts kept);
    ``writable``: whether people can send verdicts (``admin.review_token`` set), for the page."""

    def __init__(self, design: ReviewDesign, store: EvaluationReads, metrics: Sequence[str], *,
                 reviewed: ReviewedPairs | None = None, writable: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self._design = design
        self._store = store
        self._metrics = tuple(dict.fromkeys(metrics))
        self._reviewed = reviewed
        self._writable = writable
        self._clock = clock

    @property
    def metrics(self) -> tuple[str, ...]:
        return self._metrics

    async def document(self, *, metric: str | None = None, limit: int | None = None) -> Mapping[str, Any]:
        """``{"items": [...], "count", "strata": [...], "writable", "lookback_hours", "at"}``; items
        newest first within each stratum, strata interleaved."""
        config = self._design.config
        limit = min(limit or config.max_items, config.max_items)
        now = self._clock()
        since = now - config.lookback_hours * 3600.0
        # Only the judge's metrics are reviewed: another id narrows the queue to nothing.
        metrics = self._metrics if metric is None else tuple(m for m in self._metrics if m == metric)
        groups: list[list[dict[str, Any]]] = []
        strata: list[dict[str, Any]] = []
        for m in metrics:
            for verdict in STRATA:
                p = self._design.probability(m, verdict)
                rows = (await self._store.evaluations(metric=m, outcome=verdict, since=since,
                                                      limit=MAX_ROWS_PER_STRATUM)) if p > 0 else ()
                drawn = [r for r in rows if self._design.drawn(r.trace_id, m, verdict)]
                groups.append([_item(r, verdict, p) for r in drawn])
                strata.append({"metric": m, "verdict": verdict, "probability": p, "judged": len(rows),
                               "drawn": len(drawn)})
        done = await self._done([(i["trace_id"], i["metric"]) for g in groups for i in g])
        for group, stratum in zip(groups, strata):
            group[:] = [i for i in group if (i["trace_id"], i["metric"]) not in done]
            stratum["waiting"] = len(group)
        items = _interleave(groups, limit)
        return {"items": items, "count": len(items), "strata": strata, "writable": self._writable,
                "lookback_hours": config.lookback_hours, "at": now}

    async def _done(self, keys: list[ReviewKey]) -> set[ReviewKey]:
        if self._reviewed is None or not keys:
            return set()
        return await self._reviewed.reviewed(keys)
