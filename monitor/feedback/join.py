"""Each person's verdict met with the judge's score for the same trace and metric, and counted.

The judge's side is looked up, in order, among the results this process produced recently (it is a
``ResultConsumer``), then in the result store (every replica's scores with PostgreSQL). A verdict
whose judge score is not there yet — a review tool may be faster than a sampled turn's evaluation,
or the score may be stored by another replica — waits in a bounded pending set: it joins when this
process produces the score, or when a poll of the store finds it; after ``pending_ttl_seconds`` it
is dropped and counted (``expired``), and past ``max_pending`` the oldest goes (``pending_full``).

Idempotent per (trace, metric, reviewer): with a store the table's unique key decides (across the
fleet), without one a bounded memory of recent keys. A repeated verdict is acknowledged as
``duplicate`` and counted nowhere else.

Everything runs on the pipeline's event loop; the admin server (another thread and loop) submits
through :meth:`VerdictJoin.submit_threadsafe`. The agreement gauges are recomputed from the store's
joined rows every ``refresh_seconds``, and soon after a local join; without a store, from the last
``max_recent`` joins in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from monitor.feedback.metrics import (AGREEMENT_TOTAL, HUMAN_VERDICTS, HUMAN_VERDICTS_DROPPED, AgreementBoard,
                                      ScoredPair, summarize)
from monitor.feedback.store import MAX_BATCH, JoinedRow, JudgeSide, VerdictStore
from monitor.feedback.verdicts import DefectRule, HumanVerdict
from monitor.model import EvaluationResult, ScoreStatus
from monitor.telemetry import QUEUE_DROPPED, Telemetry

__all__ = ["JoinState", "VerdictJoin", "InclusionProbability", "StoreUnavailable"]

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (trace id, metric)
VerdictKey = tuple[str, str, str]  # (trace id, metric, reviewer hash)
QUEUE = "human_verdicts"  # rag_monitor_queue_dropped_total{queue=…}: OTLP verdicts refused while too many wait
_MIN_REFRESH_GAP_SECONDS = 0.5  # a burst of joins costs one recomputation, not one each
MAX_JUDGE_MODELS = 10  # distinct judge_model label values per metric; later ones read "other"
_MAX_CHECK_SECONDS = 60.0  # the longest wait between two store look-ups of a pending verdict


@dataclass(slots=True)
class _Pending:
    verdict: HumanVerdict
    expires: float
    next_check: float
    interval: float


class InclusionProbability(Protocol):
    """The review queue's draw (``monitor.feedback.review.ReviewDesign``)."""

    def inclusion_probability(self, trace_id: str, metric: str, judge_verdict: str | None) -> float | None: ...


class StoreUnavailable(ConnectionError):
    """The result store could not take the verdict (the API answers 503; retry)."""


@dataclass(frozen=True, slots=True)
class JoinState:
    """What became of a submitted verdict: ``joined`` (with the judge's side and whether they
    agree), ``pending`` (the judge's score is not known yet) or ``duplicate``."""

    state: str
    judge_verdict: str | None = None
    judge_value: float | None = None
    agreement: str | None = None
    inclusion_probability: float | None = None

    def document(self) -> dict[str, object]:
        return {"state": self.state, "judge_verdict": self.judge_verdict, "judge_value": self.judge_value,
                "agreement": self.agreement, "inclusion_probability": self.inclusion_probability}


