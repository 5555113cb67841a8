"""Scrape cost: how long /metrics takes to render, and whether a scrape stalls the event loop.

Fills a real Sidecar's registry with evaluation series (metrics × routes, each with the score
histogram, outcome counters and rolling windows), then scrapes ``/metrics`` over HTTP in a loop
(text format and OpenMetrics) while a ticker on the event loop measures how late it wakes up
(loop lag). Rendering runs in a worker thread, so the lag should stay near the idle level even
when one render takes tens of milliseconds.

    .venv/bin/python benchmarks/scrape.py --metrics 20 --routes 10 --scrapes 40
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

import aiohttp
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.model import EvaluationResult, Score, Turn


def _config() -> MonitorConfig:
    return MonitorConfig.model_validate({
        "receivers": {"http": {"port": 0}, "grpc": {"port": 0}}, "admin": {"port": 0},
        "assembly": {"mapping": {"labels": {"route": "http.route"}}},
        "exporters": {"labels": ["route", "model"], "max_label_values": 1000, "store": {"enabled": False}},
    })


def _fill(sidecar: Sidecar, metrics: int, routes: int, per_series: int) -> int:
    n = 0
    for r in range(routes):
        turn = Turn(trace_id=f"{r:032x}", conversation_id=f"c{r}", question="q", answer="a", service="app",
                    labels={"route": f"/r{r}"}, response_model="gpt-x")
        for i in range(per_series):
            scores = tuple(Score(f"metric_{m}", float(1 + (i + m) % 5), (1.0, 5.0), defect=(i + m) % 5 < 2)
                           for m in range(metrics))
            sidecar.results.consume_result(EvaluationResult(turn, scores, 1.0, "p"))
            sidecar.rolling.consume_result(EvaluationResult(turn, scores, 1.0, "p"))
            n += 1
    return n


async def _lag(stop: asyncio.Event, out: list[float], period: float = 0.005) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(period)
        out.append(loop.time() - t - period)


async def _scrapes(url: str, accept: str, count: int) -> tuple[list[float], int, int]:
    times, size = [], 0
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            t = time.perf_counter()
            async with session.get(url, headers={"Accept": accept}) as r:
                body = await r.read()
            times.append(time.perf_counter() - t)
            size = len(body)
    lines = body.count(b"\n")
    return times, size, lines


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--routes", type=int, default=10)
    ap.add_argument("--per-series", type=int, default=5)
    ap.add_argument("--scrapes", type=int, default=40)
    ap.add_argument("--no-freeze", action="store_true",
                    help="skip gc.freeze() after start (serve freezes the start-up heap)")
    args = ap.parse_args()

    sidecar = Sidecar(_config(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        _fill(sidecar, args.metrics, args.routes, args.per_series)
        if not args.no_freeze:
            gc.collect()
            gc.freeze()
        url = f"http://127.0.0.1:{sidecar.admin.port}/metrics"
        print(f"{args.metrics} metrics × {args.routes} routes = {args.metrics * args.routes} score histograms")
        idle: list[float] = []
        stop = asyncio.Event()
        ticker = asyncio.create_task(_lag(stop, idle))
        await asyncio.sleep(1.0)
        stop.set()
        await ticker
        print(f"idle loop lag: p50 {statistics.median(idle) * 1e3:.2f} ms, max {max(idle) * 1e3:.2f} ms")
        for name, accept in (("text 0.0.4", "text/plain"),
                             ("OpenMetrics", "application/openmetrics-text; version=1.0.0")):
            lag: list[float] = []
            stop = asyncio.Event()
            ticker = asyncio.create_task(_lag(stop, lag))
            times, size, lines = await _scrapes(url, accept, args.scrapes)
            stop.set()
            await ticker
            times.sort()
            print(f"{name:12s}: {lines} lines, {size / 1024:.0f} KiB; scrape p50 {times[len(times) // 2] * 1e3:.1f} ms, "
                  f"max {times[-1] * 1e3:.1f} ms; loop lag during scrapes p50 "
                  f"{statistics.median(lag) * 1e3:.2f} ms, p99 {sorted(lag)[int(len(lag) * 0.99)] * 1e3:.2f} ms, "
                  f"max {max(lag) * 1e3:.2f} ms")
    finally:
        await sidecar.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
