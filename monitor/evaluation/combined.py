"""Several metrics judged in ONE call, each with its own reason and value, each reported as its own
Score: the quality rubrics (``combine_metrics``, this module) and the four safety severities
(:mod:`monitor.evaluation.safety`, built on :class:`SharedCall`).

The reply holds, per metric, ``"<metric>_reason"`` then ``"<metric>"`` (the value), the reason first:
it is the judge's reasoning for that metric alone, and it is stored on that metric's Score (a
violence score never carries a groundedness complaint). The reply is declared as a whole: every
sub-object required, each value in its range; one bad sub-score makes the call a ``parse_error`` /
``out_of_range`` for all of its metrics, a refusal or a content filter ``unscored_refused`` for all
of them.

The system prompt is fixed per evaluator (prefix caching): it describes every configured metric
and the task line names the ones judged on this turn (metrics whose inputs are missing are
skipped and left out of the reply schema).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Annotated, Any, Callable, Mapping, Sequence

from pydantic import Field

from monitor.evaluation.inputs import Input, Missing, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import DataBlock, build_request, prompt_version, system_prompt
from monitor.evaluation.registry import BuildContext, MetricGroup, MetricSpec
from monitor.evaluation.rubric import RUBRIC_SCALE, RubricDefinition
from monitor.evaluation.scoring import Scale, graded, skipped
from monitor.judge.replies import Reason, ReplyModel, ReplyShape, reply_model, whole_number
from monitor.judge.types import Judge
from monitor.model import JudgeUsage, Score, Turn

__all__ = ["COMBINED_CALL_ID", "COMBINED_GROUP", "per_metric_reply", "SharedCall", "CombinedRubricEvaluator"]

COMBINED_CALL_ID = "combined_rubrics"


@functools.cache
def per_metric_reply(call_id: str, ranges: tuple[tuple[str, int, int], ...]) -> ReplyShape[ReplyModel]:
    """The reply of a shared call: per metric (in the order given) ``<metric>_reason`` then
    ``<metric>``, an integer in the metric's range. Flat keys rather than an object per metric: the
    same information for about half the schema tokens, paid on every call."""
    fields: list[tuple[str, Any, Any]] = []
    for metric, low, high in ranges:
        fields.append((f"{metric}_reason", Reason, None))
        fields.append((metric, Annotated[int, Field(ge=low, le=high), whole_number], None))
    return ReplyShape(call_id, reply_model(f"{call_id}_reply", tuple(fields)))


ToScore = Callable[[str, int, str, dict[str, object]], Score]


class SharedCall:
    """The plumbing of a call that judges several metrics: inputs per metric, one request, one
    Score per metric with its own reason; usage on the first judged metric only."""

    def __init__(self, call_id: str, judge: Judge, system: str,
                 members: Sequence[tuple[str, Scale, tuple[int, int], tuple[Input, ...], tuple[Input, ...]]],
                 sections: Mapping[str, str], max_context_chars: int, max_output_tokens: int) -> None:
        self.call_id = call_id
        self._judge = judge
        self._system = system
        self._members = tuple(members)
        self.metric_ids: tuple[str, ...] = tuple(m[0] for m in self._members)
        self._max_context_chars = max_context_chars
        self._max_output_tokens = max_output_tokens
        # Per metric: the shared frame (the system prompt minus the other metrics' sections)
        # plus the metric's own section and reply item; changes only with this metric's template.
        frame = system
        for text in sections.values():
            frame = frame.replace(text, "")
        frame = re.sub(r"\n+", "\n", frame)  # the same frame whichever metrics are configured
        self.prompt_versions = {
            metric: prompt_version(frame, sections[metric], per_metric_reply(call_id, ((metric, *bounds),)).json_schema)
            for metric, _, bounds, _, _ in self._members}

    async def evaluate(self, turn: Turn, to_score: ToScore,
                       on_failure: Callable[[Score], Score] = lambda s: s) -> list[Score]:
        """One judge call for every metric whose inputs are present; the rest are skipped."""
        scores: dict[str, Score] = {}
        included: list[str] = []
        blocks: dict[str, DataBlock] = {}
        details: dict[str, object] = {}
        for metric, scale, _, required, optional in self._members:
            gathered = gather(turn, required, optional, self._max_context_chars)
            if isinstance(gathered, Missing):
                scores[metric] = skipped(metric, scale, gathered.reason)
                continue
            included.append(metric)
            blocks.update({b.name: b for b in gathered.blocks})
            details.update(gathered.details)
        if included:
            scores.update(await self._call(included, blocks, details, to_score, on_failure))
        return [scores[m] for m in self.metric_ids]

    async def _call(self, included: list[str], blocks: Mapping[str, DataBlock], details: Mapping[str, object],
                    to_score: ToScore, on_failure: Callable[[Score], Score]) -> dict[str, Score]:
        members = {m[0]: m for m in self._members}
        shape = per_metric_reply(self.call_id, tuple((m, *members[m][2]) for m in included))
        ordered = [blocks[i.value] for i in Input if i.value in blocks]
        # Tokens are split across the metrics judged (JudgeRequest.metrics).
        request = build_request(self.call_id, self._system, ordered, shape, task=f"Score: {', '.join(included)}.",
                                metrics=tuple(included), max_output_tokens=self._max_output_tokens)
        reply = await ask(self._judge, request)
        out: dict[str, Score] = {}
        for metric in included:
            info = {**details, "judge_call": self.call_id, "prompt_version": self.prompt_versions[metric]}
            if isinstance(reply, Failure):
                score = on_failure(reply.score(metric, members[metric][1], info))
            else:
                reason = str(getattr(reply.value, f"{metric}_reason"))
                score = to_score(metric, int(getattr(reply.value, metric)), reason, info)
            usage = reply.usage if metric == included[0] else JudgeUsage()
            # Only the first metric of the call carries the usage (see module docstring).
            out[metric] = replace(score, usage=usage)
        return out


def _quality_system(rubrics: Sequence[RubricDefinition]) -> str:
    return system_prompt(
        "You grade an AI assistant's answer on several independent quality metrics. Score each on its "
        "own scale and give its own reason; do not let one metric influence another.",
        "\n".join(d.line() for d in rubrics),
        "Keys, for each metric named in the task: <metric>_reason (at most 20 words, about that metric "
        "only), then <metric> (its integer score).",
    )


class CombinedRubricEvaluator:
    """The quality rubrics judged together; each reported as its own Score with its own reason."""

    def __init__(self, rubrics: Sequence[RubricDefinition], judge: Judge, thresholds: Mapping[str, float],
                 max_context_chars: int) -> None:
        self._rubrics = tuple(rubrics)
        self._thresholds = dict(thresholds)
        self._call = SharedCall(
            COMBINED_CALL_ID, judge, _quality_system(self._rubrics),
            [(d.metric_id, RUBRIC_SCALE, (1, 5), d.required, d.optional) for d in self._rubrics],
            {d.metric_id: d.line() for d in self._rubrics}, max_context_chars,
            max_output_tokens=40 + 45 * len(self._rubrics))
        self.metric_ids = self._call.metric_ids
        self.prompt_versions = self._call.prompt_versions

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One judge call for every rubric whose inputs are present; the rest are skipped."""
        return await self._call.evaluate(turn, self._to_score)

    def _to_score(self, metric: str, value: int, reason: str, info: dict[str, object]) -> Score:
        return graded(metric, value, RUBRIC_SCALE, value < self._thresholds[metric], reason=reason, details=info)


def _admits(ctx: BuildContext, spec: MetricSpec) -> bool:
    return ctx.combine_metrics and isinstance(spec.definition, RubricDefinition)


def _build(specs: tuple[MetricSpec, ...], ctx: BuildContext) -> CombinedRubricEvaluator:
    rubrics = [s.definition for s in specs if isinstance(s.definition, RubricDefinition)]
    return CombinedRubricEvaluator(
        rubrics, ctx.require_judge(), thresholds={d.metric_id: ctx.threshold(d.metric_id) for d in rubrics},
        max_context_chars=ctx.max_context_chars)


COMBINED_GROUP = MetricGroup(COMBINED_CALL_ID, build=_build, admits=_admits)
"""Registry group of the combinable rubric metrics (the quality call)."""
