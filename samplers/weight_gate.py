"""Results wait here until their post-stratified weight is final, then go to every consumer once.

A result whose decision a hard cap could have shed carries its cell (``samplers.weighting``) and
the provisional weight 1/p. Its final weight, ``1/p · selected / kept`` of the cell, is known when
the cell's interval has closed (in a fleet, once the fleet's counts of it are read back). Until
then the result is held here — a few seconds, ``sampling.weight_interval_seconds`` at most plus the
fleet's settling time — so the weight counters, the rolling windows, the store and the events all
see the one final weight: counters can only go up, and a weight corrected after the fact would
need every consumer to know how to correct.

Results without a cell (1/p is exact: no cap could shed them) pass straight through. The gate is
bounded in count and in text bytes: past ``max_held`` or ``max_held_bytes`` the oldest held result
is released with the best factor known now, counted. At shutdown everything held is released the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import replace
from typing import Protocol, Sequence

from monitor.interfaces import ResultConsumer
from monitor.model import EvaluationResult
from monitor.telemetry import Telemetry, counter
from samplers.weighting import FLEET, CellLedger, WeightFactors, parse_cell

__all__ = ["WeightGate", "EarlyFactors", "CellFactors", "WEIGHTS_RELEASED_EARLY"]

log = logging.getLogger(__name__)

WEIGHTS_RELEASED_EARLY = counter(
    "rag_monitor_weights_released_early_total",
    "Results exported before their post-stratification interval was final (gate full or shutdown), with the "
    "best weight known then, by reason.", "reason")


class EarlyFactors(WeightFactors, Protocol):
    def factor_now(self, cell: str) -> float:
        """The best factor without waiting (partial counts), for an early release."""
        ...


class CellFactors:
    """Local cells from this process's ledger, fleet cells from the fleet's counts (when a fleet runs)."""

    def __init__(self, local: CellLedger, fleet: EarlyFactors | None = None) -> None:
        self._local = local
        self._fleet = fleet

    def _source(self, cell: str) -> EarlyFactors | None:
        parsed = parse_cell(cell)
        if parsed is None:
            return None
        return self._fleet if parsed[0] == FLEET else self._local

    def factor(self, cell: str) -> float | None:
        source = self._source(cell)
        return 1.0 if source is None else source.factor(cell)

    def factor_now(self, cell: str) -> float:
        source = self._source(cell)
        return 1.0 if source is None else source.factor_now(cell)


class WeightGate:
    """``ResultConsumer`` in front of the real consumers; ``start``/``shutdown`` component."""

    def __init__(self, consumers: Sequence[ResultConsumer], factors: EarlyFactors, telemetry: Telemetry, *,
                 max_held: int = 20_000, max_held_bytes: int = 64 * 1024 * 1024,
                 poll_seconds: float = 0.25) -> None:
        self._consumers = tuple(consumers)
        self._factors = factors
        self._telemetry = telemetry
        self._max = max_held
        self._max_bytes = max_held_bytes
        self._bytes = 0
        self._poll = poll_seconds
        self._held: deque[EvaluationResult] = deque()
        self._task: asyncio.Task[None] | None = None

    @property
    def held(self) -> int:
        return len(self._held)

    def consume_result(self, result: EvaluationResult) -> None:
        if result.cell is None:
            self._hand_on(result)
            return
        factor = self._factors.factor(result.cell)
        if factor is not None:
            self._hand_on(self._settled(result, factor))
            return
        self._held.append(result)
        self._bytes += result.turn.text_bytes
        while self._held and (len(self._held) > self._max or self._bytes > self._max_bytes):
            oldest = self._held.popleft()
            self._bytes -= oldest.turn.text_bytes
            self._telemetry.add(WEIGHTS_RELEASED_EARLY, reason="gate_full")
            self._hand_on(self._settled(oldest, self._factors.factor_now(oldest.cell or "")))

    @staticmethod
    def _settled(result: EvaluationResult, factor: float) -> EvaluationResult:
        return replace(result, weight=result.weight * factor, cell=None)

    def _hand_on(self, result: EvaluationResult) -> None:
        for consumer in self._consumers:
            consumer.consume_result(result)

    def release_ready(self) -> int:
        """Hand on every held result whose factor is final (in arrival order past the first that
        is not: results of one interval close together). Returns how many went."""
        released = 0
        waiting: deque[EvaluationResult] = deque()
        while self._held:
            result = self._held.popleft()
            factor = self._factors.factor(result.cell or "")
            if factor is None:
                waiting.append(result)
                continue
            self._bytes -= result.turn.text_bytes
            self._hand_on(self._settled(result, factor))
            released += 1
        self._held = waiting
        return released

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._poll)
            if self._held:
                self.release_ready()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rag-monitor-weight-gate")

    async def shutdown(self, deadline: float | None = None) -> None:
        """Release everything held: final factors where known, else the best known now (counted)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.release_ready()
        self._bytes = 0
        while self._held:
            result = self._held.popleft()
            self._telemetry.add(WEIGHTS_RELEASED_EARLY, reason="shutdown")
            self._hand_on(self._settled(result, self._factors.factor_now(result.cell or "")))
