"""The seeds' inputs turned into the sidecar's :class:`~monitor.model.Turn` objects.

The same parser as ``rag-monitor eval`` (:func:`monitor.offline.rows.parse_row`), so a row scores
the same in Python and on the command line. Names from the three seeds are accepted: Azure's
``question``/``answer``/``context``/``ground_truth``/``messages``, Opik's ``input``/``output``
and Tonic's ``reference`` (answer); giving a name and its alias together is an error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence, Union

from monitor.offline.rows import DatasetError, parse_row
from monitor.evaluation.local.jailbreak_attempt import mark_jailbreak_attempt
from monitor.model import Message, Turn
from monitor.redaction import RedactionConfig, Redactor

__all__ = ["Context", "ChatMessage", "ParsedInput", "parse_input", "parse_row_mapping", "prepared", "redactor_for"]

Context = Union[str, Sequence[Union[str, Mapping[str, Any]]], None]
"""One string (one document), or a list of strings / ``{"content", "id"?, "title"?}`` objects."""
ChatMessage = Mapping[str, Any]
"""``{"role": ..., "content": ..., "context"?: {"citations": [...]}}`` as in the Azure seed."""


@dataclass(frozen=True, slots=True)
class ParsedInput:
    kind: Literal["qa", "conversation"]
    turns: tuple[Turn, ...]


def _pick(name: str, value: Any, alias: str, alias_value: Any) -> Any:
    if value is not None and alias_value is not None:
        raise TypeError(f"give {name} or {alias}, not both")
    return value if value is not None else alias_value


def _history(raw: Sequence[ChatMessage] | None) -> tuple[Message, ...]:
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise TypeError("history: expected a list of {'role', 'content'} objects")
    messages = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str) or not isinstance(item.get("content"), str):
            raise TypeError(f"history[{i}]: expected an object with string 'role' and 'content'")
        messages.append(Message(item["role"], item["content"]))
    return tuple(messages)


def prepared(turn: Turn, redactor: Redactor | None) -> Turn:
    """``turn`` as the sidecar's evaluation stage receives it: personal data replaced (when
    redacting), then marked by the local jailbreak-attempt detector."""
    return mark_jailbreak_attempt(redactor.redact_turn(turn) if redactor is not None else turn)


def parse_row_mapping(row: Mapping[str, Any], line: int = 0, redactor: Redactor | None = None) -> ParsedInput:
    """A data-set row (the ``rag-monitor eval`` JSONL shape) as prepared turns (see
    :func:`prepared`). Raises ValueError naming the key."""
    try:
        parsed = parse_row(row, line)
    except DatasetError as exc:
        raise ValueError(str(exc)) from None
    return ParsedInput(parsed.kind, tuple(prepared(t, redactor) for t in parsed.turns))


def parse_input(*, question: str | None, input: str | None, answer: str | None, output: str | None,
                context: Context, ground_truth: str | None, reference: str | None, system_prompt: str | None,
                history: Sequence[ChatMessage] | None, messages: Sequence[ChatMessage] | None,
                redactor: Redactor | None = None) -> ParsedInput:
    """The keyword arguments of ``score()`` as turns; raises TypeError/ValueError naming the argument."""
    question = _pick("question", question, "input", input)
    answer = _pick("answer", answer, "output", output)
    ground_truth = _pick("ground_truth", ground_truth, "reference", reference)
    if messages is not None:
        others = [n for n, v in (("question", question), ("answer", answer), ("context", context),
                                 ("ground_truth", ground_truth), ("system_prompt", system_prompt),
                                 ("history", history)) if v is not None]
        if others:
            raise TypeError(f"messages carries the whole conversation; drop {', '.join(others)}")
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError("messages: expected a list of message objects")
        return parse_row_mapping({"messages": list(messages)}, redactor=redactor)
    row = {"question": question, "answer": answer, "context": list(context) if isinstance(context, Sequence)
           and not isinstance(context, str) else context, "ground_truth": ground_truth,
           "system_prompt": system_prompt}
    extra = _history(history)
    try:
        parsed = parse_row(row, 0)
    except DatasetError as exc:
        raise ValueError(str(exc)) from None
    turns = tuple(dataclasses.replace(t, history=extra) for t in parsed.turns) if extra else parsed.turns
    return ParsedInput(parsed.kind, tuple(prepared(t, redactor) for t in turns))


def redactor_for(redact: bool | RedactionConfig) -> Redactor | None:
    """The redactor of a ``redact`` argument: True = the sidecar's defaults, a
    :class:`~monitor.redaction.RedactionConfig` = those settings, False = none."""
    if redact is False:
        return None
    config = RedactionConfig() if redact is True else redact
    return Redactor(config) if config.enabled else None
