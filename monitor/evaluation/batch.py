"""Evaluate many turns with a bounded number in flight (the offline counterpart of the
sidecar's worker pool): the Python API's ``Scorer`` and ``rag-monitor compare`` use it.

Work items are (group, turn) pairs so that one long conversation does not serialise a run; a
group's ``on_group`` callback fires as soon as all its turns are done. Results keep input order.
Unexpected evaluator exceptions are already internal-error Scores (``evaluate_turn``); a failing
callback stops the batch (the TaskGroup cancels the other workers).
"""

from __future__ import annotations

import asyncio
from typing import Callable, Iterator, Sequence

from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.interfaces import Evaluator
from monitor.model import Score, Turn

__all__ = ["evaluate_groups"]


async def evaluate_groups(groups: Sequence[Sequence[Turn]], evaluators: Sequence[Evaluator], concurrency: int, *,
                          errors: InternalErrors | None = None,
                          on_group: Callable[[int], None] = lambda index: None) -> list[list[tuple[Score, ...]]]:
    """Scores per turn per group, at most ``concurrency`` turns evaluated at once."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    errors = errors if errors is not None else InternalErrors()
    scores: list[list[tuple[Score, ...]]] = [[() for _ in g] for g in groups]
    remaining = [len(g) for g in groups]
    work: Iterator[tuple[int, int]] = iter([(g, t) for g, turns in enumerate(groups) for t in range(len(turns))])

    async def worker() -> None:
        for g, t in work:  # one shared iterator: each turn is taken by exactly one worker
            scores[g][t] = await evaluate_turn(groups[g][t], evaluators, errors)
            remaining[g] -= 1
            if remaining[g] == 0:
                on_group(g)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, sum(remaining)))):
            group.create_task(worker())
    return scores
