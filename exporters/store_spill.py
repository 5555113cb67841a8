"""The PostgreSQL store's local spill: what waits in memory while the database is unreachable.

A :class:`WriteUnit` is one transaction's worth of writes, in the order they were made: backlog
operations (a sampled turn deferred, or forgotten) and a batch of results whose turns leave the
backlog in the same transaction. While PostgreSQL is down every unit waits here, oldest first,
and is written in that order once it returns, so a turn's backlog row is never written after its
result. The spill is bounded by items (results + backlog operations) and by text bytes; past
either bound the oldest unit goes, counted (``dropped``), its results as write failures and its
deferred turns as ``not_persisted``. It lives in memory: a replica killed while PostgreSQL is
down loses what it spilled (counted nowhere, as any kill -9), which ``docs/store.md`` states.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from exporters.batch_writer import Batch
from exporters.result_store import STORE_WRITE_FAILURES
from monitor.model import SamplingDecision, Turn
from monitor.telemetry import BACKLOG, Telemetry, counter

__all__ = ["STORE_SPILL", "PendingOp", "WriteUnit", "Spill"]

STORE_SPILL = counter(
    "rag_monitor_store_spill_total",
    "Results and backlog operations held in memory while the fleet store (PostgreSQL) was unreachable, by "
    "event: spilled, written (once it returned), dropped (past exporters.store.spill_max_items/_bytes, or "
    "left at shutdown).", "event")

# A backlog operation: ("add", trace id, (turn, decision), time) or ("forget", trace id, None, time).
PendingOp = tuple[str, str, "tuple[Turn, SamplingDecision] | None", float]


@dataclass(slots=True)
class WriteUnit:
    """One transaction: backlog operations, then results (whose turns leave the backlog)."""

    ops: list[PendingOp] = field(default_factory=list)
    batch: Batch = field(default_factory=list)

    @property
    def items(self) -> int:
        return len(self.ops) + len(self.batch)

    @property
    def text_bytes(self) -> int:
        return (sum(r.turn.text_bytes for _, r in self.batch)
                + sum(item[0].text_bytes for _, _, item, _ in self.ops if item is not None))

    @property
    def deferred(self) -> int:
        return sum(1 for op in self.ops if op[0] == "add")


class Spill:
    """Bounded FIFO of :class:`WriteUnit` (see module doc)."""

    def __init__(self, telemetry: Telemetry, *, max_items: int, max_bytes: int) -> None:
        if max_items < 1 or max_bytes < 1:
            raise ValueError("the spill's bounds must be positive")
        self._telemetry = telemetry
        self._max_items = max_items
        self._max_bytes = max_bytes
        self._units: deque[tuple[WriteUnit, int]] = deque()  # (unit, its text bytes)
        self.items = 0
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._units)

    def push(self, unit: WriteUnit) -> None:
        """Keep ``unit`` for later; drop (and count) the oldest while past a bound."""
        size = unit.text_bytes
        self._units.append((unit, size))
        self.items += unit.items
        self.bytes += size
        self._telemetry.add(STORE_SPILL, unit.items, event="spilled")
        while self._units and (self.items > self._max_items or self.bytes > self._max_bytes):
            self.drop_oldest()

    def peek(self) -> WriteUnit | None:
        return self._units[0][0] if self._units else None

    def written(self) -> None:
        """The oldest unit reached the database."""
        unit, size = self._units.popleft()
        self.items -= unit.items
        self.bytes -= size
        self._telemetry.add(STORE_SPILL, unit.items, event="written")

    def drop_oldest(self) -> WriteUnit:
        """Give up on the oldest unit (bound, permanent failure or shutdown), counted."""
        unit, size = self._units.popleft()
        self.items -= unit.items
        self.bytes -= size
        self._telemetry.add(STORE_SPILL, unit.items, event="dropped")
        if unit.batch:
            self._telemetry.add(STORE_WRITE_FAILURES, len(unit.batch))
        if unit.deferred:
            self._telemetry.add(BACKLOG, unit.deferred, event="not_persisted")
        return unit
