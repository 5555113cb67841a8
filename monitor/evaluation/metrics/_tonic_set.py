"""The Tonic Validate metric set judged in ONE call per turn.

tonic-validate asks one question per metric, and per chunk for the retrieval/augmentation
metrics (augmentation_precision and answer_consistency two each), resending the question, the
answer and the chunk every time. Here every configured Tonic metric is computed from one reply
that holds exactly the judgements the metrics need, each asked the way the seed asks it:

* ``similarity`` — 0–5, how well the answer matches the reference answer (answer_similarity);
* ``relevant`` / ``used`` — per retrieved chunk, in order: is it useful for the question, does
  its information appear in the answer (retrieval_precision, augmentation_accuracy,
  augmentation_precision);
* ``points`` — the answer's main points, each marked supported when the context alone backs it
  (answer_consistency);
* ``outside`` — does the answer hold anything not derived from the context
  (answer_consistency_binary).

The question, answer, reference and chunks are sent once; only the judgements of the configured
metrics whose inputs the turn has are asked for. The context of the consistency metrics is the
chunks, or the system prompt when no chunk carries text. The call's tokens are exported under
``call="tonic"``, split evenly across the metrics it computed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from pydantic import Field

from monitor.evaluation.inputs import Input, Missing, document_blocks, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import DataBlock, build_request, system_prompt
from monitor.evaluation.registry import BuildContext, MetricGroup, MetricSpec
from monitor.evaluation.scoring import Scale, graded, skipped
from monitor.judge.replies import Reason, ReplyModel, ReplyShape, reply_model
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = ["Part", "ChunkVerdict", "Point", "TonicVerdicts", "TonicMetric", "TonicSetEvaluator", "TONIC_GROUP",
           "CALL_ID", "tonic_reply", "tonic_metric_spec"]

CALL_ID = "tonic"
MAX_POINTS = 10

Part = Literal["similarity", "relevant", "used", "points", "outside"]
_PARTS: tuple[Part, ...] = ("similarity", "relevant", "used", "points", "outside")

# What each judgement asks. Terse on purpose: the system prompt is paid on every call.
_ASK: dict[Part, str] = {
    "similarity": "similarity: 0-5 match in meaning with the reference (5 same facts and conclusion, 0 "
                  "unrelated or contradicting).",
    "relevant": "relevant: per docN in order, useful for the question?",
    "used": "used: per docN in order, is its information in the answer?",
    "points": "points: the answer's main points (max 12 words, no greetings); supported: by the context alone?",
    "outside": "outside: anything in the answer the context does not give or imply?",
}
# Both per-chunk judgements asked together share one line.
_BOTH_CHUNK_PARTS = "relevant, used: per docN in order: useful for the question? its information in the answer?"


@dataclass(frozen=True, slots=True)
class ChunkVerdict:
    relevant: bool | None
    used: bool | None


@dataclass(frozen=True, slots=True)
class Point:
    point: str
    supported: bool


@dataclass(frozen=True, slots=True)
class TonicVerdicts:
    """The judgements of one reply (``None``/empty for what was not asked)."""

    similarity: float | None = None
    chunks: tuple[ChunkVerdict, ...] = ()
    points: tuple[Point, ...] = ()
    outside: bool | None = None


@dataclass(frozen=True)
class TonicMetric:
    """A Tonic metric: the judgements it needs and how its value follows from them (``None``:
    undefined on this turn, the metric is skipped with ``undefined_reason``). With no threshold
    the value is 0 or 1 and 0 is the defect."""

    metric_id: str
    summary: str
    parts: tuple[Part, ...]
    compute: Callable[[TonicVerdicts], float | None]
    scale: Scale = (0.0, 1.0)
    default_threshold: float | None = 0.5
    undefined_reason: str = ""


def _needs(part: Part) -> tuple[Input, ...]:
    return {"similarity": (Input.GROUND_TRUTH, Input.ANSWER), "relevant": (Input.QUESTION,),
            "used": (Input.ANSWER,)}.get(part, (Input.ANSWER,))


class _PointItem(ReplyModel):
    point: Reason
    supported: bool


@functools.cache
def tonic_reply(parts: tuple[Part, ...], chunks: int) -> ReplyShape[ReplyModel]:
    """The reply declaration for ``parts`` (in :data:`_PARTS` order) with ``chunks`` chunks."""
    per_chunk = Field(min_length=chunks, max_length=chunks)
    kinds: dict[Part, tuple[Any, Any]] = {
        "similarity": (float, Field(ge=0, le=5, allow_inf_nan=False)),
        "relevant": (list[bool], per_chunk),
        "used": (list[bool], per_chunk),
        "points": (list[_PointItem], Field(min_length=1, max_length=MAX_POINTS)),
        "outside": (bool, None),
    }
    fields = tuple((part, *kinds[part]) for part in parts)
    return ReplyShape(CALL_ID, reply_model(f"Tonic_{'_'.join(parts)}_{chunks}", fields))


class TonicSetEvaluator:
    """Every configured Tonic metric from one judge call."""

    def __init__(self, metrics: Sequence[TonicMetric], judge: Judge, thresholds: dict[str, float | None],
                 max_context_chars: int) -> None:
        self._metrics = tuple(metrics)
        self.metric_ids = tuple(m.metric_id for m in self._metrics)
        self._parts = tuple(p for p in _PARTS if any(p in m.parts for m in self._metrics))
        self._judge = judge
        self._thresholds = thresholds
        self._max_context_chars = max_context_chars
        lines = [_ASK[p] for p in self._parts]
        if "relevant" in self._parts and "used" in self._parts:
            lines[self._parts.index("relevant"):self._parts.index("used") + 1] = [_BOTH_CHUNK_PARTS]
        self._system = system_prompt(*lines)

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One call for the metrics whose inputs the turn has; the others are skipped."""
        docs = document_blocks(turn, self._max_context_chars)
        asked, missing, blocks = self._plan(turn, docs)
        scores = {m: skipped(m, self._scale(m), reason) for m, reason in missing.items()}
        judged = [m for m in self._metrics if m.metric_id not in missing]
        if judged:
            chunks = 0 if isinstance(docs, Missing) else len(docs[0])
            details: dict[str, object] = {"judge_call": CALL_ID,
                                          "context_source": "system_prompt" if chunks == 0 else "documents"}
            if not isinstance(docs, Missing):
                details.update(docs[1])
            scores.update(await self._judge_call(turn, judged, asked, blocks, chunks, details))
        return [scores[m] for m in self.metric_ids]

    def _plan(self, turn: Turn, docs: tuple[tuple[DataBlock, ...], dict[str, object]] | Missing) -> tuple[
            tuple[Part, ...], dict[str, str], list[DataBlock]]:
        """The parts to ask, the metrics to skip (with why) and the blocks to send."""
        context = docs[0] if not isinstance(docs, Missing) else _system_prompt_context(turn)
        sources: dict[Part, tuple[DataBlock, ...] | Missing | None] = {
            "similarity": None, "relevant": docs[0] if not isinstance(docs, Missing) else docs,
            "used": docs[0] if not isinstance(docs, Missing) else docs, "points": context, "outside": context}
        missing: dict[str, str] = {}
        for metric in self._metrics:
            for part in metric.parts:
                gap = next((g for g in (gather(turn, _needs(part)), sources[part]) if isinstance(g, Missing)), None)
                if gap is not None:
                    missing.setdefault(metric.metric_id, gap.reason)
        asked = tuple(p for p in self._parts if any(
            p in m.parts for m in self._metrics if m.metric_id not in missing))
        inputs = {i for part in asked for i in _needs(part)}
        if "similarity" in asked:
            inputs.add(Input.QUESTION)  # the reference answers this question
        texts = gather(turn, (), tuple(inputs))
        blocks = list(texts.blocks) if not isinstance(texts, Missing) else []
        if any(p != "similarity" for p in asked) and not isinstance(context, Missing):
            blocks += context
        return asked, missing, blocks

    async def _judge_call(self, turn: Turn, judged: list[TonicMetric], asked: tuple[Part, ...],
                          blocks: list[DataBlock], chunks: int, details: dict[str, object]) -> dict[str, Score]:
        max_output = 20 + 8 * chunks * sum(p in asked for p in ("relevant", "used"))
        max_output += 25 * MAX_POINTS if "points" in asked else 0
        request = build_request(CALL_ID, self._system, blocks, tonic_reply(asked, chunks),
                                max_output_tokens=max_output, metrics=tuple(m.metric_id for m in judged))
        reply = await ask(self._judge, request)
        if isinstance(reply, Failure):
            return {m.metric_id: reply.score(m.metric_id, m.scale, details) for m in judged}
        verdicts = _verdicts(reply.value, chunks)
        details = {**details, **_details(verdicts)}
        scores: dict[str, Score] = {}
        for i, metric in enumerate(judged):
            value = metric.compute(verdicts)
            if value is None:
                scores[metric.metric_id] = skipped(metric.metric_id, metric.scale, metric.undefined_reason, details)
                continue
            threshold = self._thresholds.get(metric.metric_id)
            defect = value == 0.0 if threshold is None else value < threshold
            usage = reply.usage if i == 0 else None  # one call: usage on the first metric only
            scores[metric.metric_id] = graded(metric.metric_id, value, metric.scale, defect, usage=usage,
                                              details=details)
        return scores

    def _scale(self, metric_id: str) -> Scale:
        return next(m.scale for m in self._metrics if m.metric_id == metric_id)


