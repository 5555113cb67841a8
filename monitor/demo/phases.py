"""Per-metric outcomes before and after the regression, counted by the demo from the results.

The rolling windows show where the rates are *now*; this tally answers the demo's question, "did
the regression move the metric?", by attributing each result to the phase its turn was sent in
(looked up by trace id), whenever it was evaluated. It also knows which sent turns still await
their result, which is how the demo waits for the pipeline to drain.

Turns are registered and results consumed on the event loop; :meth:`PhaseTally.snapshot` may be
called from another thread (the terminal view renders in one).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

from monitor.demo.traffic import AFTER, BEFORE, SentTurn
from monitor.model import EvaluationResult, ScoreStatus

__all__ = ["PhaseStats", "PhaseTally"]

PHASES = (BEFORE, AFTER)


@dataclass(frozen=True, slots=True)
class PhaseStats:
    evaluations: int = 0  # scored: pass + defect
    defects: int = 0
    errors: int = 0
    skipped: int = 0
    score_sum: float = 0.0
    scores: int = 0

    @property
    def defect_rate(self) -> float:
        return self.defects / self.evaluations if self.evaluations else math.nan

    @property
    def mean(self) -> float:
        return self.score_sum / self.scores if self.scores else math.nan

    def add(self, outcome: str, value: float | None) -> "PhaseStats":
        """These stats with one more score (``value`` None unless it was scored)."""
        finite = value if value is not None and math.isfinite(value) else None
        return PhaseStats(
            self.evaluations + (outcome in ("pass", "defect")), self.defects + (outcome == "defect"),
            self.errors + (outcome == "error"), self.skipped + (outcome == "skipped"),
            self.score_sum + (finite or 0.0), self.scores + (finite is not None))


class PhaseTally:
    """ResultConsumer + TrafficObserver. ``max_outstanding`` bounds the turns awaited at once:
    past it the oldest is forgotten and counted in ``forgotten`` (its result then counts nowhere)."""

    def __init__(self, max_outstanding: int = 50_000) -> None:
        self._max_outstanding = max_outstanding
        self._outstanding: OrderedDict[str, str] = OrderedDict()  # trace id → phase
        self._stats: dict[str, dict[str, PhaseStats]] = {}
        self._lock = threading.Lock()
        self._drained = asyncio.Event()
        self._drained.set()
        self.sent = 0
        self.evaluated = 0
        self.forgotten = 0
        self.regression_started_at: float | None = None

    # -- TrafficObserver ------------------------------------------------------------------------

    def turn_sent(self, turn: SentTurn) -> None:
        self.sent += 1
        self._outstanding[turn.trace_id] = turn.phase
        self._drained.clear()
        while len(self._outstanding) > self._max_outstanding:
            self._outstanding.popitem(last=False)
            self.forgotten += 1

    def regression_started(self, at_unix: float) -> None:
        self.regression_started_at = at_unix

    # -- ResultConsumer -------------------------------------------------------------------------

    def consume_result(self, result: EvaluationResult) -> None:
        phase = self._outstanding.pop(result.turn.trace_id, None)
        if phase is None:
            return  # not one of ours (another app, or forgotten)
        self.evaluated += 1
        with self._lock:
            per_metric = self._stats
            for score in result.scores:
                value = score.value if score.status == ScoreStatus.OK else None
                phases = per_metric.setdefault(score.metric, {})
                phases[phase] = phases.get(phase, PhaseStats()).add(score.outcome, value)
        if not self._outstanding:
            self._drained.set()

    # -- reading --------------------------------------------------------------------------------

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    def snapshot(self) -> dict[str, dict[str, PhaseStats]]:
        """metric → phase → stats (both phases present for every metric seen)."""
        with self._lock:
            return {metric: {phase: phases.get(phase, PhaseStats()) for phase in PHASES}
                    for metric, phases in sorted(self._stats.items())}

    async def wait_drained(self, timeout: float) -> int:
        """Wait until every sent turn has its result, at most ``timeout`` seconds; returns how
        many are still outstanding (a turn the sidecar dropped never completes)."""
        try:
            await asyncio.wait_for(self._drained.wait(), max(0.0, timeout))
        except TimeoutError:
            pass
        return len(self._outstanding)
