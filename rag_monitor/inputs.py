"""The seeds' inputs turned into the sidecar's :class:`~monitor.model.Turn` objects.

The same parser as ``rag-monitor eval`` (:func:`monitor.eval_rows.parse_row`), so a row scores
the same in Python and on the command line. Names from the three seeds are accepted: Azure's
``question``/``answer``/``context``/``ground_truth``/``messages``, Opik's ``input``/``output``
and Tonic's ``reference`` (answer); giving a name and its alias together is an error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence, Union

from monitor.eval_rows import DatasetError, parse_row
from monitor.evaluation.local.jailbreak_attempt import mark_jailbreak_attempt
from monitor.model import Message, Turn

__all__ = ["Context", "ChatMessage", "ParsedInput", "parse_input", "parse_row_mapping"]

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


def parse_row_mapping(row: Mapping[str, Any], line: int = 0) -> ParsedInput:
    """A data-set row (the ``rag-monitor eval`` JSONL shape) as turns, each marked by the local
    jailbreak-attempt detector as the sidecar marks them. Raises ValueError naming the key."""
    try:
        parsed = parse_row(row, line)
    except DatasetError as exc:
        raise ValueError(str(exc)) from None
    return ParsedInput(parsed.kind, tuple(mark_jailbreak_attempt(t) for t in parsed.turns))


def parse_input(*, question: str | None, input: str | None, answer: str | None, output: str | None,
                context: Context, ground_truth: str | None, reference: str | None, system_prompt: str | None,
                history: Sequence[ChatMessage] | None, messages: Sequence[ChatMessage] | None) -> ParsedInput:
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
        return parse_row_mapping({"messages": list(messages)})
    row = {"question": question, "answer": answer, "context": list(context) if isinstance(context, Sequence)
           and not isinstance(context, str) else context, "ground_truth": ground_truth,
           "system_prompt": system_prompt}
    parsed = parse_row_mapping(row)
    extra = _history(history)
    if extra:
        parsed = ParsedInput(parsed.kind, tuple(dataclasses.replace(t, history=extra) for t in parsed.turns))
    return parsed
