"""Writes results through a real ResultStore as fast as it can, until killed.

``python -m tests.support.store_writer DB_PATH`` prints ``ready`` once the store has started;
every result carries :data:`SCORES_PER_RESULT` scores, so a reader can check that each stored
result has all of them (batches are atomic) after the process is killed mid-write.
"""

from __future__ import annotations

import asyncio
import sys

from exporters.config import StoreConfig
from exporters.result_store import ResultStore
from monitor.model import EvaluationResult, Score, Turn
from monitor.telemetry import NullTelemetry

SCORES_PER_RESULT = 3


def result(i: int) -> EvaluationResult:
    turn = Turn(trace_id=f"{i:032x}", conversation_id=f"conv-{i % 17}", question=f"question {i} " * 20,
                answer=f"answer {i} " * 40, service="writer", labels={"route": "/chat"})
    scores = tuple(Score(metric, float(1 + (i + k) % 5), (1.0, 5.0), defect=(i + k) % 5 < 2, reason="r" * 50)
                   for k, metric in enumerate(("groundedness", "relevance", "coherence")))
    assert len(scores) == SCORES_PER_RESULT
    return EvaluationResult(turn, scores, weight=2.0, sampling_policy="probabilistic")


async def main(path: str) -> None:
    store = ResultStore(StoreConfig(path=path, batch_size=64, flush_interval_seconds=0.01, queue_size=5000),
                        NullTelemetry())
    await store.start()
    print("ready", flush=True)
    i = 0
    while True:
        for _ in range(200):
            store.consume_result(result(i))
            i += 1
        # A real pause, not sleep(0): a loop that never blocks keeps the GIL from the writer thread
        # on a 2-core machine, and nothing would reach the disk. ~200k results/s offered is still
        # far more than the writer takes; the queue bound drops the rest.
        await asyncio.sleep(0.001)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
