"""Doubles for the admin API tests: in-memory summary and store, a running admin server, and the
page's number formats re-done in Python (JavaScript ``toFixed`` rounds halves up)."""

from __future__ import annotations

import asyncio
import threading
import math
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, AsyncIterator, Sequence

from prometheus_client import CollectorRegistry

from exporters.result_store import StoredEvaluation
from exporters.turn_queries import OutcomeReason, StoredDocument, StoredScore, StoredTurn
from exporters.rolling import TrendPoint as Point  # the name the page and API tests build trends with
from exporters.rolling import WindowStats
from exporters.stats import Z_95, wilson_interval
from monitor.admin.server import AdminServer
from monitor.admin.config import AdminConfig

NOW = 1_800_000_000.0
HOSTILE = '<img src=x onerror="document.title=\'pwned\'"></script><script>document.title="pwned"</script>'


def window(name: str, seconds: float, evaluations: int, defects: int, mean: float = math.nan,
           errors: int = 0) -> WindowStats:
    """Unweighted stats the way the rolling counters compute them (NaN when nothing scored)."""
    if evaluations:
        lower, upper = wilson_interval(defects, evaluations, Z_95)
        rate = defects / evaluations
    else:
        rate = lower = upper = math.nan
    return WindowStats(name, seconds, evaluations, defects, errors, 0, float(evaluations), float(defects),
                       float(evaluations), rate, lower, upper, mean)


@dataclass
class FakeSummary:
    stats: dict[str, dict[str, WindowStats]]
    trends: dict[str, list[Point]] = field(default_factory=dict)
    windows: tuple[tuple[str, float], ...] = (("5m", 300.0), ("1h", 3600.0))
    since: dict[str, float] = field(default_factory=dict)
    trend_calls: list[tuple[str, int, float | None]] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, WindowStats]]:
        return self.stats

    def trend(self, metric: str, points: int = 60, seconds: float | None = None) -> list[Point]:
        self.trend_calls.append((metric, points, seconds))
        return self.trends.get(metric, [])

    def data_since(self) -> dict[str, float]:
        return dict(self.since)


def point(start: float, evaluations: int, defects: int, mean: float = math.nan) -> Point:
    """An unweighted trend point with its interval, as the rolling counters compute it."""
    if not evaluations:
        return Point(start, 0, math.nan, math.nan)
    lower, upper = wilson_interval(defects, evaluations, Z_95)
    return Point(start, evaluations, defects / evaluations, mean, lower, upper, float(evaluations),
                 float(defects), float(evaluations))


def row(id: int, metric: str = "groundedness", outcome: str = "defect", value: float | None = 1.0,
        question: str = "Where is my parcel?", answer: str = "On the moon.", reason: str | None = "Not in context.",
        timestamp: float = NOW - 60, scale: tuple[float, float] = (1.0, 5.0)) -> StoredEvaluation:
    status = "ok" if outcome in ("pass", "defect") else outcome
    return StoredEvaluation(id, timestamp, metric, outcome, value, scale, None, reason, status, None, 2.0,
                            "probabilistic", f"{id:032x}", f"{id:016x}", f"conv-{id}", "shop", {"route": "/chat"},
                            question, answer, int((timestamp - 1) * 1e9))


