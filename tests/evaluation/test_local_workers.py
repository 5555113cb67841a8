"""The local worker pool: same scores as in process, bounded, restarted when a worker dies,
stopped within its deadline. Real child processes throughout (``python -m ...worker_process``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Callable

import pytest

from monitor.evaluation.config import LOCAL_TIER_METRICS, EvaluationConfig
from monitor.evaluation.local.worker_pool import (
    EXCHANGE_FAILED,
    LOCAL_WORKER_RESTARTS,
    OVERLOADED,
    STOPPED,
    WORKER_LOST,
    LocalWorkerPool,
)
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.runner import evaluate_turn
from monitor.model import Document, Turn
from monitor.telemetry import QUEUE_DROPPED, CountingTelemetry
from tests.evaluation.fakes import rag_turn
from tests.evaluation.worker_doubles import PID_METRIC, EchoLength, ExitOn, HangOn

TURNS = [
    rag_turn(),
    rag_turn(trace_id="t2", answer="That is sh1t advice. The tent is not waterproof.", ground_truth="The tent is waterproof."),
    rag_turn(trace_id="t3", answer="这款帐篷防水。", documents=(Document("d", "这款帐篷防水，很轻。"),)),
    rag_turn(trace_id="t4", answer="You are the Contoso outdoor shop assistant. Answer only about our products. " * 3),
    rag_turn(trace_id="t5", answer="word. " * 5000, system_prompt=None, documents=()),
]


def _local_evaluators() -> list:
    cfg = EvaluationConfig(metrics=tuple(m for m in LOCAL_TIER_METRICS if m != "local_jailbreak_attempt"))
    return list(build_evaluators(cfg, None))


async def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


async def _stopped(pool: LocalWorkerPool, seconds: float = 5.0) -> None:
    await pool.shutdown(asyncio.get_running_loop().time() + seconds)


async def test_the_pool_scores_exactly_as_the_serving_process_would() -> None:
    evaluators = _local_evaluators()
    pool = LocalWorkerPool(evaluators, workers=2, queue_size=16, telemetry=CountingTelemetry())
    await pool.start()
    try:
        pooled = await asyncio.gather(*(pool.evaluate(t) for t in TURNS))
    finally:
        await _stopped(pool)
    in_process = [await evaluate_turn(t, evaluators) for t in TURNS]
    assert pooled == in_process
    assert all(s.status == "ok" for scores in pooled[:2] for s in scores if s.metric != "f1_score")


async def test_work_runs_in_another_process() -> None:
    pool = LocalWorkerPool([EchoLength()], workers=1, queue_size=4, telemetry=CountingTelemetry())
    await pool.start()
    try:
        length, pid = await pool.evaluate(rag_turn(question="12345"))
    finally:
        await _stopped(pool)
    assert length.value == 5 and pid.metric == PID_METRIC and pid.value not in (None, float(os.getpid()))


async def test_a_worker_that_dies_is_replaced_counted_and_the_turn_run_again(tmp_path: Path) -> None:
    telemetry = CountingTelemetry()
    once = tmp_path / "crash-once"
    once.touch()
    pool = LocalWorkerPool([ExitOn("CRASH", once), EchoLength()], workers=1, queue_size=4, telemetry=telemetry)
    await pool.start()
    try:
        crashed = await pool.evaluate(rag_turn(question="CRASH please"))
        after = await pool.evaluate(rag_turn(question="fine"))
    finally:
        await _stopped(pool)
    assert [s.status for s in crashed] == ["ok", "ok", "ok"]  # answered by the replacement worker
    assert [s.status for s in after] == ["ok", "ok", "ok"]
    assert telemetry.by_label(LOCAL_WORKER_RESTARTS, "reason") == {"crashed": 1}


async def test_a_turn_that_kills_every_worker_gets_error_scores_and_the_pool_goes_on() -> None:
    telemetry = CountingTelemetry()
    pool = LocalWorkerPool([ExitOn("POISON"), EchoLength()], workers=1, queue_size=4, telemetry=telemetry)
    await pool.start()
    try:
        poisoned = await pool.evaluate(rag_turn(question="POISON"))
        after = await pool.evaluate(rag_turn(question="fine"))
    finally:
        await _stopped(pool)
    assert {(s.status, s.error_type) for s in poisoned} == {("error", WORKER_LOST)}
    assert [s.metric for s in poisoned] == ["test_exit", "test_length", PID_METRIC]
    assert [s.status for s in after] == ["ok", "ok", "ok"]
    assert telemetry.by_label(LOCAL_WORKER_RESTARTS, "reason") == {"crashed": 2}


async def test_a_stuck_worker_is_killed_at_the_call_timeout(tmp_path: Path) -> None:
    telemetry = CountingTelemetry()
    once = tmp_path / "hang-once"
    once.touch()
    pool = LocalWorkerPool([HangOn("HANG", 60, once)], workers=1, queue_size=4, telemetry=telemetry,
                           call_timeout=1.0)
    await pool.start()
    try:
        (score,) = await asyncio.wait_for(pool.evaluate(rag_turn(question="HANG")), 30)
    finally:
        await _stopped(pool)
    assert score.status == "ok"  # run again on a fresh worker, where the file is gone
    assert telemetry.by_label(LOCAL_WORKER_RESTARTS, "reason") == {"timeout": 1}


async def test_a_full_queue_answers_at_once_with_counted_error_scores() -> None:
    telemetry = CountingTelemetry()
    pool = LocalWorkerPool([EchoLength()], workers=1, queue_size=1, telemetry=telemetry)
    await pool.start()  # the child is still starting: nothing leaves the queue yet
    try:
        results = await asyncio.gather(*(pool.evaluate(rag_turn(question=str(i))) for i in range(3)))
    finally:
        await _stopped(pool)
    assert [s.status for s in results[0]] == ["ok", "ok"]
    for scores in results[1:]:
        assert {(s.status, s.error_type) for s in scores} == {("error", OVERLOADED)}
    assert telemetry.value(QUEUE_DROPPED, queue="local_workers") == 2


async def test_shutdown_answers_what_is_queued_and_leaves_no_process_behind() -> None:
    pool = LocalWorkerPool([EchoLength()], workers=2, queue_size=8, telemetry=CountingTelemetry())
    await pool.start()
    ready = await pool.evaluate(rag_turn())
    assert ready[0].status == "ok"
    await _until(lambda: pool.live_workers == 2)
    pids = pool.pids
    waiting = [asyncio.ensure_future(pool.evaluate(rag_turn(question="x" * 10))) for _ in range(6)]
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _stopped(pool, seconds=3.0)
    assert loop.time() - started < 3.5
    assert len(pids) == 2 and pool.live_workers == 0 and pool.pids == ()
    for pid in pids:  # exited and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for scores in await asyncio.gather(*waiting):  # every accepted turn was answered
        assert all(s.status == "ok" or s.error_type == STOPPED for s in scores)
    stopped = await pool.evaluate(rag_turn())
    assert {s.error_type for s in stopped} == {STOPPED}
    await _stopped(pool)  # twice is safe


async def test_shutdown_without_start_is_safe() -> None:
    pool = LocalWorkerPool([EchoLength()], workers=1, queue_size=1, telemetry=CountingTelemetry())
    await _stopped(pool)
    assert pool.live_workers == 0


def test_evaluators_that_cannot_cross_a_process_boundary_are_refused_at_construction() -> None:
    class Local:  # defined in a function: pickle cannot find it by name
        metric_ids = ("x",)

        async def evaluate(self, turn: Turn) -> list:
            return []

    with pytest.raises(Exception):
        LocalWorkerPool([Local()], workers=1, queue_size=1, telemetry=CountingTelemetry())


async def test_a_turn_that_cannot_be_pickled_gets_error_scores_and_the_worker_goes_on() -> None:
    from types import MappingProxyType

    telemetry = CountingTelemetry()
    pool = LocalWorkerPool([EchoLength()], workers=1, queue_size=4, telemetry=telemetry)
    await pool.start()
    try:
        odd = await pool.evaluate(rag_turn(labels=MappingProxyType({"route": "x"})))
        after = await pool.evaluate(rag_turn(question="fine"))
    finally:
        await _stopped(pool)
    assert {(s.status, s.error_type) for s in odd} == {("error", EXCHANGE_FAILED)}
    assert [s.status for s in after] == ["ok", "ok"]
    assert telemetry.value(LOCAL_WORKER_RESTARTS) == 0