class VerdictJoin:
    """Component and ``ResultConsumer``: joins verdicts with judge scores and publishes agreement."""

    def __init__(self, rules: Mapping[str, DefectRule], judge_models: Mapping[str, str], board: AgreementBoard,
                 telemetry: Telemetry, *, store: VerdictStore | None = None,
                 design: InclusionProbability | None = None, clock: Callable[[], float] = time.time,
                 max_pending: int = 10_000, pending_ttl_seconds: float = 3600.0, poll_seconds: float = 2.0,
                 refresh_seconds: float = 30.0, window_seconds: float = 7 * 86400.0, max_recent: int = 50_000,
                 max_in_flight: int = 1000, retention_seconds: float | None = None) -> None:
        self._rules = rules
        self._models = judge_models
        self._board = board
        self._telemetry = telemetry
        self._store = store
        self._design = design
        self._clock = clock
        self._max_pending = max_pending
        self._ttl = pending_ttl_seconds
        self._poll = poll_seconds
        self._refresh = refresh_seconds
        self._window = window_seconds
        self._max_recent = max_recent
        self._max_in_flight = max_in_flight
        self._retention = retention_seconds  # verdicts older than the store's other rows go with them
        self._next_retention = 0.0
        self._recent: OrderedDict[Key, JudgeSide] = OrderedDict()
        # Oldest first (so also in expiry order: one TTL for all). ``_waiting`` indexes them by
        # (trace, metric), so a judge score finds its verdicts without a scan.
        self._pending: OrderedDict[VerdictKey, _Pending] = OrderedDict()
        self._waiting: dict[Key, set[VerdictKey]] = {}
        self._seen: OrderedDict[VerdictKey, None] = OrderedDict()  # idempotency without a store
        self._joined: deque[ScoredPair] = deque(maxlen=max_recent)  # the gauges' rows without a store
        self._in_flight: set[asyncio.Task[JoinState | None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._failing = False
        self._model_values: dict[str, set[str]] = {}

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if self._store is not None:
            await self._store.start()
        self._task = asyncio.create_task(self._run(), name="feedback-join")

    async def shutdown(self, deadline: float) -> None:
        """Stops polling; verdicts still pending stay stored (they join in the gauges later) but
        are not counted by this process."""
        task, self._task = self._task, None
        tasks, self._in_flight = list(self._in_flight), set()
        for t in (*tasks, *((task,) if task is not None else ())):
            t.cancel()
        await asyncio.gather(*tasks, *((task,) if task is not None else ()), return_exceptions=True)
        self._loop = None
        if self._store is not None:
            await self._store.shutdown(deadline)

    # -- intake ------------------------------------------------------------------------------------
    def offer(self, verdict: HumanVerdict) -> None:
        """From the OTLP tap, on the loop; never blocks. Refused and counted while too many wait."""
        if self._loop is None or len(self._in_flight) >= self._max_in_flight:
            self._telemetry.add(QUEUE_DROPPED, queue=QUEUE)
            return
        task = asyncio.create_task(self._offered(verdict))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _offered(self, verdict: HumanVerdict) -> JoinState | None:
        try:
            return await self.submit(verdict)
        except StoreUnavailable:
            return None  # counted in submit

    async def submit_threadsafe(self, verdict: HumanVerdict) -> JoinState:
        """:meth:`submit` from another thread's loop (the admin server)."""
        loop = self._loop
        if loop is None:
            raise StoreUnavailable("the verdict join is not running")
        try:
            future = asyncio.run_coroutine_threadsafe(self.submit(verdict), loop)
        except RuntimeError as exc:  # the pipeline's loop closed under us: shutting down
            raise StoreUnavailable("the monitor is shutting down") from exc
        return await asyncio.wrap_future(future)

    async def submit(self, verdict: HumanVerdict) -> JoinState:
        """Store the verdict and join it now if the judge's score is known, else leave it pending."""
        vkey = (verdict.trace_id, verdict.metric, verdict.reviewer)
        key = (verdict.trace_id, verdict.metric)
        if vkey in self._pending:
            return self._duplicate(verdict)
        judge = self._recent.get(key) or await self._look_up(key)
        p = self._probability(verdict.trace_id, verdict.metric, judge.outcome if judge else None, None)
        if self._store is not None:
            try:
                new = await self._store.save(verdict, p)
            except Exception as exc:
                self._telemetry.add(HUMAN_VERDICTS_DROPPED, reason="store_error")
                self._store_failed(exc)  # logged once per failing streak, counted every time
                raise StoreUnavailable(f"the result store did not take the verdict ({type(exc).__name__})") from exc
            self._store_ok()
            if not new:
                return self._duplicate(verdict)
        else:
            if vkey in self._seen:
                return self._duplicate(verdict)
            self._remember(self._seen, vkey, None)
        judge = judge or self._recent.get(key)  # a score may have arrived while the store was busy
        if judge is not None:
            self._telemetry.add(HUMAN_VERDICTS, source=verdict.source, state="joined")
            return self._count(verdict, judge)
        self._telemetry.add(HUMAN_VERDICTS, source=verdict.source, state="pending")
        self._hold(vkey, verdict)
        return JoinState("pending")

    def _duplicate(self, verdict: HumanVerdict) -> JoinState:
        self._telemetry.add(HUMAN_VERDICTS, source=verdict.source, state="duplicate")
        return JoinState("duplicate")

    def _remember(self, table: OrderedDict[VerdictKey, None], key: VerdictKey, value: None) -> None:
        table[key] = value
        while len(table) > self._max_recent:
            table.popitem(last=False)

    def _hold(self, vkey: VerdictKey, verdict: HumanVerdict) -> None:
        now = self._clock()
        self._pending[vkey] = _Pending(verdict, now + self._ttl, now + self._poll, self._poll)
        self._waiting.setdefault(vkey[:2], set()).add(vkey)
        while len(self._pending) > self._max_pending:
            self._unhold(next(iter(self._pending)))
            self._telemetry.add(HUMAN_VERDICTS_DROPPED, reason="pending_full")

    def _unhold(self, vkey: VerdictKey) -> HumanVerdict | None:
        entry = self._pending.pop(vkey, None)
        waiting = self._waiting.get(vkey[:2])
        if waiting is not None:
            waiting.discard(vkey)
            if not waiting:
                del self._waiting[vkey[:2]]
        return entry.verdict if entry is not None else None

    async def _look_up(self, key: Key) -> JudgeSide | None:
        if self._store is None:
            return None
        try:
            found = await self._store.judged([key])
        except Exception as exc:  # the verdict is kept pending; the poll will look again
            self._store_failed(exc)
            return None
        return found.get(key)

    def _probability(self, trace_id: str, metric: str, judge: str | None, stored: float | None) -> float | None:
        if stored is not None:
            return stored
        if self._design is None or judge is None:
            return None
        return self._design.inclusion_probability(trace_id, metric, judge)

    # -- the judge's side --------------------------------------------------------------------------
    def consume_result(self, result: EvaluationResult) -> None:
        trace_id = result.turn.trace_id
        for score in result.scores:
            if score.status != ScoreStatus.OK or score.value is None or score.metric not in self._rules:
                continue
            key = (trace_id, score.metric)
            stamped = score.details.get("judge_model")
            side = JudgeSide(trace_id, score.metric, "defect" if score.defect else "pass", float(score.value),
                             stamped if isinstance(stamped, str) else None)
            self._recent[key] = side
            self._recent.move_to_end(key)
            for vkey in tuple(self._waiting.get(key, ())):
                verdict = self._unhold(vkey)
                if verdict is not None:
                    self._count(verdict, side)
        while len(self._recent) > self._max_recent:
            self._recent.popitem(last=False)

    def _count(self, verdict: HumanVerdict, judge: JudgeSide) -> JoinState:
        human = self._rules[verdict.metric].side(verdict.verdict, verdict.value)
        agreement = "agree" if human == judge.outcome else "disagree"
        model = self._model(verdict.metric, judge.judge_model)
        self._telemetry.add(AGREEMENT_TOTAL, metric=verdict.metric, judge_model=model, agreement=agreement)
        p = self._probability(verdict.trace_id, verdict.metric, judge.outcome, None)
        self._joined.append(ScoredPair(verdict.metric, model, judge.outcome, human, 1.0 / p if p else 1.0))
        self._wake.set()
        return JoinState("joined", judge.outcome, judge.value, agreement, p)

    # -- polling and gauges ------------------------------------------------------------------------
    async def _run(self) -> None:
        last_refresh = -float("inf")
        while True:
            now = self._clock()
            self._expire(now)
            if self._store is not None and self._pending:
                await self._poll_store()
            if self._store is not None and self._retention is not None and now >= self._next_retention:
                self._next_retention = now + min(3600.0, self._retention)
                await self._forget(now - self._retention)
            if self._wake.is_set() or now - last_refresh >= self._refresh:
                self._wake.clear()
                await self.refresh()
                last_refresh = now
            try:
                await asyncio.wait_for(self._wake.wait(), self._poll)
                await asyncio.sleep(_MIN_REFRESH_GAP_SECONDS)
            except asyncio.TimeoutError:
                pass

    async def _forget(self, cutoff: float) -> None:
        assert self._store is not None
        try:
            await self._store.forget_before(cutoff)
        except Exception as exc:
            self._store_failed(exc)

    def _expire(self, now: float) -> None:
        expired = 0
        while self._pending:
            vkey, entry = next(iter(self._pending.items()))
            if entry.expires > now:
                break
            self._unhold(vkey)
            expired += 1
        if expired:
            self._telemetry.add(HUMAN_VERDICTS_DROPPED, expired, reason="expired")

    async def _poll_store(self) -> None:
        assert self._store is not None
        # Each pending verdict is looked for again after a delay that doubles up to a minute: a
        # verdict on a turn that was never sampled waits out its TTL without a query every poll.
        now = self._clock()
        due: dict[Key, None] = {}
        for vkey, entry in self._pending.items():
            if entry.next_check <= now:
                due[vkey[:2]] = None
                entry.interval = min(_MAX_CHECK_SECONDS, entry.interval * 2)
                entry.next_check = now + entry.interval
                if len(due) >= MAX_BATCH:
                    break
        if not due:
            return
        try:
            found = await self._store.judged(list(due))
        except Exception as exc:
            self._store_failed(exc)
            return
        self._store_ok()
        for key, side in found.items():
            for vkey in tuple(self._waiting.get(key, ())):
                verdict = self._unhold(vkey)
                if verdict is not None:
                    self._count(verdict, side)

    async def refresh(self) -> None:
        """Recompute the agreement snapshot (the store's joined rows, or the joins in memory)."""
        if self._store is None:
            self._board.publish(summarize(list(self._joined), self._clock()))
            return
        try:
            rows = await self._store.joined(since=self._clock() - self._window)
        except Exception as exc:
            self._store_failed(exc)
            return
        self._store_ok()
        self._board.publish(summarize(self._pairs(rows), self._clock()))

    def _pairs(self, rows: Sequence[JoinedRow]) -> list[ScoredPair]:
        out = []
        for r in rows:
            rule = self._rules.get(r.metric)
            if rule is None or r.judge_outcome not in ("pass", "defect"):
                continue  # a metric no longer configured: its labels would be unbounded history
            p = self._probability(r.trace_id, r.metric, r.judge_outcome, r.inclusion_probability)
            out.append(ScoredPair(r.metric, self._model(r.metric, r.judge_model), r.judge_outcome,
                                  rule.side(r.verdict, r.value), 1.0 / p if p else 1.0))
        return out

    def _model(self, metric: str, stamped: str | None) -> str:
        """The judge_model label: the model the score was stamped with (a provider's silent update
        shows as a new value), else the configured one; bounded per metric."""
        if not stamped:
            return self._models.get(metric, "unknown")
        seen = self._model_values.setdefault(metric, set())
        if stamped in seen:
            return stamped
        if len(seen) >= MAX_JUDGE_MODELS:
            return "other"
        seen.add(stamped)
        return stamped

    def _store_failed(self, exc: Exception) -> None:
        if not self._failing:  # once per failing streak, not once per poll
            self._failing = True
            log.warning("feedback: reading the result store failed: %r", exc)

    def _store_ok(self) -> None:
        self._failing = False

    # -- the review queue's question ---------------------------------------------------------------
    async def reviewed(self, keys: Sequence[Key]) -> set[Key]:
        """The pairs among ``keys`` that hold a person's verdict (``monitor.feedback.review.ReviewedPairs``).
        Callable from another thread's loop (the admin server's): the work runs on the pipeline's."""
        loop = self._loop
        if loop is None:
            raise StoreUnavailable("the verdict join is not running")
        if loop is not asyncio.get_running_loop():
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._reviewed(keys), loop))
        return await self._reviewed(keys)

    async def _reviewed(self, keys: Sequence[Key]) -> set[Key]:
        wanted = set(keys)
        out = {k[:2] for k in (*self._pending, *self._seen) if k[:2] in wanted}
        if self._store is not None:
            out |= await self._store.reviewed(keys)
        return out

    @property
    def pending(self) -> int:
        return len(self._pending)
