"""Buffer spans and log records by trace id; assemble each trace once it is complete.

A trace is complete ``decision_wait_seconds`` after its root span arrives (the root ends last,
and the wait lets late children and log records sent in a separate request join). A trace whose
root never comes is assembled after ``max_trace_age_seconds``. Memory is bounded: past
``max_pending_traces``, ``max_pending_spans`` or ``max_pending_bytes`` (the spans' and log records'
encoded size) the oldest trace is assembled early, past
``max_spans_per_trace`` a trace is assembled at once; all counted. Spans for a trace that was already assembled are
dropped and counted (``late``), remembered in a bounded set.

``consume_spans``/``consume_logs`` run on the event loop and do O(1) work per record; turn
building runs in the sweep task.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence

from monitor.assembly.config import AssemblyConfig
from monitor.assembly.turns import Explanation, NoTurn, build_turn
from monitor.interfaces import TurnConsumer
from monitor.model import LogRecord, SpanRecord, Turn
from monitor.telemetry import LOGS_DROPPED, SPANS_DROPPED, Telemetry, counter

__all__ = ["Assembler", "TraceObserver", "TURNS_ASSEMBLED", "TRACES_WITHOUT_TURN", "TRACES_EVICTED"]

TURNS_ASSEMBLED = counter("rag_monitor_turns_assembled_total", "Turns assembled from complete traces, by convention.",
                          "convention")
TRACES_WITHOUT_TURN = counter("rag_monitor_traces_without_turn_total", "Complete traces that held no turn, by reason.",
                              "reason")
TRACES_EVICTED = counter("rag_monitor_traces_evicted_total",
                         "Traces assembled early because a buffer limit was reached, by limit.", "reason")

log = logging.getLogger(__name__)
_SWEEP_CHUNK = 200  # traces built per slice before yielding to the loop


class TraceObserver(Protocol):
    """Told the outcome of every assembled trace (``inspect --explain``). Must not block."""

    def trace_done(self, trace_id: str, turn: Turn | None, no_turn: NoTurn | None, explanation: Explanation,
                   spans: int, logs: int) -> None: ...


class _RateLimitedWarnings:
    """One log line per key per interval, carrying how many were suppressed since the last."""

    def __init__(self, interval: float, clock: Callable[[], float]) -> None:
        self._interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warn(self, key: str, message: str, level: int = logging.WARNING) -> None:
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        self._last[key] = now
        more = self._suppressed.pop(key, 0)
        log.log(level, "%s%s", message, f" ({more} more since the last such message)" if more else "")


@dataclass(slots=True)
class _Pending:
    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    due: float = 0.0
    has_root: bool = False
    start: int = 0
    size: int = 0


class Assembler:
    """SpanConsumer + Component. Hands each assembled Turn to ``downstream``."""

    def __init__(self, config: AssemblyConfig, downstream: TurnConsumer, telemetry: Telemetry,
                 clock: Callable[[], float] = time.monotonic, observer: TraceObserver | None = None) -> None:
        self._cfg = config
        self._observer = observer
        self._warnings = _RateLimitedWarnings(config.no_turn_warning_interval_seconds, clock)
        self._downstream = downstream
        self._telemetry = telemetry
        self._clock = clock
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        # (due, root start, trace id): traces due together complete in the order they started,
        # so a conversation whose turns arrived in one batch is seen in order.
        self._heap: list[tuple[float, int, str]] = []
        self._done: OrderedDict[str, None] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._accepting = True
        self._pending_spans = 0
        self._pending_bytes = 0
        self._building: set[asyncio.Future[tuple[Turn | None, NoTurn | None, Explanation]]] = set()

    # ------------------------------------------------------------------ consumer side
    @property
    def pending_traces(self) -> int:
        return len(self._pending)

    @property
    def pending_spans(self) -> int:
        return self._pending_spans

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    def consume_spans(self, spans: Sequence[SpanRecord]) -> Mapping[str, int]:
        if not self._accepting:
            self._telemetry.add(SPANS_DROPPED, len(spans), reason="shutting_down")
            return {"shutting_down": len(spans)}
        dropped = 0
        now = self._clock()
        cfg = self._cfg
        pending = self._pending
        max_spans, max_pending_spans, max_pending_bytes = (
            cfg.max_spans_per_trace, cfg.max_pending_spans, cfg.max_pending_bytes)
        for span in spans:  # runs for every span received: the common path reads locals only
            trace_id = span.trace_id
            entry = pending.get(trace_id) or self._entry(trace_id, now)
            if entry is None:
                dropped += 1
                continue
            entry.spans.append(span)
            self._pending_spans += 1
            entry.size += span.size
            self._pending_bytes += span.size
            if not span.parent_span_id and not entry.has_root:
                entry.has_root = True
                entry.start = span.start_time_unix_nano
                self._schedule(trace_id, entry, now + cfg.decision_wait_seconds)
            if len(entry.spans) >= max_spans:
                self._telemetry.add(TRACES_EVICTED, reason="max_spans_per_trace")
                self._complete(trace_id)
            while self._pending_spans > max_pending_spans and pending:
                self._telemetry.add(TRACES_EVICTED, reason="max_pending_spans")
                self._complete(next(iter(pending)))
            while self._pending_bytes > max_pending_bytes and pending:
                self._telemetry.add(TRACES_EVICTED, reason="max_pending_bytes")
                self._complete(next(iter(pending)))
        if dropped:
            self._telemetry.add(SPANS_DROPPED, dropped, reason="late")
            return {"late": dropped}
        return {}

    def consume_logs(self, logs: Sequence[LogRecord]) -> Mapping[str, int]:
        if not self._accepting:
            self._telemetry.add(LOGS_DROPPED, len(logs), reason="shutting_down")
            return {"shutting_down": len(logs)}
        dropped = 0
        no_trace = 0
        now = self._clock()
        for record in logs:
            if not record.trace_id:
                no_trace += 1
                continue
            entry = self._entry(record.trace_id, now)
            if entry is None or len(entry.logs) >= self._cfg.max_logs_per_trace:
                dropped += 1
                continue
            entry.logs.append(record)
            entry.size += record.size
            self._pending_bytes += record.size
        reasons = {}
        if no_trace:
            self._telemetry.add(LOGS_DROPPED, no_trace, reason="no_trace_id")
            reasons["no_trace_id"] = no_trace
        if dropped:
            self._telemetry.add(LOGS_DROPPED, dropped, reason="late_or_full")
            reasons["late_or_full"] = dropped
        return reasons

    def _entry(self, trace_id: str, now: float) -> _Pending | None:
        entry = self._pending.get(trace_id)
        if entry is not None:
            return entry
        if trace_id in self._done:
            return None
        while len(self._pending) >= self._cfg.max_pending_traces:
            oldest = next(iter(self._pending))
            self._telemetry.add(TRACES_EVICTED, reason="max_pending_traces")
            self._complete(oldest)
        entry = _Pending()
        self._pending[trace_id] = entry
        self._schedule(trace_id, entry, now + self._cfg.max_trace_age_seconds)
        return entry

    def _schedule(self, trace_id: str, entry: _Pending, due: float) -> None:
        entry.due = due
        heapq.heappush(self._heap, (due, entry.start, trace_id))
        # Stale heap entries (rescheduled or completed traces) are skipped when popped; rebuild
        # when they dominate so the heap stays proportional to the pending set.
        if len(self._heap) > 4 * len(self._pending) + 64:
            self._heap = [(e.due, e.start, t) for t, e in self._pending.items()]
            heapq.heapify(self._heap)

    # ------------------------------------------------------------------ assembly
    def _complete(self, trace_id: str) -> Turn | None:
        """Build the trace's turn and hand it on. A trace above ``offload_bytes`` (its JSON can
        take tens of milliseconds to parse) is built in a worker thread when a loop is running;
        its turn is handed on from the loop when ready (and None is returned here)."""
        entry = self._pending.pop(trace_id, None)
        if entry is None:
            return None
        self._pending_spans -= len(entry.spans)
        self._pending_bytes -= entry.size
        self._done[trace_id] = None
        if len(self._done) > 2 * self._cfg.max_pending_traces:
            self._done.popitem(last=False)
        if entry.size >= self._cfg.offload_bytes:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # inspect: no loop, build inline
                loop = None
            if loop is not None:
                future = loop.run_in_executor(None, self._build, trace_id, entry)
                self._building.add(future)
                future.add_done_callback(lambda f: self._built(f, trace_id, entry))
                return None
        return self._finish(trace_id, entry, *self._build(trace_id, entry))

    def _build(self, trace_id: str, entry: _Pending) -> tuple[Turn | None, NoTurn | None, Explanation]:
        """Pure: safe in a worker thread (touches only the trace's own records)."""
        explanation = Explanation()
        try:
            return build_turn(entry.spans, entry.logs, self._cfg.mapping, self._cfg.max_history_messages,
                              explanation), None, explanation
        except NoTurn as exc:
            return None, exc, explanation
        except Exception:  # a bug in one trace must not stop the pipeline
            log.exception("assembling trace %s failed", trace_id)
            return None, NoTurn("internal_error"), explanation

    def _built(self, future: asyncio.Future[tuple[Turn | None, NoTurn | None, Explanation]], trace_id: str,
               entry: _Pending) -> None:
        self._building.discard(future)
        if future.cancelled():
            self._telemetry.add(TRACES_WITHOUT_TURN, reason="internal_error")
            return
        self._finish(trace_id, entry, *future.result())

    def _finish(self, trace_id: str, entry: _Pending, turn: Turn | None, no_turn: NoTurn | None,
                explanation: Explanation) -> Turn | None:
        if turn is None:
            reason = no_turn.reason if no_turn else "internal_error"
            self._telemetry.add(TRACES_WITHOUT_TURN, reason=reason)
            if no_turn is not None and reason != "internal_error":
                self._warnings.warn(reason, f"trace {trace_id} yields no turn ({reason}): {no_turn.hint}; "
                                            f"`rag-monitor inspect --explain` shows what was found")
            self._observe(trace_id, None, no_turn, explanation, entry)
            return None
        for missing in explanation.missing:
            self._warnings.warn(f"missing:{missing}", f"trace {trace_id}: turn has no {missing.replace('_', ' ')}: "
                                + next((n for n in explanation.notes if n.startswith(missing.replace('_', ' '))), ""),
                                logging.INFO)  # a chat app without retrieval is normal
        self._observe(trace_id, turn, None, explanation, entry)
        self._telemetry.add(TURNS_ASSEMBLED, convention=turn.convention)
        self._downstream.consume_turn(turn)
        return turn

    def _observe(self, trace_id: str, turn: Turn | None, no_turn: NoTurn | None, explanation: Explanation,
                 entry: _Pending) -> None:
        if self._observer is not None:
            self._observer.trace_done(trace_id, turn, no_turn, explanation, len(entry.spans), len(entry.logs))

    def assemble_due(self, now: float | None = None, limit: int | None = None) -> int:
        """Assemble traces whose time has come; return how many were completed."""
        now = self._clock() if now is None else now
        n = 0
        while self._heap and self._heap[0][0] <= now and (limit is None or n < limit):
            due, _, trace_id = heapq.heappop(self._heap)
            entry = self._pending.get(trace_id)
            if entry is None or entry.due != due:
                continue
            self._complete(trace_id)
            n += 1
        return n

    def flush(self) -> int:
        """Assemble everything pending now (shutdown, ``inspect``)."""
        n = 0
        by_start = sorted(self._pending.items(), key=lambda item: item[1].start or min(
            (sp.start_time_unix_nano for sp in item[1].spans), default=0))
        for trace_id, _ in by_start:
            self._complete(trace_id)
            n += 1
        self._heap.clear()
        return n

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self._task is None:
            self._accepting = True
            self._task = asyncio.create_task(self._sweep(), name="assembler-sweep")

    async def _sweep(self) -> None:
        interval = min(0.25, max(0.01, self._cfg.decision_wait_seconds / 4))
        while True:
            await asyncio.sleep(interval)
            while self.assemble_due(limit=_SWEEP_CHUNK) == _SWEEP_CHUNK:
                await asyncio.sleep(0)

    async def shutdown(self, deadline: float) -> None:
        self._accepting = False
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.flush()
        if self._building:  # large traces still being built in worker threads
            await asyncio.wait(set(self._building), timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
