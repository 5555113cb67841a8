"""Run a turn's evaluators concurrently without letting one evaluator take the others down.

Evaluators report judge failures as ``error`` Scores themselves. Anything else they raise is a
bug: it becomes an ``error`` Score with ``error_type="internal_error"`` for each of the
evaluator's metrics, is counted in :class:`InternalErrors`, and is logged with its traceback
only the first time per evaluator and exception type (never per turn). Cancellation is not an
error and propagates.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Sequence

from monitor.evaluation.scoring import failed
from monitor.interfaces import Evaluator
from monitor.model import Score, Turn

__all__ = ["InternalErrors", "evaluate_turn", "run_guarded"]

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal_error"
_UNKNOWN_SCALE = (0.0, 1.0)  # an internal error knows no value; the scale is informational


class InternalErrors:
    """Counts unexpected evaluator exceptions and logs each (evaluator, type) pair once."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._logged: set[tuple[str, str]] = set()

    def record(self, evaluator: Evaluator, exc: BaseException) -> None:
        """Count ``exc`` and log it if this evaluator has not raised this type before."""
        name = type(evaluator).__name__
        self.counts[name] += 1
        key = (name, type(exc).__name__)
        if key not in self._logged:
            self._logged.add(key)
            log.error("evaluator %s raised %s (logged once)", name, key[1], exc_info=exc)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _internal_scores(evaluator: Evaluator, message: str) -> tuple[Score, ...]:
    return tuple(failed(m, _UNKNOWN_SCALE, INTERNAL_ERROR, message) for m in evaluator.metric_ids)


async def run_guarded(evaluator: Evaluator, turn: Turn, errors: InternalErrors) -> tuple[Score, ...]:
    """``evaluator.evaluate(turn)``; an exception becomes internal-error Scores."""
    try:
        scores = tuple(await evaluator.evaluate(turn))
    except Exception as exc:  # noqa: BLE001 - the whole point: one evaluator must not break the rest
        errors.record(evaluator, exc)
        return _internal_scores(evaluator, f"{type(exc).__name__}: {exc}")
    if not all(isinstance(s, Score) for s in scores):
        wrong = TypeError(f"{type(evaluator).__name__} returned something other than Score objects")
        errors.record(evaluator, wrong)
        return _internal_scores(evaluator, str(wrong))
    return scores


async def evaluate_turn(
    turn: Turn, evaluators: Sequence[Evaluator], errors: InternalErrors | None = None
) -> tuple[Score, ...]:
    """All scores of ``turn``, evaluators run concurrently, in evaluator order.

    Pass one long-lived ``errors`` so repeated failures are counted and logged once.
    """
    errors = errors if errors is not None else InternalErrors()
    results = await asyncio.gather(*(run_guarded(e, turn, errors) for e in evaluators))
    return tuple(score for scores in results for score in scores)
