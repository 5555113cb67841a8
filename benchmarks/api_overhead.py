"""Public Python API overhead: what the judge's private loop thread costs per call.

Everything talks to the scripted OpenAI-compatible judge in ``tests/support/judge_server.py`` on
127.0.0.1, served from a thread of its own so sync callers can block. Measured:

1. Per-call latency with an instant judge: the sidecar's path (``JudgeClient`` + the
   ``fluency`` evaluator awaited on one loop) vs ``Fluency(judge).ascore`` (the hop to the judge's
   loop thread and back) vs ``Fluency(judge).score`` (plus ``asyncio.run`` per call).
2. Throughput with a 20 ms judge and 16 in flight: the sidecar's path vs ``ascore`` gathered vs
   ``Scorer.ascore_many``.

    .venv/bin/python benchmarks/api_overhead.py [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.evaluation.registry import BuildContext, default_registry  # noqa: E402
from monitor.judge.client import JudgeClient  # noqa: E402
from monitor.judge.config import JudgeConfig  # noqa: E402
from monitor.model import Turn  # noqa: E402
from rag_monitor import Fluency, Judge, Scorer  # noqa: E402
from tests.support.judge_server import JudgeServer, schema_reply  # noqa: E402

ANSWER = "Stake the corners first, then raise the poles and tension the guy lines."


@contextlib.contextmanager
def threaded_server(latency: float) -> Iterator[JudgeServer]:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    server = JudgeServer(default=schema_reply({"score": 4}), latency=latency)

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.__aenter__())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.__aexit__(None, None, None))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait()
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def config(base_url: str, concurrency: int) -> dict[str, Any]:
    return {"base_url": base_url, "model": "m", "api_key": "sk", "max_concurrency": concurrency}


async def timed(n: int, one: Callable[[], Awaitable[Any]]) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await one()
        out.append(time.perf_counter() - start)
    return out


async def sidecar_latency(base_url: str, n: int) -> list[float]:
    async with JudgeClient(JudgeConfig.model_validate(config(base_url, 4))) as client:
        [evaluator] = default_registry().build(BuildContext(judge=client), ["fluency"])
        turn = Turn("t", "c", "", ANSWER)
        await evaluator.evaluate(turn)  # warm the connection
        return await timed(n, lambda: evaluator.evaluate(turn))


async def api_latency(base_url: str, n: int) -> list[float]:
    async with Judge.from_config(config(base_url, 4)) as judge:
        metric = Fluency(judge=judge)
        await metric.ascore(answer=ANSWER)
        return await timed(n, lambda: metric.ascore(answer=ANSWER))


def sync_latency(base_url: str, n: int) -> list[float]:
    with Judge.from_config(config(base_url, 4)) as judge:
        metric = Fluency(judge=judge)
        metric.score(answer=ANSWER)
        out = []
        for _ in range(n):
            start = time.perf_counter()
            metric.score(answer=ANSWER)
            out.append(time.perf_counter() - start)
        return out


async def sidecar_throughput(base_url: str, n: int) -> float:
    async with JudgeClient(JudgeConfig.model_validate(config(base_url, 16))) as client:
        [evaluator] = default_registry().build(BuildContext(judge=client), ["fluency"])
        turn = Turn("t", "c", "", ANSWER)
        start = time.perf_counter()
        await asyncio.gather(*(evaluator.evaluate(turn) for _ in range(n)))
        return n / (time.perf_counter() - start)


async def api_throughput(base_url: str, n: int) -> float:
    async with Judge.from_config(config(base_url, 16)) as judge:
        metric = Fluency(judge=judge)
        start = time.perf_counter()
        await asyncio.gather(*(metric.ascore(answer=ANSWER) for _ in range(n)))
        return n / (time.perf_counter() - start)


async def scorer_throughput(base_url: str, n: int) -> float:
    async with Judge.from_config(config(base_url, 16)) as judge:
        scorer = Scorer([Fluency(judge=judge)])
        start = time.perf_counter()
        await scorer.ascore_many([{"answer": ANSWER}] * n, concurrency=16)
        return n / (time.perf_counter() - start)


def ms(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"p50 {1000 * statistics.median(samples):.2f} ms, p99 {1000 * q[98]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    n = parser.parse_args().calls
    with threaded_server(0.0) as server:
        print(f"latency, instant judge, {n} sequential calls")
        print(f"  sidecar path (JudgeClient + evaluator): {ms(asyncio.run(sidecar_latency(server.base_url, n)))}")
        print(f"  Fluency.ascore (judge loop thread):    {ms(asyncio.run(api_latency(server.base_url, n)))}")
        print(f"  Fluency.score (sync):                  {ms(sync_latency(server.base_url, n))}")
    with threaded_server(0.02) as server:
        print(f"throughput, 20 ms judge, 16 in flight, {n} turns (ideal {16 / 0.02:.0f}/s)")
        print(f"  sidecar path:          {asyncio.run(sidecar_throughput(server.base_url, n)):.0f} turns/s")
        print(f"  Fluency.ascore gather: {asyncio.run(api_throughput(server.base_url, n)):.0f} turns/s")
        print(f"  Scorer.ascore_many:    {asyncio.run(scorer_throughput(server.base_url, n)):.0f} turns/s")


if __name__ == "__main__":
    main()
