"""``retrieval_score`` (Azure quality set): do the retrieved documents cover the question's intents?

The seed's procedure, in one call: the judge splits the question (read with the history) into
intents and says, per intent, whether the documents answer it and which ones. We compute the
arithmetic ourselves, never the judge:

    f     = intents answered / intents
    value = 1 + 4 · f²            (f² penalises misses, as in the seed; reported on 1–5)

"Answered" is the seed's: the documents contain the intent's answer, or it can be derived from
them, or they address the intent itself; each answered intent cites the documents that do, and a
reply whose citations disagree with its verdict (answered with no document, unanswered with one)
is a ``parse_error``. A turn with no information need (a greeting, thanks) has no intent: the judge
says why and the metric is ``skipped`` with that reason instead of inventing one.

``details`` keeps ``fraction`` (f), ``fraction_squared`` and the intents. Defect below the
threshold (default 3, i.e. f² < 0.5, about 71% of intents answered).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Sequence

from pydantic import Field, model_validator

from monitor.evaluation.inputs import MAX_DOCUMENTS, Input, Missing, document_blocks, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import build_request, prompt_version, system_prompt
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.judge.replies import Reason, ReplyModel, ReplyShape, reply_model, whole_number
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = [
    "METRIC_ID",
    "SYSTEM",
    "Intent",
    "intents_reply",
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
    f"read with the history if given, into its distinct intents (at most {MAX_INTENTS}, each a short "
    "standalone question). A message with no information need (a greeting, thanks, small talk) has "
    "no intent: return none. 2) For each intent, answered is true when the documents contain its "
    "answer, when the answer can be derived from them, or when they address the intent itself; "
    "docs lists the numbers of those documents (docN = N), and is empty exactly when answered is "
    "false. Use only the documents, not your own knowledge.",
    "Keys: reason (at most 20 words: what the documents cover, or why there is no intent), then "
    "intents (array of {intent, answered, docs}); intent at most 12 words.",
)


PROMPT_VERSION = prompt_version(SYSTEM, "intents_reply(n): reason, intents[{intent, answered, docs}] "
                                "with docs empty exactly when not answered")


@dataclass(frozen=True, slots=True)
class Intent:
    """One intent of the question, whether the documents answer it, and which ones."""

    intent: str
    answered: bool
    docs: tuple[int, ...]


class _IntentBase(ReplyModel):
    @model_validator(mode="after")
    def _citations_agree(self) -> "_IntentBase":
        answered, docs = getattr(self, "answered"), getattr(self, "docs")
        if answered and not docs:
            raise ValueError("an answered intent cites no document")
        if not answered and docs:
            raise ValueError("an unanswered intent cites documents")
        return self


@functools.cache
def intents_reply(documents: int) -> ReplyShape[ReplyModel]:
    """The reply declaration for ``documents`` numbered documents: a reason, then 0 to 8
    intents, each citing documents 1..``documents`` exactly when answered."""
    doc = Annotated[int, Field(ge=1, le=documents), whole_number]  # constraints first: see replies
    item = reply_model(f"Intent{documents}", (
        ("intent", Reason, None), ("answered", bool, None),
        ("docs", list[doc], Field(max_length=documents)),
    ), base=_IntentBase)
    return ReplyShape(METRIC_ID, reply_model(f"Intents{documents}", (
        ("reason", Reason, None),
        ("intents", list[item], Field(max_length=MAX_INTENTS)),  # type: ignore[valid-type]
    )))


def answered_fraction(intents: Sequence[Intent]) -> float:
    """f: the share of intents the documents answer (all intents weigh the same)."""
    return sum(i.answered for i in intents) / len(intents)


def score_from_fraction(fraction: float) -> float:
    """The reported value on 1–5: ``1 + 4·f²``."""
    return 1.0 + 4.0 * fraction * fraction


class RetrievalScoreEvaluator:
    """The intents procedure; skipped without a question or without document text."""

    metric_ids: tuple[str, ...] = (METRIC_ID,)
    prompt_versions = {METRIC_ID: PROMPT_VERSION}

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
        details["prompt_version"] = PROMPT_VERSION
        request = build_request(METRIC_ID, SYSTEM, (*question.blocks, *blocks), intents_reply(len(blocks)),
                                max_output_tokens=500)
        reply = await ask(self._judge, request)
        if isinstance(reply, Failure):
            return [reply.score(METRIC_ID, SCALE, details)]
        reason = str(getattr(reply.value, "reason"))
        intents = [Intent(i.intent, i.answered, tuple(i.docs)) for i in getattr(reply.value, "intents")]
        if not intents:
            return [skipped(METRIC_ID, SCALE, f"no information need in the question: {reason}", details)]
        fraction = answered_fraction(intents)
        value = score_from_fraction(fraction)
        details.update(
            fraction=fraction,
            fraction_squared=fraction * fraction,
            intents=[{"intent": i.intent, "answered": i.answered, "docs": list(i.docs)} for i in intents],
        )
        return [graded(METRIC_ID, value, SCALE, value < self._threshold, reason=reason, usage=reply.usage,
                       details=details)]


def register(registry: MetricRegistry) -> None:
    """Add ``retrieval_score`` to ``registry``."""

    def build(ctx: BuildContext) -> RetrievalScoreEvaluator:
        return RetrievalScoreEvaluator(ctx.require_judge(), ctx.threshold(METRIC_ID), ctx.max_context_chars)

    registry.register(
        MetricSpec(
            METRIC_ID, f"question intents answered by the documents, 1 + 4f^2 (max {MAX_DOCUMENTS} docs)",
            "judge", SCALE, build=build, default_threshold=DEFAULT_THRESHOLD,
            inputs=("question", "context", "history?"), seed="Azure",
        )
    )
