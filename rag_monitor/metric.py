"""The metric object: ``score(...)`` and ``await ascore(...)`` over the sidecar's own evaluators.

A :class:`Metric` turns its options into the sidecar's ``evaluation`` config for one metric and
builds its evaluator with :func:`monitor.evaluation.registry.build_evaluators` — the very code
path the sidecar and ``rag-monitor eval`` run — so validation, prompts, parsers, thresholds and
outcomes are identical. A derived metric (``overall_score``) is built with the metrics it is
computed from and reports only itself.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine, Sequence, TypeVar

from pydantic import ValidationError

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.conversation import aggregate_conversation
from monitor.evaluation.registry import MetricConfigError, MetricSpec, build_evaluators, default_registry
from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.interfaces import Evaluator
from monitor.model import Score, Turn
from rag_monitor.content_safety import ContentSafety
from monitor.redaction import RedactionConfig
from rag_monitor.inputs import ChatMessage, Context, ParsedInput, parse_input, redactor_for
from rag_monitor.judge import Judge, config_error_message
from rag_monitor.loop_thread import run_blocking
from rag_monitor.results import MetricResult, conversation_result, result_from_score

__all__ = ["Metric", "entry_for", "build_for", "results_for_row", "blocking_runner"]

T = TypeVar("T")


def entry_for(metric: "Metric") -> dict[str, Any]:
    """The ``evaluation.metrics`` entry of ``metric`` (its options, as a config would say)."""
    entry: dict[str, Any] = {"id": metric.metric_id}
    for key, value in metric.options.items():
        if value is not None:
            entry[key] = value
    return entry


def build_for(entries: Sequence[dict[str, Any]], judge: Judge | None, content_safety: ContentSafety | None,
              combine: bool) -> tuple[Evaluator, ...]:
    """Evaluators for config ``entries``; raises ValueError naming the offending key."""
    data: dict[str, Any] = {"metrics": list(entries), "combine_metrics": combine}
    if content_safety is not None:
        data["content_safety"] = content_safety.config.model_dump()
    try:
        config = EvaluationConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(config_error_message("evaluation", exc)) from None
    try:
        return build_evaluators(config, judge, content_safety=content_safety)
    except MetricConfigError as exc:
        raise ValueError(f"evaluation.{exc}") from None


def blocking_runner(judge: Judge | None, content_safety: ContentSafety | None,
                    ) -> Callable[[Coroutine[Any, Any, T]], T]:
    """How sync calls run a coroutine: on the service's own loop when there is a service (no
    event loop created per call), else on a loop of their own."""
    service = judge or content_safety
    return service.run_blocking if service is not None else run_blocking


def results_for_row(parsed: ParsedInput, turn_scores: Sequence[Sequence[Score]], metric_id: str) -> MetricResult:
    """``metric_id``'s result on one input: the turn's, or the conversation's aggregate."""
    per_turn = [next((result_from_score(s) for s in scores if s.metric == metric_id), None) for scores in turn_scores]
    turns = [r for r in per_turn if r is not None]
    if not turns:
        raise RuntimeError(f"{metric_id}: the evaluators returned no score")  # a bug, not a judge failure
    if parsed.kind == "qa":
        return turns[0]
    only = [[s for s in scores if s.metric == metric_id] for scores in turn_scores]
    return conversation_result(metric_id, turns, aggregate_conversation(only).get(metric_id))


class Metric:
    """Any registered metric by id: ``Metric("groundedness", judge=judge)``.

    ``redact`` (default True) replaces personal data (emails, phone and card numbers…) with typed
    placeholders before any text reaches the metric, as the sidecar does; pass a
    :class:`~monitor.redaction.RedactionConfig` to tune it or False to send text as it is.

    The named classes (:class:`~rag_monitor.Groundedness`, :class:`~rag_monitor.F1Score`…) are
    this with the id fixed and only the options that metric takes.
    """

    metric_id: str = ""
    """The registry id; the named classes set it, ``Metric(id)`` instances carry their own."""

    def __init__(self, metric_id: str | None = None, *, judge: Judge | None = None,
                 content_safety: ContentSafety | None = None, threshold: float | None = None,
                 severity_level: int | str | None = None, redact: bool | RedactionConfig = True) -> None:
        metric_id = metric_id or type(self).metric_id
        if not metric_id:
            raise TypeError("Metric needs a metric id, e.g. Metric('groundedness', judge=judge)")
        self.metric_id = metric_id
        try:
            self.spec: MetricSpec = default_registry().get(metric_id)
        except MetricConfigError as exc:
            raise ValueError(str(exc)) from None
        self.judge = judge
        self.content_safety = content_safety
        self.options: dict[str, Any] = {"threshold": threshold, "severity_level": severity_level,
                                        "backend": "azure_content_safety" if content_safety else None}
        if self.spec.tier == "judge" and judge is None and content_safety is None:
            raise ValueError(f"{metric_id} is judged by an LLM: pass judge=Judge(base_url=..., model=...) "
                             "or judge=Judge.from_env()")
        entries = [{"id": m} for m in sorted(self.spec.derived_from)] + [entry_for(self)]
        self._evaluators = build_for(entries, judge, content_safety, combine=False)
        self._errors = InternalErrors()
        self._redactor = redactor_for(redact)

    @property
    def scale(self) -> tuple[float, float]:
        return self.spec.scale

    async def _scores(self, turns: Sequence[Turn]) -> list[tuple[Score, ...]]:
        return list(await asyncio.gather(*(evaluate_turn(t, self._evaluators, self._errors) for t in turns)))

    async def ascore(self, *, question: str | None = None, answer: str | None = None, context: Context = None,
                     ground_truth: str | None = None, system_prompt: str | None = None,
                     history: Sequence[ChatMessage] | None = None, messages: Sequence[ChatMessage] | None = None,
                     input: str | None = None, output: str | None = None,
                     reference: str | None = None) -> MetricResult:
        """Score one question/answer (or one conversation given as ``messages``).

        ``input``/``output`` are Opik's names for ``question``/``answer``, ``reference`` Tonic's
        for ``ground_truth``. A conversation's value is the mean (quality) or maximum (safety)
        over its turns, with the per-turn results in ``turns``. Never raises for a judge
        failure: that is a result with ``status == "error"``.
        """
        parsed = parse_input(question=question, input=input, answer=answer, output=output, context=context,
                             ground_truth=ground_truth, reference=reference, system_prompt=system_prompt,
                             history=history, messages=messages, redactor=self._redactor)
        return results_for_row(parsed, await self._scores(parsed.turns), self.metric_id)

    def score(self, *, question: str | None = None, answer: str | None = None, context: Context = None,
              ground_truth: str | None = None, system_prompt: str | None = None,
              history: Sequence[ChatMessage] | None = None, messages: Sequence[ChatMessage] | None = None,
              input: str | None = None, output: str | None = None, reference: str | None = None) -> MetricResult:
        """:meth:`ascore` for synchronous code (also inside a notebook's running loop)."""
        return blocking_runner(self.judge, self.content_safety)(
            self.ascore(question=question, answer=answer, context=context, ground_truth=ground_truth,
                        system_prompt=system_prompt, history=history, messages=messages, input=input,
                        output=output, reference=reference))

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if v is not None)
        return f"{type(self).__name__}({self.metric_id!r}{', ' + options if options else ''})"
