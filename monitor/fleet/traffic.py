"""The fleet's traffic figures in Redis: per-interval counts behind adaptive probabilities and weights.

Each wall-clock interval of ``sampling.weight_interval_seconds`` has one hash,
``<prefix>:traffic:<interval>``, written only by the decision script (``monitor.fleet.decisions``)
for the decisions that won (so a conversation counts once, on the replica that decided it):

* ``n|<node>``: conversations that arrived at a policy node (``policy[:stratum]``) — the fleet's
  arrivals behind a rate limit's or a judge budget's probability;
* ``c|<p>/<node>|a``, ``|s``, ``|k``: arrivals, selected and kept of each post-stratification
  cell (``samplers.weighting``).

A background task reads the hashes of closed intervals back once they are final (closed at least
``grace`` seconds ago, by when every decision of it has landed): it wakes when the next one
becomes final or an old one is asked for (one pipelined round trip), and retries every
``fleet.sync_seconds`` while Redis does not answer. All replicas read the same final figures,
so they compute the same probabilities at the same aligned moments and the same weight factors.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from samplers.weighting import FLEET, CellCounts, parse_cell, post_stratified_factor
from monitor.fleet.link import FleetLink
from monitor.telemetry import Telemetry, counter

__all__ = ["FleetTraffic", "WEIGHTS_UNSETTLED", "TRAFFIC_TTL_SECONDS"]

log = logging.getLogger(__name__)

WEIGHTS_UNSETTLED = counter(
    "rag_monitor_fleet_weights_unsettled_total",
    "Results exported with weight 1/p because the fleet's counts of their interval could not be read in time "
    "(Redis away), by scope.", "scope")

TRAFFIC_TTL_SECONDS = 7200
"""How long an interval's counts stay in Redis (a conversation's later turns read its cell's factor)."""

_MAX_CACHED = 4096


