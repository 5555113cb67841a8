"""Evaluators that misbehave inside a local worker process (they must be importable there, so
they live in a module, not in a test function)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

from monitor.evaluation.scoring import graded
from monitor.model import Score, Turn

__all__ = ["EchoLength", "ExitOn", "HangOn", "PID_METRIC"]

PID_METRIC = "test_worker_pid"


class EchoLength:
    """Scores the question's length and reports the process it ran in."""

    metric_ids = ("test_length", PID_METRIC)

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        return [graded("test_length", float(len(turn.question)), (0.0, 1e9), False),
                graded(PID_METRIC, float(os.getpid()), (0.0, 1e9), False)]


class ExitOn:
    """Ends its process abruptly on a question holding ``marker``; with ``once`` set to a file
    path, only while that file exists (it is removed first, so the retry succeeds)."""

    metric_ids = ("test_exit",)

    def __init__(self, marker: str, once: Path | None = None) -> None:
        self.marker, self.once = marker, once

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        if self.marker in turn.question and (self.once is None or self.once.exists()):
            if self.once is not None:
                self.once.unlink()
            os._exit(3)
        return [graded("test_exit", 0.0, (0.0, 1.0), False)]


class HangOn:
    """Blocks its process for ``seconds`` on a question holding ``marker`` while ``once`` exists."""

    metric_ids = ("test_hang",)

    def __init__(self, marker: str, seconds: float, once: Path) -> None:
        self.marker, self.seconds, self.once = marker, seconds, once

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        if self.marker in turn.question and self.once.exists():
            self.once.unlink()
            time.sleep(self.seconds)  # a stuck CPU-bound scorer, as the pool sees one
        return [graded("test_hang", 0.0, (0.0, 1.0), False)]
