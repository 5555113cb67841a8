"""Which parts of a turn a metric sends to the judge, and why a metric is skipped.

A metric declares the inputs it needs and the ones it uses when present; :func:`gather` turns a
:class:`Turn` into data blocks or a :class:`Missing` reason. Context is the documents' text, or
the system prompt when no document carries text (apps that ground in a long system prompt);
``context_source`` records which, because the two mean different things on a dashboard.
Long texts are cut to a per-input budget: the judge bill grows with every character sent. The
context budget is shared across the documents (:func:`share_budget`): each gets an equal share,
and what a short document leaves unused goes to the longer ones, so a claim drawn from the last
document is still in view (cutting the joined text would drop the later documents first and make
their claims read as unsupported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Collection, Mapping, Sequence

from monitor.evaluation.prompting import DataBlock
from monitor.model import Turn

__all__ = [
    "Input",
    "Missing",
    "Gathered",
    "resolve_context",
    "document_texts",
    "document_blocks",
    "MAX_DOCUMENTS",
    "gather",
    "clip",
    "share_budget",
    "DEFAULT_MAX_CONTEXT_CHARS",
]

DEFAULT_MAX_CONTEXT_CHARS = 12_000
# Question, answer, reference and history are usually short; the cap only stops outliers.
_MAX_TEXT_CHARS = 6_000
_MAX_HISTORY_MESSAGES = 6
_MAX_HISTORY_MESSAGE_CHARS = 600


class Input(str, Enum):
    QUESTION = "question"
    ANSWER = "answer"
    CONTEXT = "context"
    GROUND_TRUTH = "reference"
    HISTORY = "history"
    SYSTEM_PROMPT = "system_prompt"


@dataclass(frozen=True, slots=True)
class Missing:
    """A required input is absent: the metric is skipped with this reason."""

    reason: str


@dataclass(frozen=True, slots=True)
class Gathered:
    """The blocks to send, in a fixed order, plus facts worth keeping in ``Score.details``."""

    blocks: tuple[DataBlock, ...]
    details: Mapping[str, object] = field(default_factory=dict)

    def has(self, name: Input) -> bool:
        return any(b.name == name.value for b in self.blocks)


def clip(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_chars``; return it and whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars] + " […]", True


def share_budget(lengths: Sequence[int], budget: int) -> list[int]:
    """Characters each text may keep so that together they fit ``budget``: equal shares, the
    share a short text does not need handed on to the longer ones (water-filling)."""
    allowed = [0] * len(lengths)
    left, pending = budget, sorted(range(len(lengths)), key=lambda i: lengths[i])
    while pending:
        share = left // len(pending)
        index = pending[0]
        if lengths[index] > share:
            for i in pending:
                allowed[i] = share
            return allowed
        allowed[index] = lengths[index]
        left -= lengths[index]
        pending.pop(0)
    return allowed


def _budgeted_documents(texts: Sequence[str], budget: int) -> tuple[str, bool]:
    """The documents joined, each cut to its share of ``budget``; whether any was cut."""
    allowed = share_budget([len(t) for t in texts], budget)
    parts = [clip(t, n) for t, n in zip(texts, allowed)]
    return "\n\n".join(p for p, _ in parts), any(cut for _, cut in parts)


def document_texts(turn: Turn) -> tuple[str, ...]:
    """Texts of the documents that carry content (in retrieval order)."""
    return tuple(d.content for d in turn.documents if d.content and d.content.strip())


def resolve_context(turn: Turn) -> tuple[str, str] | None:
    """``(text, source)`` with source "documents" | "system_prompt"; None when there is neither."""
    texts = document_texts(turn)
    if texts:
        return "\n\n".join(texts), "documents"
    if turn.system_prompt and turn.system_prompt.strip():
        return turn.system_prompt, "system_prompt"
    return None


def _history_text(turn: Turn) -> str | None:
    messages = turn.history[-_MAX_HISTORY_MESSAGES:]
    lines = [f"{m.role}: {clip(m.content, _MAX_HISTORY_MESSAGE_CHARS)[0]}" for m in messages if m.content]
    return "\n".join(lines) or None


def _raw(turn: Turn, name: Input) -> str | None:
    if name is Input.QUESTION:
        return turn.question
    if name is Input.ANSWER:
        return turn.answer
    if name is Input.GROUND_TRUTH:
        return turn.ground_truth
    if name is Input.SYSTEM_PROMPT:
        return turn.system_prompt
    if name is Input.HISTORY:
        return _history_text(turn)
    raise ValueError(name)  # CONTEXT is resolved separately


_MISSING_REASON = {
    Input.QUESTION: "no question",
    Input.ANSWER: "no answer",
    Input.CONTEXT: "no context: no document text and no system prompt",
    Input.GROUND_TRUTH: "no ground truth",
    Input.HISTORY: "no history",
    Input.SYSTEM_PROMPT: "no system prompt",
}


def gather(
    turn: Turn,
    required: Collection[Input],
    optional: Collection[Input] = (),
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS,
) -> Gathered | Missing:
    """Blocks for the ``required`` and available ``optional`` inputs, in :class:`Input` order."""
    blocks: list[DataBlock] = []
    details: dict[str, object] = {}
    for name in Input:
        if name not in required and name not in optional:
            continue
        resolved = resolve_context(turn) if name is Input.CONTEXT else None
        raw = resolved[0] if resolved else (None if name is Input.CONTEXT else _raw(turn, name))
        if raw is None or not raw.strip():
            if name in required:
                return Missing(_MISSING_REASON[name])
            continue
        if resolved is not None and resolved[1] == "documents":
            # Each document cut to its share of the budget: never re-cut the joined text.
            text, cut = _budgeted_documents(document_texts(turn), max_context_chars)
        else:
            text, cut = clip(raw, max_context_chars if name is Input.CONTEXT else _MAX_TEXT_CHARS)
        if name is Input.CONTEXT and resolved is not None:
            details["context_source"] = resolved[1]
        if cut:
            details[f"{name.value}_truncated"] = True
        blocks.append(DataBlock(name.value, text))
    return Gathered(tuple(blocks), details)


MAX_DOCUMENTS = 20


def document_blocks(turn: Turn, max_context_chars: int) -> tuple[tuple[DataBlock, ...], dict[str, object]] | Missing:
    """One block per document with text (``doc1``…), the budget shared between them (:func:`share_budget`).

    At most :data:`MAX_DOCUMENTS` are sent; ``details`` records how many were judged.
    """
    texts = document_texts(turn)
    if not texts:
        reason = "documents carry no text" if turn.documents else "no documents"
        return Missing(reason)
    judged = texts[:MAX_DOCUMENTS]
    allowed = share_budget([len(t) for t in judged], max_context_chars)
    blocks, cut_any = [], False
    for n, (text, limit) in enumerate(zip(judged, allowed), start=1):
        clipped, cut = clip(text, limit)
        cut_any = cut_any or cut
        blocks.append(DataBlock(f"doc{n}", clipped))
    details: dict[str, object] = {"documents": len(texts), "documents_judged": len(judged)}
    if cut_any:
        details["documents_truncated"] = True
    return tuple(blocks), details
