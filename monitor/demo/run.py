"""``rag-monitor demo``: the real sidecar, the sample app sending it traffic, a live table.

Order of events: start the :class:`~monitor.app.Sidecar` exactly as ``serve`` does (plus a
result consumer that tallies outcomes before/after the regression); start the traffic against
its OTLP/HTTP port; redraw the table until ``--duration`` passes or ``stop`` is set (a signal);
stop the traffic and flush its spans; wait, with a bound, until every sent turn has been
evaluated; print the final table and the ``FINAL-SUMMARY-JSON`` line; with ``--duration``, keep
the admin server up ``--linger`` seconds (on a terminal, by default, until Ctrl-C) so the status
page can still be opened; shut down.
When interrupted, the drain and the shutdown share ``shutdown_deadline_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Sequence

from monitor.app import Sidecar, freeze_startup_heap
from monitor.config import MonitorConfig
from monitor.demo.live_table import DemoSnapshot, TerminalView, render_table
from monitor.demo.phases import PhaseTally
from monitor.demo.report import RunFacts, final_document, final_line
from monitor.demo.traffic import TrafficStats, run_traffic

__all__ = ["DemoOptions", "DemoOutcome", "run_demo"]

log = logging.getLogger(__name__)
_UNBOUNDED_REGRESSION_AT = 60.0
_ANY_ADDRESS = ("0.0.0.0", "::", "")


@dataclass(frozen=True, slots=True)
class DemoOptions:
    duration_seconds: float | None = None  # None: until a signal
    rate_per_second: float = 5.0
    regression_at_seconds: float | None = None  # None: a third of the duration, or 60 s
    seed: int = 1
    linger_seconds: float | None = 0.0  # after a --duration run; None: until a stop signal
    refresh_seconds: float = 1.0
    freeze_heap: bool = False  # the CLI sets it: process-wide, like serve (see monitor.app)

    def regression_at(self) -> float:
        if self.regression_at_seconds is not None:
            return self.regression_at_seconds
        return self.duration_seconds / 3 if self.duration_seconds else _UNBOUNDED_REGRESSION_AT


@dataclass(frozen=True, slots=True)
class DemoOutcome:
    interrupted: bool
    final: dict[str, object]


def _local(host: str) -> str:
    return "127.0.0.1" if host in _ANY_ADDRESS else host


async def _show(view: TerminalView, lines: Sequence[str]) -> None:
    await asyncio.to_thread(view.show, lines)


async def _say(view: TerminalView, lines: Sequence[str]) -> None:
    await asyncio.to_thread(view.message, lines)


class _Run:
    """One demo run against a started sidecar."""

    def __init__(self, config: MonitorConfig, sidecar: Sidecar, tally: PhaseTally, options: DemoOptions,
                 view: TerminalView, stop: asyncio.Event) -> None:
        if sidecar.http is None or sidecar.admin is None:
            raise ValueError("the demo needs the OTLP/HTTP receiver and the admin server (see demo_config)")
        self.config = config
        self.sidecar = sidecar
        self.tally = tally
        self.options = options
        self.view = view
        self.stop = stop
        self.regression_at = options.regression_at()
        self.window = sidecar.rolling.windows[0][0]
        self.otlp_http = f"http://{_local(config.receivers.http.host)}:{sidecar.http.port}"
        self.admin_url = f"http://{_local(config.admin.host)}:{sidecar.admin.port}/"
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    async def snapshot(self) -> DemoSnapshot:
        # The rolling stats lock is shared with the scrape thread: read it off the loop.
        summary = await asyncio.to_thread(self.sidecar.rolling.summary)
        phases = await asyncio.to_thread(self.tally.snapshot)
        return DemoSnapshot(self.elapsed(), self.tally.sent, self.tally.evaluated, self.regression_at,
                            self.tally.regression_started_at is not None, self.window, summary, phases)

    async def traffic(self) -> tuple[TrafficStats, bool]:
        """Send traffic and redraw the table until done; returns the stats and whether a stop
        signal ended it."""
        token = self.config.receivers.http.bearer_token
        headers = {"Authorization": f"Bearer {token.get_secret_value()}"} if token is not None else None
        traffic_stop = asyncio.Event()
        traffic = asyncio.create_task(run_traffic(
            self.otlp_http, rate_per_second=self.options.rate_per_second, stop=traffic_stop,
            regression_at=self.regression_at, seed=self.options.seed, observer=self.tally, headers=headers),
            name="demo-traffic")
        try:
            interrupted = await self._watch(traffic)
        finally:
            traffic_stop.set()
            stats = await traffic  # flushes the spans; a crash in the generator surfaces here
        return stats, interrupted

    async def _watch(self, traffic: asyncio.Task[TrafficStats]) -> bool:
        stopping = asyncio.ensure_future(self.stop.wait())
        duration = self.options.duration_seconds
        announced = False
        try:
            while True:
                timeout = self.options.refresh_seconds
                if duration is not None:
                    timeout = min(timeout, duration - self.elapsed())
                await asyncio.wait({stopping, traffic}, timeout=max(0.0, timeout), return_when=asyncio.FIRST_COMPLETED)
                if self.stop.is_set():
                    return True
                if traffic.done():
                    return False
                if not announced and self.tally.regression_started_at is not None:
                    announced = True
                    await _say(self.view, [f"*** +{self.regression_at:g}s REGRESSION INJECTED: the retriever now "
                                           "searches the wrong collection; watch local_lexical_groundedness ***"])
                await _show(self.view, render_table(await self.snapshot()))
                if duration is not None and self.elapsed() >= duration:
                    return False
        finally:
            stopping.cancel()

    async def drain(self, interrupted: bool) -> int:
        """Wait for the last evaluations; returns how many sent turns still lack one. After a
        stop signal the drain gets half the shutdown deadline, and a signal cuts a normal one short."""
        deadline = self.config.shutdown_deadline_seconds
        if interrupted:
            return await self.tally.wait_drained(deadline / 2)
        draining = asyncio.ensure_future(self.tally.wait_drained(deadline))
        stopping = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait({draining, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (draining, stopping):
            task.cancel()
        await asyncio.gather(draining, stopping, return_exceptions=True)
        return self.tally.outstanding

    async def report(self, stats: TrafficStats, elapsed: float, outstanding: int) -> dict[str, object]:
        snapshot = await self.snapshot()
        facts = RunFacts(elapsed, self.stop.is_set(), self.regression_at, self.tally.regression_started_at,
                         self.tally.evaluated, outstanding, self.admin_url, self.otlp_http)
        document = final_document(facts, self.sidecar.rolling.windows, snapshot.summary, snapshot.phases, stats)
        await _show(self.view, render_table(snapshot))
        await _say(self.view, ["FINAL (numbers as /api/summary serves them; phases counted by the demo):",
                               final_line(document)])
        return document

    async def linger(self) -> None:
        """After a --duration run, keep the status page (and the API) up: for ``linger_seconds``,
        or until Ctrl-C when that is None (the CLI's default on a terminal)."""
        seconds = self.options.linger_seconds
        if self.stop.is_set() or self.options.duration_seconds is None or (seconds is not None and seconds <= 0):
            return
        if seconds is None:
            await _say(self.view, [f"traffic done; the status page stays up until Ctrl-C: {self.admin_url}"])
            await self.stop.wait()
            return
        await _say(self.view, [f"admin server stays up {seconds:g}s more: {self.admin_url}"])
        try:
            await asyncio.wait_for(self.stop.wait(), seconds)
        except TimeoutError:
            pass


def _banner(run: _Run, notes: Sequence[str]) -> list[str]:
    config, sidecar, options = run.config, run.sidecar, run.options
    grpc = f"{_local(config.receivers.grpc.host)}:{sidecar.grpc.port}" if sidecar.grpc is not None else "off"
    judge = (f"on ({config.judge.effective_model})" if config.judge.enabled
             else "off (set judge.base_url and judge.model to add the judge tier)")
    duration = f"{options.duration_seconds:g}s" if options.duration_seconds else "until Ctrl-C"
    return [
        "rag-monitor demo: the sidecar plus a sample RAG app (Skylark support chat) sending it traffic",
        "demo settings on top of your configuration:",
        *(f"  {note}" for note in notes),
        f"OTLP/HTTP receiver  {run.otlp_http}",
        f"OTLP/gRPC receiver  {grpc}",
        f"status page         {run.admin_url}",
        f"metrics             {run.admin_url}metrics",
        f"JSON summary        {run.admin_url}api/summary",
        f"judge tier          {judge}",
        f"traffic             {options.rate_per_second:g} turns/s, seed {options.seed}, {duration}, "
        f"regression at +{run.regression_at:g}s",
        "",
    ]


async def run_demo(config: MonitorConfig, options: DemoOptions, *, stop: asyncio.Event, view: TerminalView,
                   notes: Sequence[str] = ()) -> DemoOutcome:
    """Run the demo until done or ``stop`` is set; raises OSError when the sidecar cannot start."""
    tally = PhaseTally()
    sidecar = Sidecar(config, result_consumers=[tally])
    await sidecar.start()
    if options.freeze_heap:
        freeze_startup_heap()
    try:
        run = _Run(config, sidecar, tally, options, view, stop)
        await _say(view, _banner(run, notes))
        stats, interrupted = await run.traffic()
        elapsed = run.elapsed()
        await _say(view, [f"traffic stopped after {elapsed:.0f}s; waiting for the last evaluations ..."])
        outstanding = await run.drain(interrupted)
        if outstanding:
            log.warning("%d sent turns were not evaluated before the drain deadline", outstanding)
        document = await run.report(stats, elapsed, outstanding)
        await run.linger()
        await _say(view, ["shutting down"])
        return DemoOutcome(stop.is_set(), document)
    finally:
        await sidecar.shutdown(config.shutdown_deadline_seconds / 2 if stop.is_set() else None)
