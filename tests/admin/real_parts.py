"""The real rolling statistics and SQLite result store, fed with real evaluation results."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from exporters.config import StoreConfig
from exporters.result_store import ResultStore
from exporters.rolling import RollingStats
from monitor.model import EvaluationResult, Score, ScoreStatus, Turn
from tests.admin.doubles import HOSTILE, NOW
from tests.support.recording import RecordingTelemetry


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def result(n: int, groundedness: float, f1: float | None,
           question: str = "What is the refund window?") -> EvaluationResult:
    turn = Turn(trace_id=f"{n:032x}", conversation_id=f"conv-{n % 3}", question=question,
                answer=f"Answer number {n}. " + "Long text. " * 80, service="shop", labels={"route": "/chat"},
                start_time_unix_nano=int((NOW - 4000) * 1e9), chat_span_id=f"{n:016x}")
    scores = [Score("groundedness", groundedness, (1.0, 5.0), defect=groundedness < 3,
                    reason=f"judge reason {n} <b>not</b> supported")]
    if f1 is None:
        scores.append(Score("f1_score", None, (0.0, 1.0), status=ScoreStatus.ERROR, error_type="JudgeTimeout"))
    else:
        scores.append(Score("f1_score", f1, (0.0, 1.0), defect=f1 < 0.5))
    return EvaluationResult(turn, tuple(scores), weight=1.0 + (n % 2), sampling_policy="probabilistic")


@asynccontextmanager
async def real_sources(tmp_path: Path) -> AsyncIterator[tuple[RollingStats, ResultStore, Clock]]:
    """Results spread over the last hour (so the trend has several points), then the clock at NOW."""
    clock = Clock(NOW - 3000)
    rolling = RollingStats((("5m", 300.0), ("1h", 3600.0)), clock=clock)
    store = ResultStore(StoreConfig(path=str(tmp_path / "results.sqlite3"), flush_interval_seconds=0.02),
                        RecordingTelemetry(), clock=clock)
    await store.start()
    try:
        plan = [(NOW - 3000, 4.0, 0.9), (NOW - 2000, 2.0, 0.2), (NOW - 1000, 5.0, None),
                (NOW - 200, 1.0, 0.4), (NOW - 100, 4.0, 0.8), (NOW - 50, 3.0, 0.1)]
        for n, (at, g, f1) in enumerate(plan):
            clock.now = at
            r = result(n, g, f1, question=HOSTILE if n == 3 else "What is the refund window?")
            rolling.consume_result(r)
            store.consume_result(r)
        clock.now = NOW
        expected = 2 * len(plan)  # two scores per result

        async def written() -> None:
            while await store.count() < expected:
                await asyncio.sleep(0.01)  # polling the database, bounded by the deadline below

        await asyncio.wait_for(written(), 10)
        yield rolling, store, clock
    finally:
        await store.shutdown(asyncio.get_running_loop().time() + 5)
