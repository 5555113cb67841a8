"""``retrieval_score`` (Azure quality set): do the retrieved documents cover the question's intents?

The seed's procedure, in one call: the judge splits the question (read with the history) into
intents and says, per intent, whether the documents answer it and which ones. We compute the
arithmetic ourselves, never the judge:

    f     = intents answered / intents
    value = 1 + 4 · f²            (f² penalises misses, as in the seed; reported on 1–5)

``details`` keeps ``fraction`` (f), ``fraction_squared`` and the intents. Defect below the
threshold (default 3, i.e. f² < 0.5, about 71% of intents answered).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from monitor.evaluation.inputs import MAX_DOCUMENTS, Input, Missing, document_blocks, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.parsing import Parsed, ParseFailure, check_keys, first_failure, get_bool, get_list, get_text
from monitor.evaluation.prompting import (
    array_field,
    bool_field,
    build_request,
    int_field,
    object_schema,
    system_prompt,
    text_field,
)
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = [
    "METRIC_ID",
    "SYSTEM",
    "Intent",
    "parse_reply",
    "answered_fraction",
    "score_from_fraction",
    "RetrievalScoreEvaluator",
    "register",
]

METRIC_ID = "retrieval_score"
SCALE = (1.0, 5.0)
DEFAULT_THRESHOLD = 3.0
MAX_INTENTS = 8

SYSTEM = system_prompt(
    "You judge whether retrieved documents can answer a user's question. 1) Split the question, "
    f"read with the history if given, into its distinct intents (1 to {MAX_INTENTS}, each a short "
    "standalone question). 2) For each intent decide whether the documents contain its answer or "
    "information it follows from, and list the numbers of those documents (docN = N).",
    "Keys: intents (array of {intent, answered, docs}); intent at most 12 words; docs empty when not answered.",
)


def reply_schema(documents: int) -> dict[str, Any]:
    """Reply schema for ``documents`` numbered documents."""
    item = object_schema(
        {
            "intent": text_field(),
            "answered": bool_field(),
            "docs": array_field(int_field(1, documents), 0, documents),
        }
    )
    return object_schema({"intents": array_field(item, 1, MAX_INTENTS)})


@dataclass(frozen=True, slots=True)
class Intent:
    intent: str
    answered: bool
    docs: tuple[int, ...]


def _parse_docs(item: Mapping[str, Any], documents: int) -> Parsed[tuple[int, ...]]:
    docs = get_list(item, "docs", 0, documents)
    if isinstance(docs, ParseFailure):
        return docs
    for n in docs:
        if isinstance(n, bool) or not isinstance(n, int):
            return ParseFailure("parse_error", f"docs: expected integers, got {type(n).__name__}")
        if not 1 <= n <= documents:
            return ParseFailure("out_of_range", f"docs: document {n} is outside 1..{documents}")
    return tuple(docs)


def _parse_intent(item: Any, documents: int) -> Parsed[Intent]:
    bad = check_keys(item, ("intent", "answered", "docs"))
    if bad:
        return bad
    intent, answered, docs = get_text(item, "intent"), get_bool(item, "answered"), _parse_docs(item, documents)
    failure = first_failure(intent, answered, docs)
    return failure if failure else Intent(intent, answered, docs)  # type: ignore[arg-type]


def parse_reply(data: Mapping[str, Any], documents: int) -> Parsed[tuple[Intent, ...]]:
    """``{"intents": [{"intent": str, "answered": bool, "docs": [1..documents]}, ...]}``."""
    bad = check_keys(data, ("intents",))
    if bad:
        return bad
    items = get_list(data, "intents", 1, MAX_INTENTS)
    if isinstance(items, ParseFailure):
        return items
    intents = [_parse_intent(item, documents) for item in items]
    failure = first_failure(*intents)
    return failure if failure else tuple(intents)  # type: ignore[arg-type]


def answered_fraction(intents: Sequence[Intent]) -> float:
    """f: the share of intents the documents answer (all intents weigh the same)."""
    return sum(i.answered for i in intents) / len(intents)


def score_from_fraction(fraction: float) -> float:
    """The reported value on 1–5: ``1 + 4·f²``."""
    return 1.0 + 4.0 * fraction * fraction


class RetrievalScoreEvaluator:
    """The intents procedure; skipped without a question or without document text."""

    metric_ids = (METRIC_ID,)

    def __init__(self, judge: Judge, threshold: float, max_context_chars: int) -> None:
        self._judge = judge
        self._threshold = threshold
        self._max_context_chars = max_context_chars

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One judge call; the arithmetic is done here."""
        question = gather(turn, (Input.QUESTION,), (Input.HISTORY,))
        docs = document_blocks(turn, self._max_context_chars)
        for missing in (question, docs):
            if isinstance(missing, Missing):
                return [skipped(METRIC_ID, SCALE, missing.reason)]
        assert not isinstance(question, Missing) and not isinstance(docs, Missing)
        blocks, details = docs
        request = build_request(
            METRIC_ID, SYSTEM, (*question.blocks, *blocks), reply_schema(len(blocks)), max_output_tokens=400
        )
        verdict = await ask(self._judge, request, lambda data: parse_reply(data, len(blocks)))
        if isinstance(verdict, Failure):
            return [verdict.score(METRIC_ID, SCALE, details)]
        fraction = answered_fraction(verdict.value)
        value = score_from_fraction(fraction)
        details.update(
            fraction=fraction,
            fraction_squared=fraction * fraction,
            intents=[{"intent": i.intent, "answered": i.answered, "docs": list(i.docs)} for i in verdict.value],
        )
        return [graded(METRIC_ID, value, SCALE, value < self._threshold, usage=verdict.usage, details=details)]


def register(registry: MetricRegistry) -> None:
    """Add ``retrieval_score`` to ``registry``."""

    def build(ctx: BuildContext) -> RetrievalScoreEvaluator:
        return RetrievalScoreEvaluator(ctx.require_judge(), ctx.threshold(METRIC_ID), ctx.max_context_chars)

    registry.register(
        MetricSpec(
            METRIC_ID, f"question intents answered by the documents, 1 + 4f^2 (max {MAX_DOCUMENTS} docs)",
            "judge", SCALE, build=build, default_threshold=DEFAULT_THRESHOLD,
        )
    )
