"""Feeds the regression engine (``monitor.regression``) with the evaluations of the whole fleet and
publishes what it concludes (``exporters.release_metrics.ReleaseBoard``).

In sidecar mode no process sees two versions: a rolling update replaces the pods running v1 by
pods running v2. So the comparisons are computed from the result store when there is one — the
fleet's PostgreSQL store (``exporters.store.url``) holds every replica's evaluations, and every
replica reading the same rows in the same (id) order reaches the same figures — and from this
process's own results otherwise (the SQLite file is this process's too; without any store the
results are taken as they are produced).

Every ``refresh_seconds`` the scores stored since the last read are fetched (by id: the stores
make ids visible in id order), and those older than ``settle_seconds`` are converted to
:class:`monitor.regression.Observation`\\ s and observed in time order; then the engine's
comparisons, detector states and versions are published as one immutable snapshot, as of that
settled time. Replicas write to the fleet's store a second or so after they evaluate, so ids do
not follow evaluation times exactly; observing only settled rows, sorted by time, gives every
replica the same sequence — and so the same figures — whenever it refreshes or restarts. The
release comparisons are taken at the end of each time step (``release_bucket_seconds``) only, so
that every replica publishes the same figures at the same moments whatever its refresh times (an
earlier engine narrowed its running interval at every call, which made each replica's bounds
depend on its refresh moments; it now narrows once per closed step, and this schedule keeps the
published figures identical across replicas either way). They are published with up to one step
(plus ``settle_seconds``) of lag; versions, counts and the change detector
are published at every refresh. The conversion (JSON labels), the engine and the snapshot run in a worker
thread under one lock, so the event loop only awaits. At start the feed reads
``history_hours`` back, so a restarted replica compares releases at once.

Scores become observations as follows: ``defect`` from the outcome (pass | defect), ``score`` the
value's position on its scale, flipped for the metrics where higher is worse
(``exporters.result_store.HIGHER_IS_WORSE``), so 1 is always best; ``weight`` the
Horvitz–Thompson weight stored with the result; ``version`` the turn's ``version`` label
(``unknown`` without one: the time-based detector still watches it); ``labels`` the
``driver_labels`` of the turn (route, model), searched for the values that carry a change.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import threading
import time
from collections import deque
from typing import Any, Callable, Collection, Iterable, Mapping, Protocol, Sequence

from exporters.config import MAX_VERSIONS_PER_SERVICE, VERSION_LABEL
from exporters.labels import UNKNOWN, recorded_labels
from exporters.release_metrics import ReleaseBoard, ReleaseSnapshot, ServiceReleases
from exporters.result_store import HIGHER_IS_WORSE
from exporters.store_queries import ObservationRow
from monitor.model import EvaluationResult, ScoreStatus
from monitor.regression import Observation, RegressionConfig, RegressionEngine, ReleaseComparison
from monitor.regression_config import RegressionsConfig
from monitor.telemetry import NullTelemetry, Telemetry, counter

__all__ = ["ObservationSource", "RegressionFeed", "engine_config", "observation", "FEED_DROPPED"]

log = logging.getLogger(__name__)

FEED_DROPPED = counter(
    "rag_monitor_regression_feed_dropped_total",
    "Evaluations the release comparisons never saw: without a result store, more were waiting than "
    "regressions.max_pending (oldest dropped), or one could not be read.", "reason")

_MAX_VALUE_CHARS = 120
_PAGE = 50_000

# One evaluation as the feed reads it: (timestamp, metric, service, outcome, value, scale low,
# scale high, weight, labels). Labels are a JSON text from the store, a mapping from a result.
_Row = tuple[float, str, str, str, "float | None", float, float, float, "str | Mapping[str, str]"]
_Read = tuple[int, float, str, str, str, "float | None", float, float, float, "str | Mapping[str, str]"]
"""A row with its order of arrival: the store's score id, or a sequence number without a store."""


class ObservationSource(Protocol):
    """The store's reads the feed needs (``exporters.store_queries.StoreReads``)."""

    async def observations_after(self, after_id: int, limit: int) -> list[ObservationRow]: ...

    async def first_score_id_since(self, since: float) -> int: ...


def engine_config(config: RegressionsConfig) -> RegressionConfig:
    """The engine's tuning from the ``regressions`` section (the rest: the engine's defaults)."""
    detector = config.detector
    return RegressionConfig(alpha=config.alpha, margin=config.margin, versions_per_service=MAX_VERSIONS_PER_SERVICE,
                            min_evaluations=config.min_evaluations, canary_grace_seconds=config.canary_grace_seconds,
                            reactivation_gap_seconds=config.reactivation_gap_seconds,
                            release_bucket_seconds=config.release_bucket_seconds,
                            detector_bucket_seconds=detector.step_seconds, detector_threshold=detector.alarm_level,
                            detector_reference_seconds=detector.reference_seconds,
                            detector_min_reference_evaluations=detector.min_reference_evaluations,
                            detector_rebaseline_seconds=detector.rebaseline_seconds,
                            detector_hold_seconds=detector.hold_seconds)


