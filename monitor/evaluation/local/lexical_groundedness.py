"""``local_lexical_groundedness``: share of the answer's content words that occur in the context.

A cheap proxy for the judge's ``groundedness``: no LLM, computed on every sampled turn. It sees
words, not meaning, so a faithful paraphrase scores lower and a fabricated sentence made of
context words scores higher; read it as an early-warning trend, not a verdict. A plural "s" is
tolerated either way. ``details`` adds the support of word bigrams (a stricter signal) and a few
unsupported words. Context = documents' text, else the system prompt. Defect < 0.5.
"""

from __future__ import annotations

from typing import Any, Sequence

from monitor.evaluation.inputs import resolve_context
from monitor.evaluation.local.offload import run_cpu_bound
from monitor.evaluation.local.text import content_words, words
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.model import Score, Turn

__all__ = ["METRIC_ID", "lexical_support", "LexicalGroundednessEvaluator", "register"]

METRIC_ID = "local_lexical_groundedness"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
_MAX_LISTED = 10


def _supported(word: str, vocabulary: set[str]) -> bool:
    if word in vocabulary:
        return True
    return (word.endswith("s") and word[:-1] in vocabulary) or (word + "s") in vocabulary


def lexical_support(answer: str, context: str) -> dict[str, Any] | None:
    """Unigram and bigram support of ``answer`` by ``context``; None when the answer has no content words."""
    answer_words, context_words = words(answer), words(context)
    content = content_words(answer_words)
    if not content:
        return None
    vocabulary = set(context_words)
    supported = [w for w in content if _supported(w, vocabulary)]
    unsupported = sorted({w for w in content if not _supported(w, vocabulary)})
    bigrams = list(zip(answer_words, answer_words[1:]))
    context_bigrams = set(zip(context_words, context_words[1:]))
    bigram_support = sum(b in context_bigrams for b in bigrams) / len(bigrams) if bigrams else None
    return {
        "value": len(supported) / len(content),
        "content_words": len(content),
        "bigram_support": bigram_support,
        "unsupported_words": unsupported[:_MAX_LISTED],
    }


class LexicalGroundednessEvaluator:
    """Lexical support of the answer by the context; skipped without context."""

    metric_ids = (METRIC_ID,)

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self._threshold = threshold

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """Compute the support (in an executor for long texts)."""
        resolved = resolve_context(turn)
        if resolved is None:
            return [skipped(METRIC_ID, SCALE, "no context: no document text and no system prompt")]
        context, source = resolved
        result = await run_cpu_bound(lexical_support, turn.answer, context, size=len(turn.answer) + len(context))
        if result is None:
            return [skipped(METRIC_ID, SCALE, "answer has no content words")]
        value = result.pop("value")
        return [graded(METRIC_ID, value, SCALE, value < self._threshold, details={**result, "context_source": source})]


def register(registry: MetricRegistry) -> None:
    """Add ``local_lexical_groundedness`` to ``registry``."""

    def build(ctx: BuildContext) -> LexicalGroundednessEvaluator:
        return LexicalGroundednessEvaluator(ctx.threshold(METRIC_ID))

    registry.register(
        MetricSpec(
            METRIC_ID, "share of answer content words found in the context (no LLM)", "local", SCALE,
            build=build, default_threshold=DEFAULT_THRESHOLD,
        )
    )