class FleetTraffic:
    """Fleet arrival rates (``samplers.adaptive.SharedTraffic``) and fleet cell factors
    (``samplers.weighting.WeightFactors``), from the counts the decision script writes."""

    def __init__(self, link: FleetLink, telemetry: Telemetry, *, interval_seconds: float,
                 horizon_seconds: float, settle_seconds: float = 30.0) -> None:
        self._link = link
        self._telemetry = telemetry
        self.interval_seconds = interval_seconds
        # Everything of an interval has landed once the slowest decision of it could have: a
        # decision's interval is named when it is drawn, and its proposal rides with the next batch
        # (within fleet.max_batch_wait_seconds) in a script bounded by fleet.timeout_seconds.
        config = link.config
        self.grace = config.max_batch_wait_seconds + config.timeout_seconds + config.sync_seconds + 0.5
        self._horizon = max(interval_seconds, horizon_seconds)
        self._settle = settle_seconds
        self._final: dict[int, dict[str, int]] = {}
        self._factors: dict[str, float] = {}  # final factors by cell: they never change
        self._partial: dict[int, dict[str, int]] = {}
        self._wanted: set[int] = set()
        self._task: asyncio.Task[None] | None = None
        self._asked = asyncio.Event()  # an old interval was asked for: read it now

    # -- naming ----------------------------------------------------------------------------

    def interval(self, at: float | None = None) -> int:
        return int((self._link.server_time() if at is None else at) // self.interval_seconds)

    def key(self, interval: int) -> str:
        return self._link.key("traffic", str(interval))

    # -- SharedTraffic ---------------------------------------------------------------------

    def share(self) -> float:
        """1 / the fleet's size (the last known one while Redis is away: ``local_share``)."""
        return 1.0 / max(1, self._link.fleet_size)

    def arrival_rate(self, node: str, horizon_seconds: float) -> float | None:
        """Mean conversations per second at ``node`` over the newest final intervals covering
        ``horizon_seconds``; None before any interval is final (the policy then counts alone)."""
        if not self._final:
            return None
        want = max(1, round(horizon_seconds / self.interval_seconds))
        newest = self.interval() - 1
        window = [i for i in range(newest - want - 1, newest + 1) if i in self._final][-want:]
        if not window:
            return None
        field = f"n|{node}"
        return sum(self._final[i].get(field, 0) for i in window) / (len(window) * self.interval_seconds)

    # -- WeightFactors ---------------------------------------------------------------------

    def factor(self, cell: str) -> float | None:
        """The fleet's ``selected / kept`` for ``cell`` once its interval is final; None before.
        Past ``settle_seconds`` after the interval's end without a readable count (Redis away),
        1.0 (the weight stays 1/p), counted."""
        parsed = parse_cell(cell)
        if parsed is None or parsed[0] != FLEET:
            return 1.0
        interval = parsed[1]
        if interval in self._final:
            known = self._factors.get(cell)
            if known is None:
                known = post_stratified_factor(lambda i: self._node_cells(i, parsed[3]), interval)
                if len(self._factors) >= _MAX_CACHED * 4:
                    self._factors.clear()
                self._factors[cell] = known
            return known
        end = (interval + 1) * self.interval_seconds
        now = self._link.server_time()
        if now < end + self._settle:
            if now >= end + self.grace and interval not in self._wanted:
                self._wanted.add(interval)  # an old interval (a resumed turn): read it at the next sync
                self._asked.set()
            return None
        self._telemetry.add(WEIGHTS_UNSETTLED, scope="fleet")
        return 1.0

    def factor_now(self, cell: str) -> float:
        """The best factor available without waiting (at shutdown): final, else partial, else 1."""
        parsed = parse_cell(cell)
        if parsed is None or parsed[0] != FLEET:
            return 1.0
        return post_stratified_factor(lambda i: self._node_cells(i, parsed[3], partial=True), parsed[1])

    def _node_cells(self, interval: int, node: str, *, partial: bool = False) -> list[tuple[float, CellCounts]] | None:
        """The node's cells in ``interval`` from the fleet's final counts (partial ones when asked)."""
        source = self._final.get(interval)
        if source is None and partial:
            source = self._partial.get(interval)
        if source is None:
            return None
        cells: dict[float, CellCounts] = {}
        suffix = f"/{node}|"
        for field, value in source.items():
            if not field.startswith("c|") or suffix not in field:
                continue
            head, _, kind = field.rpartition("|")
            probability_text, _, name = head[2:].partition("/")
            if name != node:
                continue
            try:
                counts = cells.setdefault(float(probability_text), CellCounts())
            except ValueError:
                continue
            if kind == "a":
                counts.arrivals = value
            elif kind == "s":
                counts.selected = value
            elif kind == "k":
                counts.kept = value
        return list(cells.items())

    # -- sync ------------------------------------------------------------------------------

    def _due(self, now: float) -> list[int]:
        """Intervals that can be read as final now but were not yet (and those asked for)."""
        current = self.interval(now)
        span = math.ceil(self._horizon / self.interval_seconds) + 2
        ready = {i for i in range(current - span, current)
                 if i not in self._final and now >= (i + 1) * self.interval_seconds + self.grace}
        return sorted(ready | self._wanted)

    async def sync(self, *, partial: bool = False) -> bool:
        """Read the intervals that became final (and those asked for; with ``partial``, every recent
        one not final yet too); True on success. Without anything due no round trip is made."""
        now = self._link.server_time()
        current = self.interval(now)
        span = math.ceil(self._horizon / self.interval_seconds) + 2
        todo = (sorted({i for i in range(current - span, current + 1) if i not in self._final} | self._wanted)
                if partial else self._due(now))
        if not todo:
            return True
        # An interval read at or after its end + grace is final: every decision of it has landed.
        reply = await self._link.run(lambda r: self._read(r, todo))
        if reply is None:
            return False
        for interval, fields in zip(todo, reply):
            counts = {k: int(v) for k, v in (fields or {}).items()}
            if now >= (interval + 1) * self.interval_seconds + self.grace:
                self._final[interval] = counts
                self._partial.pop(interval, None)
                self._wanted.discard(interval)
            else:
                self._partial[interval] = counts
        self._trim(current - span)
        return True

    async def _read(self, client: Any, intervals: list[int]) -> list[Any]:
        pipe = client.pipeline(transaction=False)
        for interval in intervals:
            pipe.hgetall(self.key(interval))
        result: list[Any] = await pipe.execute()
        return result

    def _trim(self, oldest_useful: int) -> None:
        # Old intervals stay for the later turns of long conversations, within a bound.
        for store in (self._final, self._partial):
            while len(store) > _MAX_CACHED:
                del store[min(store)]
        for interval in [i for i in self._partial if i < oldest_useful and i not in self._wanted]:
            del self._partial[interval]

    def _next_due(self, now: float) -> float:
        """Seconds until the next interval can be read as final (it closes, then ``grace`` passes)."""
        current = self.interval(now)
        due = (current + 1) * self.interval_seconds + self.grace
        if current - 1 not in self._final:
            due = min(due, current * self.interval_seconds + self.grace)
        return max(0.0, due - now)

    async def _run(self) -> None:
        # Woken when an interval becomes due (every weight interval) or an old one is asked for,
        # not every fleet.sync_seconds: an idle wake-up costs the sidecar CPU too. A failed read is
        # retried every fleet.sync_seconds.
        period = self._link.config.sync_seconds
        while True:
            ok = await self.sync()
            self._asked.clear()
            wait = period if not ok or self._wanted else max(period, self._next_due(self._link.server_time()))
            try:
                await asyncio.wait_for(self._asked.wait(), wait)
            except TimeoutError:
                pass

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rag-monitor-fleet-traffic")

    async def shutdown(self, deadline: float | None = None) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