def _system_prompt_context(turn: Turn) -> tuple[DataBlock, ...] | Missing:
    found = gather(turn, (Input.CONTEXT,))
    return found if isinstance(found, Missing) else found.blocks


def _verdicts(value: ReplyModel, chunks: int) -> TonicVerdicts:
    relevant: list[bool] | None = getattr(value, "relevant", None)
    used: list[bool] | None = getattr(value, "used", None)
    points = getattr(value, "points", None) or ()
    return TonicVerdicts(
        similarity=getattr(value, "similarity", None),
        chunks=tuple(ChunkVerdict(relevant[i] if relevant else None, used[i] if used else None)
                     for i in range(chunks)) if (relevant or used) else (),
        points=tuple(Point(p.point, p.supported) for p in points),
        outside=getattr(value, "outside", None),
    )


def _details(v: TonicVerdicts) -> dict[str, object]:
    found: dict[str, object] = {}
    if v.chunks:
        found["chunks"] = [{"relevant": c.relevant, "used": c.used} for c in v.chunks]
    if v.points:
        found.update(points=len(v.points), supported_points=sum(p.supported for p in v.points),
                     unsupported=[p.point for p in v.points if not p.supported])
    return found


def _build(specs: tuple[MetricSpec, ...], ctx: BuildContext) -> TonicSetEvaluator:
    metrics = [s.definition for s in specs]
    thresholds = {m.metric_id: (ctx.threshold(m.metric_id) if m.default_threshold is not None else None)
                  for m in metrics}
    return TonicSetEvaluator(metrics, ctx.require_judge(), thresholds, ctx.max_context_chars)


TONIC_GROUP = MetricGroup(CALL_ID, build=_build)


def tonic_metric_spec(metric: TonicMetric) -> MetricSpec:
    """The registry spec of a Tonic metric (always built through :data:`TONIC_GROUP`)."""
    return MetricSpec(metric.metric_id, metric.summary, "judge", metric.scale, group=TONIC_GROUP,
                      definition=metric, default_threshold=metric.default_threshold)
