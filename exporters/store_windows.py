"""The fleet's rolling windows, read from the shared store, for every replica's ``/api`` and page.

In a fleet each replica evaluates a share of the traffic, so its own rolling windows
(``exporters.rolling``, behind the Prometheus gauges) show a share of the picture. With the fleet's
one store (``exporters.store.url: postgresql://…``) the API's windows are kept from the store
instead: at start the scores of the longest window are read, then every ``interval_seconds`` the
scores stored since (by id), whichever replica wrote them.

Ids are handed out at insert but become visible at commit, so a score of a slow transaction can
appear below the highest id already read. Each refresh therefore re-reads the last ``lookback_ids``
ids and skips those it has counted (a bounded set), so a late commit within that margin is counted
once and none twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Protocol, Sequence

from exporters.rolling import RollingStats

__all__ = ["StoreWindows", "ScoreFeed"]

log = logging.getLogger(__name__)

ScoreRow = tuple[int, float, str, str, str, float, "float | None"]


class ScoreFeed(Protocol):
    """The store's reads this needs (``exporters.store_queries.StoreReads``)."""

    async def scores_after(self, after_id: int, limit: int) -> list[ScoreRow]: ...

    async def first_score_id_since(self, since: float) -> int:
        """The lowest score id stored at or after ``since`` (one past the highest when none)."""
        ...


class StoreWindows:
    """Keeps ``rolling`` equal to the store's scores of the longest window (``start``/``shutdown``)."""

    def __init__(self, store: ScoreFeed, rolling: RollingStats, *, service: Callable[[str], str] = lambda s: s,
                 interval_seconds: float = 5.0, lookback_ids: int = 10_000, page: int = 50_000,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self.rolling = rolling
        self._service = service
        self._interval = interval_seconds
        self._lookback = lookback_ids
        self._page = page
        self._clock = clock
        self._last = 0
        self._seen: set[int] = set()
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    def _take(self, rows: Sequence[ScoreRow]) -> int:
        fresh = [r for r in rows if r[0] not in self._seen]
        for row in fresh:
            self._seen.add(row[0])
            self._last = max(self._last, row[0])
        floor = self._last - self._lookback
        if len(self._seen) > 2 * self._lookback:
            self._seen = {i for i in self._seen if i > floor}
        return self.rolling.replay((ts, metric, self._service(service), outcome, weight, value)
                                   for _, ts, metric, service, outcome, weight, value in fresh)

    async def refresh(self) -> int:
        """Read what was stored since the last refresh; returns the scores counted."""
        counted = 0
        after = max(0, self._last - self._lookback)
        while True:
            rows = await self._store.scores_after(after, self._page)
            counted += self._take(rows)
            if len(rows) < self._page:
                return counted
            after = rows[-1][0]

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.refresh()
            except Exception as exc:  # the store is away: the windows age until it returns
                if not self._failing:
                    self._failing = True
                    log.warning("fleet windows: reading the store failed (%s); retrying every %.0f s",
                                exc, self._interval)
                continue
            if self._failing:
                self._failing = False
                log.info("fleet windows: reading the store again")

    async def start(self) -> None:
        if self._task is not None:
            return
        longest = max(seconds for _, seconds in self.rolling.windows)
        try:
            self._last = max(0, await self._store.first_score_id_since(self._clock() - longest) - 1)
            self._seen.clear()
            used = await self.refresh()
            log.info("fleet windows: %d stored scores of the fleet read", used)
        except Exception as exc:
            log.warning("fleet windows: the store cannot be read yet (%s); retrying", exc)
        self._task = asyncio.create_task(self._run(), name="rag-monitor-fleet-windows")

    async def shutdown(self, deadline: float | None = None) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
