"""Say it in the log: when traffic arrives but nothing is sampled, evaluated or judged, a
warning says why and how to fix it — at most once per ``repeat_seconds`` per cause.

Every ``interval_seconds`` the watch reads the pipeline counters (``monitor.admin.pipeline``),
takes what changed since its previous reading and runs the same rules as the status page
(``monitor.admin.diagnosis``). Only warnings are logged; traces without a turn are left to the
assembler, which already warns about them per reason with the fix.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from prometheus_client import CollectorRegistry

from monitor.admin.diagnosis import Finding, Setting, diagnose
from monitor.admin.pipeline import Counts, circuit_state, delta, read_pipeline

__all__ = ["PipelineWatch"]

log = logging.getLogger(__name__)

_LEFT_TO_THE_ASSEMBLER = frozenset({"no_turns", "some_traces_without_turn"})


class PipelineWatch:
    """Component: the periodic check and its rate-limited warnings."""

    def __init__(self, registry: CollectorRegistry, setting: Setting, *, interval_seconds: float = 60.0,
                 repeat_seconds: float = 300.0, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger = log) -> None:
        self._registry = registry
        self._setting = setting
        self._interval = interval_seconds
        self._repeat = repeat_seconds
        self._clock = clock
        self._log = logger
        self._previous: Counts | None = None
        self._last_said: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> list[Finding]:
        """Diagnose what changed since the previous check; log new warnings. Returns them."""
        reading = await asyncio.to_thread(read_pipeline, self._registry, time.time())
        counts = delta(reading.counts, self._previous)
        self._previous = reading.counts
        findings = diagnose(counts, self._setting, circuit=circuit_state(reading.gauges))
        now = self._clock()
        said = []
        for finding in findings:
            if finding.level != "warning" or finding.code in _LEFT_TO_THE_ASSEMBLER:
                continue
            last = self._last_said.get(finding.code)
            if last is not None and now - last < self._repeat:
                continue
            self._last_said[finding.code] = now
            self._log.warning("%s", finding.text)
            said.append(finding)
        return said

    async def _run(self) -> None:
        await self.check()  # the baseline: counts since start are not "the last minute"
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.check()
            except Exception as exc:  # a failing collector must not end the watch
                self._log.debug("pipeline watch: reading the counters failed: %r", exc)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rag-monitor-pipeline-watch")

    async def shutdown(self, deadline: float) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
