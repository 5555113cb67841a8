"""Rows of an offline evaluation data set (JSON Lines) turned into :class:`Turn` objects.

Two row shapes, one JSON object per line (blank lines are ignored):

* question/answer (the Azure seed's first format, plus the ``query``/``response`` names newer
  Azure tooling uses)::

      {"question": "...", "context": "...", "answer": "...", "ground_truth": "..."}

  ``question``|``query``, ``answer``|``response``, ``context``, ``ground_truth``,
  ``system_prompt`` and ``id`` are all optional, but a row needs a question or an answer.
  ``context`` is a string (one document), or a list of strings and/or objects
  ``{"content"|"text": str, "id"?: str, "title"?: str}`` (one document each).
* conversation (the seed's second format): ``{"messages": [...]}``, one turn per assistant
  message (see :mod:`monitor.evaluation.conversation`).

Other keys are not read (data sets carry extra columns: ``labels``, ``metadata``…) and are
reported once by the caller, but a near-miss of an input column (``answr``, ``contexts``,
``Question``) is an error with a did-you-mean: a misspelt column would silently skip metrics.
The Python API's :class:`~rag_monitor.Scorer` applies the same rule. Any malformed row is a :class:`DatasetError`
naming its line: the whole file is checked before a single judge token is spent.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from monitor.evaluation.conversation import ConversationFormatError, turns_from_conversation
from monitor.model import Document, Turn
from monitor.surrogates import may_hold_surrogates, replace_lone_surrogates

__all__ = ["DatasetError", "EvalRow", "Dataset", "read_dataset", "parse_row", "check_columns", "KNOWN_QA_KEYS",
           "INPUT_KEYS"]

KNOWN_QA_KEYS = frozenset(
    {"id", "question", "query", "answer", "response", "context", "ground_truth", "system_prompt"})
INPUT_KEYS = frozenset(KNOWN_QA_KEYS - {"id"} | {"messages"})
"""The columns a metric reads: a near-miss of one of these is an error, never an ignored column."""
_NEAR_MISS = 0.85  # "answr" 0.91, "contexts" 0.93; "question_id" 0.84 and "answer_id" 0.80 stay columns


def check_columns(keys: Iterable[str], known: Iterable[str], inputs: Iterable[str] = INPUT_KEYS) -> None:
    """Raise :class:`DatasetError` for the first key that is not ``known`` but nearly one of
    ``inputs`` (a misspelt input column), with the column it probably meant."""
    known, inputs = set(known), sorted(inputs)
    for key in keys:
        if key in known or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key.lower(), inputs, n=1, cutoff=_NEAR_MISS)
        if close:
            raise DatasetError(f"unknown column {key!r}; did you mean {close[0]!r}? (columns that are not inputs, "
                               "such as id, labels or metadata, are allowed)")
_ALIASES = (("question", "query"), ("answer", "response"))


class DatasetError(ValueError):
    """The data file cannot be read or a row is malformed; the message names the line."""


@dataclass(frozen=True, slots=True)
class EvalRow:
    """One input line: its number (1-based), shape and the turns to evaluate."""

    line: int
    kind: Literal["qa", "conversation"]
    turns: tuple[Turn, ...]
    row_id: str | None = None


@dataclass(frozen=True)
class Dataset:
    rows: tuple[EvalRow, ...]
    ignored_keys: Counter[str] = field(default_factory=Counter)
    """Keys present in rows but not read, with how many rows had them."""

    @property
    def turn_count(self) -> int:
        return sum(len(r.turns) for r in self.rows)


def _text(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DatasetError(f"{key}: expected a string, got {type(value).__name__}")
    return value


def _aliased(row: Mapping[str, Any], name: str, alias: str) -> str | None:
    if row.get(name) is not None and row.get(alias) is not None:
        raise DatasetError(f"both {name!r} and {alias!r} are set; use one")
    return _text(row, name) if row.get(name) is not None else _text(row, alias)


def _document(item: Any, index: int) -> Document:
    if isinstance(item, str):
        return Document(id=str(index + 1), content=item)
    if isinstance(item, Mapping):
        content = item.get("content", item.get("text"))
        if isinstance(content, str):
            doc_id, title = item.get("id"), item.get("title")
            return Document(id=str(doc_id) if doc_id is not None else str(index + 1), content=content,
                            title=title if isinstance(title, str) else None)
    raise DatasetError(f"context[{index}]: expected a string or an object with a string 'content'")


def _documents(raw: Any) -> tuple[Document, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (Document(id="1", content=raw),) if raw.strip() else ()
    if isinstance(raw, list):
        return tuple(_document(item, i) for i, item in enumerate(raw))
    raise DatasetError(f"context: expected a string or a list, got {type(raw).__name__}")


def _row_id(row: Mapping[str, Any]) -> str | None:
    raw = row.get("id")
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise DatasetError("id: expected a string or an integer")
    return str(raw)


def _qa_turn(row: Mapping[str, Any], trace_id: str) -> Turn:
    question = _aliased(row, "question", "query")
    answer = _aliased(row, "answer", "response")
    if not (question or answer):
        raise DatasetError("no question/query, answer/response or messages: nothing to evaluate")
    return Turn(trace_id=trace_id, conversation_id=trace_id, question=question or "", answer=answer or "",
                documents=_documents(row.get("context")), ground_truth=_text(row, "ground_truth"),
                system_prompt=_text(row, "system_prompt"))


def parse_row(row: Any, line: int) -> EvalRow:
    """The :class:`EvalRow` of one decoded JSON value; raises :class:`DatasetError` (no line prefix)."""
    if not isinstance(row, Mapping):
        raise DatasetError(f"expected a JSON object, got {type(row).__name__}")
    check_columns(row, KNOWN_QA_KEYS | {"messages"})
    row_id = _row_id(row)
    trace_id = row_id or f"line{line}"
    if "messages" in row:
        try:
            turns = turns_from_conversation(row, conversation_id=trace_id)
        except ConversationFormatError as exc:
            raise DatasetError(str(exc)) from None
        if not turns:
            raise DatasetError("messages: no assistant message to evaluate")
        return EvalRow(line, "conversation", turns, row_id)
    return EvalRow(line, "qa", (_qa_turn(row, trace_id),), row_id)


def read_dataset(path: str | Path) -> Dataset:
    """Every row of the JSONL file at ``path``; raises :class:`DatasetError` naming the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    rows: list[EvalRow] = []
    ignored: Counter[str] = Counter()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
            if may_hold_surrogates(raw):
                data = replace_lone_surrogates(data)
            rows.append(parse_row(data, number))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        except DatasetError as exc:
            raise DatasetError(f"{path}:{number}: {exc}") from None
        if "messages" not in data:
            ignored.update(k for k in data if k not in KNOWN_QA_KEYS)
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return Dataset(tuple(rows), ignored)