def _position(metric: str, value: float | None, low: float, high: float, risk: Collection[str]) -> float | None:
    if value is None or not math.isfinite(value) or not high > low:
        return None
    position = min(1.0, max(0.0, (value - low) / (high - low)))
    return 1.0 - position if metric in risk else position


def observation(row: _Row, *, service: Callable[[str], str] = lambda s: s, driver_labels: Sequence[str] = (),
                risk: Collection[str] = HIGHER_IS_WORSE) -> Observation:
    """The engine's input for one scored evaluation (see the module doc). Raises ValueError for
    a row that cannot be read."""
    at, metric, raw_service, outcome, value, low, high, weight, raw_labels = row
    if isinstance(raw_labels, str):
        decoded = json.loads(raw_labels)
        labels: Mapping[str, Any] = decoded if isinstance(decoded, dict) else {}
    else:
        labels = raw_labels
    version = str(labels.get(VERSION_LABEL) or UNKNOWN)[:_MAX_VALUE_CHARS]
    drivers = {name: str(labels[name])[:_MAX_VALUE_CHARS] for name in driver_labels if labels.get(name)}
    return Observation(
        at=at, service=service(raw_service), metric=metric, version=version,
        weight=weight if math.isfinite(weight) and weight > 0 else 1.0,
        defect=True if outcome == "defect" else False if outcome == "pass" else None,
        score=_position(metric, value, low, high, risk), labels=drivers)


