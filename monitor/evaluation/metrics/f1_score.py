"""``f1_score`` (traditional metric, local tier): token F1 of the answer against the ground truth.

Normalisation as in the SQuAD evaluation script: lowercase, delete ASCII punctuation, drop the
articles a/an/the, collapse whitespace. F1 over the multiset of tokens; 0.0 when nothing is
shared, including when either side normalises to no tokens (SQuAD v2 would give 1.0 when both
are empty; an empty answer is never a pass here). Skipped without ground truth. Defect < 0.5.

Each side is read through its first and last 16 Ki characters (``VIEW``), so the cost has a
ceiling whatever arrives (a 1 MiB answer took the loop 80–650 ms); F1 is exact for texts up to
32 Ki characters, and for longer ones it compares those two ends.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

from monitor.evaluation.local.offload import run_cpu_bound
from monitor.evaluation.local.text import bounded_view
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.model import Score, Turn

__all__ = ["METRIC_ID", "normalize_answer", "f1_score", "F1Evaluator", "register"]

METRIC_ID = "f1_score"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
VIEW = (16_384, 16_384)  # characters read from the start and the end of each side

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower, strip ASCII punctuation, drop articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def f1_score(prediction: str, truth: str) -> float:
    """Token F1 between ``prediction`` and ``truth`` after normalisation."""
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    shared = sum((Counter(pred) & Counter(gold)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(pred), shared / len(gold)
    return 2 * precision * recall / (precision + recall)


class F1Evaluator:
    """``f1_score`` on a turn; skipped without ground truth."""

    metric_ids: tuple[str, ...] = (METRIC_ID,)

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self._threshold = threshold

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """F1 of ``turn.answer`` against ``turn.ground_truth``."""
        if not turn.ground_truth or not turn.ground_truth.strip():
            return [skipped(METRIC_ID, SCALE, "no ground truth", {"cause": "no_ground_truth"})]
        answer, truth = bounded_view(turn.answer, *VIEW), bounded_view(turn.ground_truth, *VIEW)
        value = await run_cpu_bound(f1_score, answer, truth, size=len(answer) + len(truth))
        # A number, not a sentence: the reason says what it measures and the rule that judged it.
        rule = "below" if value < self._threshold else "not below"
        reason = f"token F1 {value:.2f} against the ground truth ({rule} the threshold {self._threshold:g})"
        return [graded(METRIC_ID, value, SCALE, value < self._threshold, reason=reason)]


def register(registry: MetricRegistry) -> None:
    """Add ``f1_score`` to ``registry``."""

    def build(ctx: BuildContext) -> F1Evaluator:
        return F1Evaluator(ctx.threshold(METRIC_ID))

    registry.register(
        MetricSpec(
            METRIC_ID, "token F1 against the ground truth (SQuAD normalisation)", "local", SCALE,
            build=build, default_threshold=DEFAULT_THRESHOLD, inputs=("answer", "ground_truth"), seed="Azure",
        )
    )
