"""evaluate_turn: concurrent, and no evaluator's exception escapes."""

from __future__ import annotations

import asyncio
import logging
from typing import Sequence

import pytest

from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.evaluation.scoring import graded
from monitor.model import Score, Turn
from tests.evaluation.fakes import rag_turn


class Fixed:
    def __init__(self, metric: str, started: asyncio.Event | None = None, wait: asyncio.Event | None = None) -> None:
        self.metric_ids = (metric,)
        self._started, self._wait = started, wait

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        if self._started:
            self._started.set()
        if self._wait:
            await self._wait.wait()
        return [graded(self.metric_ids[0], 1.0, (0, 1), False)]


class Broken:
    metric_ids = ("a", "b")

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        raise RuntimeError("bug")


class Liar:
    metric_ids = ("c",)

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        return [0.5]  # type: ignore[list-item]


async def test_exceptions_become_internal_error_scores_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    errors = InternalErrors()
    evaluators = [Fixed("x"), Broken(), Liar()]
    with caplog.at_level(logging.ERROR, logger="monitor.evaluation.runner"):
        for _ in range(3):
            scores = await evaluate_turn(rag_turn(), evaluators, errors)
    assert [(s.metric, s.status, s.error_type) for s in scores] == [
        ("x", "ok", None),
        ("a", "error", "internal_error"),
        ("b", "error", "internal_error"),
        ("c", "error", "internal_error"),
    ]
    assert errors.total == 6 and errors.counts["Broken"] == 3
    assert len(caplog.records) == 2  # once per evaluator and exception type


async def test_evaluators_run_concurrently() -> None:
    release = asyncio.Event()
    first_started = asyncio.Event()
    # The second evaluator releases the first: this only finishes if both run at once.
    class Releaser(Fixed):
        async def evaluate(self, turn: Turn) -> Sequence[Score]:
            await first_started.wait()
            release.set()
            return await super().evaluate(turn)

    scores = await asyncio.wait_for(
        evaluate_turn(rag_turn(), [Fixed("slow", first_started, release), Releaser("fast")]), timeout=5
    )
    assert [s.metric for s in scores] == ["slow", "fast"]


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()
    task = asyncio.create_task(evaluate_turn(rag_turn(), [Fixed("w", started, asyncio.Event())]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
