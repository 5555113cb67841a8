"""Several metrics over many rows: :class:`Scorer` (Tonic's ``ValidateScorer`` shape).

The scorer builds the metrics' evaluators together, as the sidecar does, so with ``combine``
on the 1-5 quality rubrics and the severities of a turn share one judge call. Rows are mappings
in the ``rag-monitor eval`` JSONL shape (``question``/``answer``/``context``/``ground_truth``/
``system_prompt``/``id``, Opik's ``input``/``output``, Tonic's ``reference``, or ``messages``);
every row is validated before the first judge call. At most ``concurrency`` turns are evaluated
at once; the judge's own ``max_concurrency`` and budgets still bound its requests.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import click

from monitor.offline.rows import INPUT_KEYS, KNOWN_QA_KEYS, DatasetError, check_columns
from monitor.evaluation.registry import default_registry
from monitor.evaluation.batch import evaluate_groups
from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.model import Score
from rag_monitor.content_safety import ContentSafety
from monitor.redaction import RedactionConfig
from rag_monitor.inputs import ChatMessage, Context, ParsedInput, parse_input, parse_row_mapping, redactor_for
from rag_monitor.judge import Judge
from rag_monitor.metric import Metric, blocking_runner, build_for, entry_for, results_for_row
from rag_monitor.results import MetricResult

__all__ = ["Scorer", "RowResult", "Progress"]

Progress = Callable[[int, int], None]
"""Called with (rows done, rows in total) after each row."""
_ALIASES = {"input": "question", "output": "answer", "reference": "ground_truth"}
_CONVERSATION_KEYS = frozenset({"messages", "id"})


@dataclass(frozen=True, slots=True)
class RowResult:
    """The results of one input row, by metric id."""

    index: int
    id: str | None
    results: Mapping[str, MetricResult]

    def __getitem__(self, metric_id: str) -> MetricResult:
        return self.results[metric_id]


def _one(items: Sequence[Any], what: str) -> Any:
    distinct = {id(i): i for i in items if i is not None}
    if len(distinct) > 1:
        raise ValueError(f"a Scorer uses one {what}: give all its metrics the same {what} object")
    return next(iter(distinct.values()), None)


def _normalise_row(row: Mapping[str, Any], index: int) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise TypeError(f"rows[{index}]: expected a mapping, got {type(row).__name__}")
    # Columns that are not inputs (labels, metadata…) are allowed, as in `rag-monitor eval`; a
    # near-miss of an input (answr) is an error with a did-you-mean, as there.
    try:
        check_columns(row, KNOWN_QA_KEYS | _ALIASES.keys() | _CONVERSATION_KEYS, INPUT_KEYS | _ALIASES.keys())
    except DatasetError as exc:
        raise ValueError(f"rows[{index}]: {exc}") from None
    if "messages" in row:
        both = sorted(k for k in row if k in INPUT_KEYS | _ALIASES.keys() and k != "messages")
        if both:
            raise ValueError(f"rows[{index}]: messages carries the whole conversation; drop {', '.join(both)}")
    known = _CONVERSATION_KEYS if "messages" in row else KNOWN_QA_KEYS | _ALIASES.keys()
    data = {k: v for k, v in row.items() if k in known}
    for alias, name in _ALIASES.items():
        if alias in data:
            if data.get(name) is not None:
                raise ValueError(f"rows[{index}]: give {name} or {alias}, not both")
            data[name] = data.pop(alias)
    return data


def _bar(total: int) -> tuple[Progress, Callable[[], None]]:
    bar = click.progressbar(length=total, label="scoring", file=sys.stderr, show_pos=True, show_eta=True)
    bar.__enter__()
    last = [0]

    def update(done: int, _total: int) -> None:
        bar.update(done - last[0])
        last[0] = done

    return update, lambda: bar.__exit__(None, None, None)


class Scorer:
    """``Scorer([Groundedness(judge=j), Relevance(judge=j), F1Score()])``; all metrics that
    need a judge share one :class:`Judge` (and one :class:`ContentSafety`). ``redact`` as for a
    :class:`~rag_monitor.Metric`; the scorer's own setting applies to its rows."""

    def __init__(self, metrics: Sequence[Metric], *, combine: bool = True,
                 redact: bool | RedactionConfig = True) -> None:
        if not metrics:
            raise ValueError("a Scorer needs at least one metric")
        ids = [m.metric_id for m in metrics]
        if len(set(ids)) != len(ids):
            raise ValueError("a Scorer takes each metric once")
        self.metric_ids = tuple(ids)
        judge: Judge | None = _one([m.judge for m in metrics], "judge")
        content_safety: ContentSafety | None = _one([m.content_safety for m in metrics], "content_safety")
        registry = default_registry()
        needed = sorted({d for m in metrics for d in registry.get(m.metric_id).derived_from} - set(ids))
        entries = [entry_for(m) for m in metrics] + [{"id": d} for d in needed]
        self._evaluators = build_for(entries, judge, content_safety, combine)
        self._errors = InternalErrors()
        self._blocking = blocking_runner(judge, content_safety)
        self._redactor = redactor_for(redact)

    async def _turn_scores(self, parsed: ParsedInput) -> list[tuple[Score, ...]]:
        return list(await asyncio.gather(*(evaluate_turn(t, self._evaluators, self._errors) for t in parsed.turns)))

    def _results(self, parsed: ParsedInput, turn_scores: Sequence[Sequence[Score]]) -> dict[str, MetricResult]:
        return {m: results_for_row(parsed, turn_scores, m) for m in self.metric_ids}

    async def ascore(self, *, question: str | None = None, answer: str | None = None, context: Context = None,
                     ground_truth: str | None = None, system_prompt: str | None = None,
                     history: Sequence[ChatMessage] | None = None, messages: Sequence[ChatMessage] | None = None,
                     input: str | None = None, output: str | None = None,
                     reference: str | None = None) -> dict[str, MetricResult]:
        """Every metric on one question/answer (or conversation), by metric id."""
        parsed = parse_input(question=question, input=input, answer=answer, output=output, context=context,
                             ground_truth=ground_truth, reference=reference, system_prompt=system_prompt,
                             history=history, messages=messages, redactor=self._redactor)
        return self._results(parsed, await self._turn_scores(parsed))

    def score(self, *, question: str | None = None, answer: str | None = None, context: Context = None,
              ground_truth: str | None = None, system_prompt: str | None = None,
              history: Sequence[ChatMessage] | None = None, messages: Sequence[ChatMessage] | None = None,
              input: str | None = None, output: str | None = None,
              reference: str | None = None) -> dict[str, MetricResult]:
        """:meth:`ascore` for synchronous code."""
        return self._blocking(self.ascore(question=question, answer=answer, context=context, ground_truth=ground_truth,
                                          system_prompt=system_prompt, history=history, messages=messages,
                                          input=input, output=output, reference=reference))

    async def ascore_many(self, rows: Sequence[Mapping[str, Any]], *, concurrency: int = 8,
                          progress: Progress | bool = False) -> list[RowResult]:
        """Every metric on every row, in input order. ``progress``: a callback, or True for a
        progress bar on stderr. Raises ValueError naming the first malformed row before any call."""
        parsed, scores = await self.turn_scores_many(rows, concurrency=concurrency, progress=progress)
        return [RowResult(i, _row_id(rows[i]), self._results(p, s)) for i, (p, s) in enumerate(zip(parsed, scores))]

    async def turn_scores_many(self, rows: Sequence[Mapping[str, Any]], *, concurrency: int = 8,
                               progress: Progress | bool = False,
                               ) -> tuple[list[ParsedInput], list[list[tuple[Score, ...]]]]:
        """The raw per-turn Scores of every row (what :meth:`ascore_many` summarises)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        parsed = [parse_row_mapping(_normalise_row(r, i), i + 1, self._redactor) for i, r in enumerate(rows)]
        close: Callable[[], None] = lambda: None
        report: Progress
        if progress is True:
            report, close = _bar(len(parsed))
        else:
            report = progress or (lambda done, total: None)
        try:
            return parsed, await self._run(parsed, concurrency, report)
        finally:
            close()

    async def _run(self, parsed: Sequence[ParsedInput], concurrency: int,
                   report: Progress) -> list[list[tuple[Score, ...]]]:
        done = 0

        def row_done(index: int) -> None:
            nonlocal done
            done += 1
            report(done, len(parsed))

        return await evaluate_groups([p.turns for p in parsed], self._evaluators, concurrency,
                                     errors=self._errors, on_group=row_done)

    def score_many(self, rows: Sequence[Mapping[str, Any]], *, concurrency: int = 8,
                   progress: Progress | bool = False) -> list[RowResult]:
        """:meth:`ascore_many` for synchronous code."""
        return self._blocking(self.ascore_many(rows, concurrency=concurrency, progress=progress))


def _row_id(row: Mapping[str, Any]) -> str | None:
    raw = row.get("id")
    return None if raw is None else str(raw)