class FakeStore:
    """Filters like the real store; records the calls; ``gate`` (when set) holds queries open."""

    def __init__(self, rows: Sequence[StoredEvaluation], worst: Sequence[StoredEvaluation] | None = None,
                 turns: Sequence[StoredTurn] = (), reasons: Sequence[OutcomeReason] = ()) -> None:
        self.rows = list(rows)
        self.worst = list(rows if worst is None else worst)
        self.turns = list(turns)
        self.reasons = list(reasons)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        # The admin server answers on its own thread and loop: the gate is a threading.Event
        # waited on in a worker thread, and arrivals are signalled into the test's loop.
        self.gate: threading.Event | None = None
        self.waiting = 0
        self.arrived = asyncio.Event()
        self._test_loop = asyncio.get_running_loop()

    async def _hold(self) -> None:
        gate = self.gate
        if gate is not None:
            self.waiting += 1
            self._test_loop.call_soon_threadsafe(self.arrived.set)
            await asyncio.to_thread(gate.wait, 30)

    async def evaluations(self, *, metric: str | None = None, outcome: str | None = None,
                          since: float | None = None, limit: int = 100) -> list[StoredEvaluation]:
        self.calls.append(("evaluations", {"metric": metric, "outcome": outcome, "since": since, "limit": limit}))
        await self._hold()
        rows = [r for r in self.rows if (metric is None or r.metric == metric)
                and (outcome is None or r.outcome == outcome) and (since is None or r.timestamp >= since)]
        return sorted(rows, key=lambda r: -r.timestamp)[:limit]

    async def worst_recent(self, *, since: float, limit: int = 20) -> list[StoredEvaluation]:
        self.calls.append(("worst_recent", {"since": since, "limit": limit}))
        await self._hold()
        return [r for r in self.worst if r.timestamp >= since][:limit]

    async def worst_turns(self, *, since: float, metric: str | None = None, limit: int = 20) -> list[StoredTurn]:
        self.calls.append(("worst_turns", {"since": since, "metric": metric, "limit": limit}))
        await self._hold()
        return [t for t in self.turns if t.timestamp >= since
                and (metric is None or any(s.metric == metric for s in t.scores))][:limit]

    async def outcome_reasons(self, *, since: float) -> list[OutcomeReason]:
        self.calls.append(("outcome_reasons", {"since": since}))
        return list(self.reasons)


def stored_turn(rid: int, scores: Sequence[tuple[str, str, float | None, tuple[float, float]]], *,
                question: str = "How long do refunds take?", answer: str = "Ten weeks.",
                reason: str | None = "Not supported by the documents.", timestamp: float = NOW - 60,
                documents: Sequence[StoredDocument] = ()) -> StoredTurn:
    """A stored turn with ``scores`` as (metric, outcome, value, scale)."""
    made = tuple(StoredScore(m, o, "ok" if o in ("pass", "defect") else o, v, sc, None,
                             reason if o == "defect" else None, "JudgeTimeout" if o == "error" else None)
                 for m, o, v, sc in scores)
    return StoredTurn(rid, timestamp, f"{rid:032x}", f"{rid:016x}", f"conv-{rid}", "shop", {"route": "/chat"}, 1.0,
                      "rate_limit", question, answer, int((timestamp - 2) * 1e9), tuple(documents), made)


@asynccontextmanager
async def admin_server(token: str | None = None, **kwargs: Any) -> AsyncIterator[AdminServer]:
    config = AdminConfig(host="127.0.0.1", port=0, bearer_token=token)
    server = AdminServer(config, CollectorRegistry(), lambda: True, clock=lambda: NOW, **kwargs)
    await server.start()
    try:
        yield server
    finally:
        await server.shutdown(0.0)


def js_fixed(x: float, digits: int) -> str:
    """``Number.prototype.toFixed``: exact binary value, halves away from zero."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def page_rate(x: float | None) -> str:
    return "no data" if x is None else js_fixed(x * 100, 1) + "%"


def page_pct(x: float) -> str:
    return js_fixed(x * 100, 1) + "%"


def page_mean(x: float | None) -> str:
    return "\u2013" if x is None else js_fixed(x, 2)


def page_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else js_fixed(x, 2)


def page_score(item: dict[str, Any]) -> str:
    if item["value"] is None:
        return f"{item['outcome']} ({item['error_type']})" if item["error_type"] else item["outcome"]
    text = f"{page_num(item['value'])} on {page_num(item['scale'][0])}\u2013{page_num(item['scale'][1])}"
    return f"{text} \u00b7 {item['label']}" if item["label"] else text