class RegressionFeed:
    """``Component`` (and ``ResultConsumer`` when it has no store to read): see the module doc.

    ``service`` maps a stored service name to its exported value (the label policy's), so the
    comparisons' series line up with the other series of the service.
    """

    def __init__(self, engine: RegressionEngine, board: ReleaseBoard, config: RegressionsConfig, *,
                 source: ObservationSource | None, service: Callable[[str], str] = lambda s: s,
                 telemetry: Telemetry | None = None, clock: Callable[[], float] = time.time,
                 page: int = _PAGE) -> None:
        self._engine = engine
        self._board = board
        self._config = config
        self._source = source
        self._service = service
        self._telemetry = telemetry or NullTelemetry()
        self._clock = clock
        self._page = page
        self._lock = threading.Lock()  # the engine and the counts: one worker thread at a time
        self._queue: deque[_Row] = deque()
        self._arrivals = itertools.count(1)  # the order of results taken without a store
        self._waiting: list[tuple[float, int, _Row]] = []  # read, not yet settled: (at, id, row)
        self._latest_read = -math.inf
        self._last_id: int | None = None
        self._step_seconds = config.release_bucket_seconds
        self._step: int | None = None  # the release step of the latest evaluation observed
        self._compared_step: int | None = None
        self._comparisons: tuple[ReleaseComparison, ...] = ()
        self._counts: dict[tuple[str, str, str], int] = {}
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self.observed = 0
        """Evaluations observed since start (tests and logs)."""

    # ------------------------------------------------------------------ without a store
    def consume_result(self, result: EvaluationResult) -> None:
        """Queue the result's scored evaluations for the next refresh (no store to read)."""
        if self._source is not None:
            return
        turn = result.turn
        labels = recorded_labels(turn)
        ts = self._clock()
        for s in result.scores:
            if s.status != ScoreStatus.OK:
                continue
            if len(self._queue) >= self._config.max_pending:
                self._queue.popleft()
                self._telemetry.add(FEED_DROPPED, reason="queue_full")
            self._queue.append((ts, s.metric, turn.service, s.outcome, s.value, s.scale[0], s.scale[1],
                                result.weight, labels))

    # ------------------------------------------------------------------ reading and observing
    async def refresh(self) -> int:
        """Observe what settled since the last refresh, then publish a snapshot as of the settled
        time; returns the evaluations observed. Raises when the store cannot be read (the next
        refresh retries)."""
        settle = self._config.settle_seconds
        observed = 0
        if self._source is None:
            self._take([(next(self._arrivals), *row) for row in self._queue])
            self._queue.clear()
        else:
            if self._last_id is None:
                since = self._clock() - self._config.history_hours * 3600.0
                self._last_id = max(0, await self._source.first_score_id_since(since) - 1)
            while True:
                page = await self._source.observations_after(self._last_id, self._page)
                if page:
                    self._last_id = page[-1][0]
                    self._take(page)
                if len(page) < self._page:
                    break
                # More to read (a history read back): what is older than the newest row read by
                # more than the settle time cannot be followed by an earlier one; observe it now.
                cutoff = min(self._clock(), self._latest_read) - settle
                observed += await asyncio.to_thread(self._observe, cutoff)
        cutoff = self._clock() - settle
        observed += await asyncio.to_thread(self._observe, cutoff)
        await asyncio.to_thread(self._publish, cutoff)
        return observed

    def _take(self, rows: Sequence[_Read]) -> None:
        for row in rows:
            self._waiting.append((row[1], row[0], row[1:]))
            self._latest_read = max(self._latest_read, row[1])

    def _settled(self, cutoff: float) -> list[_Row]:
        """The waiting rows stamped at or before ``cutoff``, in time order (ties: id order).
        Past ``max_pending`` waiting rows, the oldest are taken too (out of the settle time)."""
        waiting = self._waiting
        ready = [w for w in waiting if w[0] <= cutoff]
        rest = [w for w in waiting if w[0] > cutoff]
        if len(rest) > self._config.max_pending:
            rest.sort(key=lambda w: (w[0], w[1]))
            ready += rest[:-self._config.max_pending]
            rest = rest[-self._config.max_pending:]
        self._waiting = rest
        ready.sort(key=lambda w: (w[0], w[1]))
        return [w[2] for w in ready]

    def _observe(self, cutoff: float) -> int:
        drivers = self._config.driver_labels
        n = bad = 0
        with self._lock:
            for row in self._settled(cutoff):
                try:
                    obs = observation(row, service=self._service, driver_labels=drivers)
                except (ValueError, TypeError):
                    bad += 1
                    continue
                step = int(obs.at // self._step_seconds)
                if self._step is not None and step > self._step:
                    self._compare_step()  # every evaluation of the step before is in
                self._step = step if self._step is None else max(self._step, step)
                try:
                    self._engine.observe(obs)
                except (ValueError, TypeError):
                    bad += 1
                    continue
                key = (obs.service, obs.metric, obs.version)
                self._counts[key] = self._counts.get(key, 0) + 1
                n += 1
            if self._step is not None and int(cutoff // self._step_seconds) > self._step:
                self._compare_step()  # the last step is over and settled: no more evaluations of it
        if bad:
            self._telemetry.add(FEED_DROPPED, bad, reason="unreadable")
        self.observed += n
        return n

    def _compare_step(self) -> None:
        """The comparisons once every evaluation of the current step is observed (the caller
        holds the lock). The engine narrows each interval to its intersection with the earlier
        ones at every call; calling it at the end of each step, and only then, makes that set of
        calls the same on every replica and after a restart, so every replica exports the same
        interval. The price: the published comparisons lag by up to one step."""
        if self._compared_step == self._step:
            return
        self._comparisons = tuple(self._engine.releases())
        self._compared_step = self._step

    def _publish(self, now: float) -> None:
        with self._lock:
            comparisons = self._comparisons
            regressions = tuple(self._engine.regressions(now))
            services = []
            remembered: set[tuple[str, str]] = set()
            for service in self._engine.services():
                versions = tuple(self._engine.versions(service))
                remembered.update((service, v.version) for v in versions)
                services.append((service, versions))
            # Counts of forgotten versions go with them (the engine keeps five per service).
            self._counts = {k: n for k, n in self._counts.items() if (k[0], k[2]) in remembered}
            by_service: dict[str, dict[tuple[str, str], int]] = {}
            for (service, metric, version), n in self._counts.items():
                by_service.setdefault(service, {})[(metric, version)] = n
        self._board.publish(ReleaseSnapshot(
            at=now, services=tuple(ServiceReleases(s, v, by_service.get(s, {})) for s, v in services),
            comparisons=comparisons, regressions=regressions, runbook_base_url=self._config.runbook_base_url))

    # ------------------------------------------------------------------ lifecycle
    async def _run(self) -> None:
        while True:
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is away, or a bug: the last snapshot stays published
                if not self._failing:
                    self._failing = True
                    log.warning("release comparisons: refreshing failed (%s); retrying every %.0f s",
                                exc, self._config.refresh_seconds)
            else:
                if self._failing:
                    self._failing = False
                    log.info("release comparisons: refreshing again")
            await asyncio.sleep(self._config.refresh_seconds)

    async def start(self) -> None:
        """Returns at once; the first refresh (the history read back) runs in the background."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rag-monitor-regression-feed")

    async def shutdown(self, deadline: float | None = None) -> None:
        """Stop refreshing; safe twice and without start."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
