"""Honest weights when a hard cap sheds: post-stratification per interval.

``1/p`` is the Horvitz–Thompson weight of a conversation kept with probability ``p``. A hard cap
(a rate limit's token bucket, a judge budget's ledger) breaks that: it refuses some of the
conversations the draw selected, so the kept ones stand for more traffic than ``1/p`` says. The
worst case is the first interval of an adaptive policy: it draws with ``p = 1`` (no traffic seen
yet) and the bucket sheds everything past its burst, so every kept conversation weighs 1 and the
estimate of the traffic is off by the shed share (−74 % in a replica's first minute, measured).

So conversations are grouped in *cells*: the same wall-clock interval (``interval_seconds``),
the same deciding policy node (``policy[:stratum]``) and the same probability. Within a cell the
conversations the draw selected are exchangeable, and the cap keeps a subset of them, so the
weight of each kept one is::

    weight = (1/p) · selected / kept

which is ``1/p`` when nothing was shed (the usual case, then nothing changes) and, in the first
interval where ``p = 1``, ``arrivals / kept``. The factor is final when the interval closes; a
result of a capped cell waits for it (``monitor.evaluation.weight_gate``), so every consumer —
the weight counters, the rolling windows, the store — sees the final weight once.

Cells are named ``<scope>/<interval>/<probability>/<node>``; the scope is ``L`` for counts kept in
this process and ``F`` for the fleet's counts in Redis (``monitor.fleet.traffic``), so a
conversation decided alone during a Redis outage is weighted by the replica's own counts.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Protocol

__all__ = ["CellCounts", "CellLedger", "WeightFactors", "cell_id", "parse_cell", "LOCAL", "FLEET"]

LOCAL = "L"
FLEET = "F"


def cell_id(scope: str, interval: int, probability: float, node: str) -> str:
    """The cell name stored on a decision (``SamplingDecision.cell``)."""
    return f"{scope}/{interval}/{probability!r}/{node}"


def parse_cell(cell: str) -> tuple[str, int, float, str] | None:
    """``(scope, interval, probability, node)``, or None for a name this version did not write."""
    parts = cell.split("/", 3)
    if len(parts) != 4:
        return None
    try:
        return parts[0], int(parts[1]), float(parts[2]), parts[3]
    except ValueError:
        return None


@dataclass(slots=True)
class CellCounts:
    arrivals: int = 0
    selected: int = 0
    kept: int = 0

    def factor(self) -> float:
        """``selected / kept`` (1 when nothing was kept or nothing shed)."""
        if self.kept <= 0 or self.selected <= self.kept:
            return 1.0
        return self.selected / self.kept


class WeightFactors(Protocol):
    """Where a held result learns its cell's factor (the local ledger, or the fleet's counts)."""

    def factor(self, cell: str) -> float | None:
        """The cell's final ``selected / kept``; None while its interval is open (wait)."""
        ...


class CellLedger:
    """This process's counts per cell, bounded; factors final once the interval has closed.

    ``clock`` is wall-clock seconds (intervals are aligned to it, so replicas agree on them).
    """

    def __init__(self, interval_seconds: float, *, clock: Callable[[], float] = time.time,
                 max_cells: int = 20_000) -> None:
        if interval_seconds <= 0:
            raise ValueError("interval_seconds must be positive")
        self.interval_seconds = interval_seconds
        self._clock = clock
        self._max = max_cells
        self._cells: OrderedDict[str, CellCounts] = OrderedDict()
        self.evicted = 0

    def interval(self, at: float | None = None) -> int:
        """The interval number of ``at`` (default: now)."""
        return int((self._clock() if at is None else at) // self.interval_seconds)

    def closed(self, interval: int, grace: float = 0.0) -> bool:
        """Whether ``interval`` ended at least ``grace`` seconds ago."""
        return self._clock() >= (interval + 1) * self.interval_seconds + grace

    def name(self, node: str, probability: float, scope: str = LOCAL) -> str:
        """The cell a decision taken now falls in."""
        return cell_id(scope, self.interval(), probability, node)

    def record(self, cell: str, outcome: str) -> None:
        """Count one conversation of ``cell``: ``sampled``, ``shed`` or ``not_sampled``."""
        counts = self._cells.get(cell)
        if counts is None:
            counts = self._cells[cell] = CellCounts()
            if len(self._cells) > self._max:
                self._cells.popitem(last=False)
                self.evicted += 1
        counts.arrivals += 1
        if outcome != "not_sampled":
            counts.selected += 1
        if outcome == "sampled":
            counts.kept += 1

    def counts(self, cell: str) -> CellCounts | None:
        return self._cells.get(cell)

    def factor(self, cell: str) -> float | None:
        """Final factor of a local cell; None while open; 1.0 for a cell no longer (or never) known."""
        parsed = parse_cell(cell)
        if parsed is None:
            return 1.0
        if not self.closed(parsed[1]):
            return None
        counts = self._cells.get(cell)
        return counts.factor() if counts is not None else 1.0

    def factor_now(self, cell: str) -> float:
        """The factor from the counts so far, final or not (an early release)."""
        counts = self._cells.get(cell)
        return counts.factor() if counts is not None else 1.0
