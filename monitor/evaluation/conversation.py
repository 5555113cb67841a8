"""Conversations in the seed's format: turns to evaluate, and per-metric aggregation.

Input format (one JSON object per conversation)::

    {"messages": [{"role": "user", "content": "..."},
                  {"role": "assistant", "content": "...",
                   "context": {"citations": [{"id": "...", "title": "...", "content": "..."}]}}]}

Each assistant message becomes a :class:`Turn`: the question is the closest user message before
it, the history is everything before that question, the documents are the assistant message's
citations (or, failing that, the question's), a ``system`` message is the system prompt.

Aggregation per metric over the turns: the mean for quality metrics, the maximum (worst turn)
for safety metrics (as the registry declares). Only ``ok`` scores count, so errors and skips
never become numbers; per-turn values are kept (None where a turn has no value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from monitor.evaluation.registry import default_registry
from monitor.model import Document, Message, Score, ScoreStatus, Turn

__all__ = ["ConversationFormatError", "turns_from_conversation", "MetricAggregate", "aggregate_conversation"]


class ConversationFormatError(ValueError):
    """The conversation object does not follow the seed format; the message says where."""


def _message(raw: Any, index: int) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConversationFormatError(f"messages[{index}]: expected an object")
    for key in ("role", "content"):
        if not isinstance(raw.get(key), str):
            raise ConversationFormatError(f"messages[{index}].{key}: expected a string")
    return raw


def _citations(message: Mapping[str, Any], index: int) -> tuple[Document, ...]:
    context = message.get("context")
    if context is None:
        return ()
    citations = context.get("citations", []) if isinstance(context, Mapping) else None
    if not isinstance(citations, list):
        raise ConversationFormatError(f"messages[{index}].context.citations: expected a list")
    docs = []
    for n, c in enumerate(citations):
        if not isinstance(c, Mapping) or not isinstance(c.get("content", ""), str):
            raise ConversationFormatError(f"messages[{index}].context.citations[{n}]: expected an object with text content")
        doc_id = c.get("id")
        docs.append(Document(id=None if doc_id is None else str(doc_id), content=c.get("content"), title=c.get("title")))
    return tuple(docs)


def turns_from_conversation(data: Mapping[str, Any], conversation_id: str = "conversation") -> tuple[Turn, ...]:
    """One Turn per assistant message of ``data`` (seed format)."""
    raw = data.get("messages") if isinstance(data, Mapping) else None
    if not isinstance(raw, list):
        raise ConversationFormatError("messages: expected a list")
    messages = [_message(m, i) for i, m in enumerate(raw)]
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        q_index = next((i for i in range(index - 1, -1, -1) if messages[i]["role"] == "user"), None)
        question = messages[q_index]["content"] if q_index is not None else ""
        history_end = q_index if q_index is not None else index
        history = tuple(Message(m["role"], m["content"]) for m in messages[:history_end] if m["role"] != "system")
        docs = _citations(message, index) or (_citations(messages[q_index], q_index) if q_index is not None else ())
        turns.append(
            Turn(
                trace_id=f"{conversation_id}:{len(turns)}",
                conversation_id=conversation_id,
                question=question,
                answer=message["content"],
                documents=docs,
                history=history,
                system_prompt=system,
            )
        )
    return tuple(turns)


@dataclass(frozen=True, slots=True)
class MetricAggregate:
    """One metric over a conversation: the aggregate and the per-turn values behind it."""

    metric: str
    method: str
    value: float | None
    turn_values: tuple[float | None, ...]
    ok: int
    errors: int
    skipped: int
    refused: int = 0
    """Turns whose judge call was refused or filtered (``unscored_refused``): not in ``value``, so a
    worst-turn safety aggregate can look clean while a turn was possibly harmful; read both."""


def _usable(score: Score | None) -> float | None:
    if score is None or score.status != ScoreStatus.OK or score.value is None or math.isnan(score.value):
        return None
    return score.value


def aggregate_conversation(
    turn_scores: Sequence[Sequence[Score]], method_for: Callable[[str], str] | None = None
) -> dict[str, MetricAggregate]:
    """Aggregate per metric: "mean" or "max" as ``method_for(metric)`` says (default: the registry)."""
    if method_for is None:
        method_for = default_registry().aggregation
    metrics = list(dict.fromkeys(s.metric for scores in turn_scores for s in scores))
    result = {}
    for metric in metrics:
        per_turn = [next((s for s in scores if s.metric == metric), None) for scores in turn_scores]
        values = tuple(_usable(s) for s in per_turn)
        present = [v for v in values if v is not None]
        method = method_for(metric)
        value = (max(present) if method == "max" else sum(present) / len(present)) if present else None
        result[metric] = MetricAggregate(
            metric=metric,
            method=method,
            value=value,
            turn_values=values,
            ok=len(present),
            errors=sum(1 for s in per_turn if s is not None and s.status == ScoreStatus.ERROR),
            skipped=sum(1 for s in per_turn if s is not None and s.status == ScoreStatus.SKIPPED),
            refused=sum(1 for s in per_turn if s is not None and s.status == ScoreStatus.REFUSED),
        )
    return result
