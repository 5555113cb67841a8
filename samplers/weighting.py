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
interval where ``p = 1``, ``arrivals / kept``. The factor is computed per interval and policy node
(over the node's probabilities, each cell's counts scaled by its ``1/p``). An interval whose cap
shed *everything* it selected has nobody to stand for it; its estimated selections are carried to
the node's next interval that kept some (cells collapsed forward, up to :data:`LOOKBACK`
intervals), so a burst straddling an interval boundary is not lost from the estimate. The factor is final when the interval closes; a
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

__all__ = ["CellCounts", "CellLedger", "WeightFactors", "cell_id", "parse_cell", "post_stratified_factor",
           "LOCAL", "FLEET", "LOOKBACK"]

LOCAL = "L"
FLEET = "F"
LOOKBACK = 60
"""Intervals an emptied cell's selections may be carried over before they are given up."""

NodeCells = Callable[[int], "list[tuple[float, CellCounts]] | None"]
"""The (probability, counts) of one policy node's cells in an interval; None when not known."""


def post_stratified_factor(cells: NodeCells, interval: int) -> float:
    """``(selected + carried) / kept`` of a node in ``interval``, each cell scaled by its ``1/p``;
    carried = the estimated selections of the run of immediately preceding intervals that selected
    some and kept none (the walk stops at the first that kept some or selected none)."""
    def totals(i: int) -> tuple[float, float] | None:
        found = cells(i)
        if found is None:
            return None
        return (sum(c.selected / p for p, c in found if p > 0), sum(c.kept / p for p, c in found if p > 0))

    own = totals(interval)
    if own is None or own[1] <= 0:
        return 1.0
    carried = 0.0
    for earlier in range(interval - 1, interval - LOOKBACK - 1, -1):
        found = totals(earlier)
        if found is None or found[1] > 0 or found[0] <= 0:
            break
        carried += found[0]
    return max(1.0, (own[0] + carried) / own[1])


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
        self._by_node: dict[tuple[int, str], dict[float, CellCounts]] = {}
        self._final: dict[str, float] = {}  # factors of closed intervals: they never change
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
            parsed = parse_cell(cell)
            if parsed is not None:
                self._by_node.setdefault((parsed[1], parsed[3]), {})[parsed[2]] = counts
            if len(self._cells) > self._max:
                old, _ = self._cells.popitem(last=False)
                gone = parse_cell(old)
                if gone is not None:
                    self._by_node.get((gone[1], gone[3]), {}).pop(gone[2], None)
                    if not self._by_node.get((gone[1], gone[3]), True):
                        del self._by_node[(gone[1], gone[3])]
                self.evicted += 1
        counts.arrivals += 1
        if outcome != "not_sampled":
            counts.selected += 1
        if outcome == "sampled":
            counts.kept += 1

    def factor(self, cell: str) -> float | None:
        """Final factor of a local cell; None while open; 1.0 for a cell no longer (or never) known."""
        parsed = parse_cell(cell)
        if parsed is None:
            return 1.0
        if not self.closed(parsed[1]):
            return None
        known = self._final.get(cell)
        if known is None:
            known = self.factor_now(cell)
            if len(self._final) >= self._max:
                self._final.clear()
            self._final[cell] = known
        return known

    def factor_now(self, cell: str) -> float:
        """The factor from the counts so far, final or not (an early release)."""
        parsed = parse_cell(cell)
        if parsed is None:
            return 1.0
        node = parsed[3]
        return post_stratified_factor(lambda i: self._node_cells(i, node), parsed[1])

    def _node_cells(self, interval: int, node: str) -> list[tuple[float, CellCounts]] | None:
        found = self._by_node.get((interval, node))
        # An interval without a cell of the node saw none of its traffic: known, and empty.
        return list(found.items()) if found else []
