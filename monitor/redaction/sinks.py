"""Where redaction sits in the pipeline: on each sampled turn, and (text-free mode) in front of the
result sinks.

The evaluation stage applies the redactor (``Redactor.redact_turn``, its ``prepare`` hook) to each
turn it samples, before queueing it: everything downstream — the judge, the durable backlog, the
result store, the JSONL sink, the evaluation events, the API and the status page — only ever holds
redacted text, and a turn that is not evaluated is never redacted, so the cost of redaction follows
the sampled traffic.

:class:`TextFreeResults` (``redaction.keep_text: false``) strips every text from a result before
the sinks see it: scores, ids, labels, timings and token counts stay.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from monitor.interfaces import ResultConsumer
from monitor.model import Document, EvaluationResult, Score, ScoreStatus

__all__ = ["TextFreeResults", "without_text"]


class TextFreeResults:
    """Hands each result to ``consumers`` with all text removed (see :func:`without_text`)."""

    def __init__(self, consumers: Sequence[ResultConsumer]) -> None:
        self._consumers = tuple(consumers)

    def consume_result(self, result: EvaluationResult) -> None:
        bare = without_text(result)
        for consumer in self._consumers:
            consumer.consume_result(bare)


def without_text(result: EvaluationResult) -> EvaluationResult:
    """``result`` keeping scores, ids, labels and numbers only: no question, answer, document
    text or title, history, system prompt, ground truth, judge reason or text-valued detail. An
    error message becomes its presence only."""
    turn = result.turn
    bare = replace(
        turn, question="", answer="", history=(), system_prompt=None, ground_truth=None,
        documents=tuple(Document(d.id, None, d.score) for d in turn.documents),
        error=None if turn.error is None else "error",
    )
    return replace(result, turn=bare, scores=tuple(_score(s) for s in result.scores))


def _score(score: Score) -> Score:
    # Failure and skip reasons are ours (outcome names, missing inputs); a graded score's
    # reason is the judge's prose about the conversation.
    reason = None if score.status == ScoreStatus.OK else score.reason
    return replace(score, reason=reason, details=_numbers(score.details))


def _numbers(details: Mapping[str, Any]) -> dict[str, Any]:
    """The details whose values hold no text (numbers, booleans, lists/maps of them)."""
    return {k: v for k, v in details.items() if _textless(v)}


def _textless(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_textless(v) for v in value)
    if isinstance(value, Mapping):
        return all(_textless(v) for v in value.values())
    return False
