"""The Tonic Validate metric set judged in ONE call per turn.

tonic-validate asks one question per metric, and per chunk for the retrieval/augmentation
metrics (augmentation_precision and answer_consistency two each), resending the question, the
answer and the chunk every time. Here every configured Tonic metric is computed from one reply
that holds exactly the judgements the metrics need, each asked the way the seed asks it:

* ``similarity`` — 0–5 after ``similarity_reason``, how well the answer matches the reference answer
  (answer_similarity);
* ``documents`` — one object per retrieved chunk, ``{n, relevant, used}``: its number (``docN``),
  whether it is relevant to the question, decided from the question alone, and whether the
  answer uses its information (retrieval_precision, augmentation_accuracy,
  augmentation_precision). Mapped to the chunks by number, never by position: a reply that
  skips or repeats a number is a ``parse_error``;
* ``points`` — the answer's main points (none for a refusal or a greeting), each marked supported
  when the context alone entails it (answer_consistency; skipped when there is no point);
* ``outside`` — after ``outside_reason``: does the answer hold anything not derived from the context
  (answer_consistency_binary).

Every Score carries a reason of its own: the judge's for similarity and outside, the documents
or points behind the value for the others.

The question, answer, reference and chunks are sent once; only the judgements of the configured
metrics whose inputs the turn has are asked for. The context of the consistency metrics is the
chunks, or the system prompt when no chunk carries text. The call's tokens are exported under
``call="tonic"``, split evenly across the metrics it computed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Literal, Sequence

from pydantic import Field, model_validator

from monitor.evaluation.inputs import Input, Missing, document_blocks, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.prompting import DataBlock, build_request, prompt_version, system_prompt
from monitor.evaluation.registry import BuildContext, MetricGroup, MetricSpec, input_names
from monitor.evaluation.scoring import Scale, graded, skipped
from monitor.judge.replies import Reason, ReplyModel, ReplyShape, reply_model, whole_number
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = ["Part", "ChunkVerdict", "Point", "TonicVerdicts", "TonicMetric", "TonicSetEvaluator", "TONIC_GROUP",
           "CALL_ID", "tonic_reply", "tonic_metric_spec"]

CALL_ID = "tonic"
MAX_POINTS = 10

Part = Literal["similarity", "relevant", "used", "points", "outside"]
_PARTS: tuple[Part, ...] = ("similarity", "relevant", "used", "points", "outside")

_INTRO = ("<docN> blocks are the documents a RAG system retrieved, numbered in order (<context>: the "
          "system prompt, used when there are none). No outside knowledge.")
# What each judgement asks. Terse on purpose: the system prompt is paid on every call.
_RELEVANT = "relevant: does it help answer the question? Decide from the question alone, ignoring the answer."
_USED = "used: does the answer state information from it (a paraphrase counts, a shared topic does not)?"
_ASK: dict[Part, str] = {
    "similarity": "similarity_reason, then similarity: 0-5 match in meaning with the reference (5 same facts "
                  "and conclusion, 0 unrelated or contradicting).",
    "relevant": f"documents: one {{n, relevant}} per docN. {_RELEVANT}",
    "used": f"documents: one {{n, used}} per docN. {_USED}",
    "points": "points: the answer's main claims, at most 12 words each (none for a refusal or greeting); "
              "supported: entailed by the context alone.",
    "outside": "outside_reason, then outside: does the answer state anything the context neither gives nor "
               "implies?",
}
# Both per-document judgements asked together share one line.
_BOTH_CHUNK_PARTS = f"documents: one {{n, relevant, used}} per docN. {_RELEVANT} {_USED}"


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
    similarity_reason: str = ""
    outside_reason: str = ""


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


class _NumberedDocuments(ReplyModel):
    """Base of the reply: the document objects must number 1..n, each once."""

    @model_validator(mode="after")
    def _each_document_once(self) -> "_NumberedDocuments":
        documents = getattr(self, "documents", None)
        if documents is not None:
            numbers = sorted(d.n for d in documents)
            if numbers != list(range(1, len(documents) + 1)):
                raise ValueError(f"documents must be numbered 1..{len(documents)} once each, got {numbers}")
        return self


@functools.cache
def _document_item(chunks: int, relevant: bool, used: bool) -> type[ReplyModel]:
    fields: list[tuple[str, Any, Any]] = [("n", Annotated[int, Field(ge=1, le=max(chunks, 1)), whole_number], None)]
    if relevant:
        fields.append(("relevant", bool, None))
    if used:
        fields.append(("used", bool, None))
    return reply_model(f"TonicDoc_{chunks}_{int(relevant)}{int(used)}", tuple(fields))


@functools.cache
def tonic_reply(parts: tuple[Part, ...], chunks: int) -> ReplyShape[ReplyModel]:
    """The reply declaration for ``parts`` (in :data:`_PARTS` order) with ``chunks`` chunks."""
    fields: list[tuple[str, Any, Any]] = []
    if "similarity" in parts:
        fields.append(("similarity_reason", Reason, None))
        fields.append(("similarity", Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)], None))
    if "relevant" in parts or "used" in parts:
        item = _document_item(chunks, "relevant" in parts, "used" in parts)
        per_document = Field(min_length=chunks, max_length=chunks)
        fields.append(("documents", list[item], per_document))  # type: ignore[valid-type]
    if "points" in parts:
        fields.append(("points", list[_PointItem], Field(max_length=MAX_POINTS)))
    if "outside" in parts:
        fields.append(("outside_reason", Reason, None))
        fields.append(("outside", bool, None))
    return ReplyShape(CALL_ID, reply_model(f"Tonic_{'_'.join(parts)}_{chunks}", tuple(fields),
                                           base=_NumberedDocuments))


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
        self._system = system_prompt(_INTRO, *_lines(self._parts))
        # Per metric: the intro and the lines of the judgements it reads.
        self.prompt_versions = {m.metric_id: prompt_version(_INTRO, *_lines(m.parts), *m.parts)
                                for m in self._metrics}

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
        found = {b.name: b for b in texts.blocks} if not isinstance(texts, Missing) else {}
        # The question and the documents before the answer: relevance is read from the question alone.
        blocks = [found[n] for n in ("question",) if n in found]
        if any(p != "similarity" for p in asked) and not isinstance(context, Missing):
            blocks += context
        blocks += [found[n] for n in ("answer", "reference") if n in found]
        return asked, missing, blocks

    async def _judge_call(self, turn: Turn, judged: list[TonicMetric], asked: tuple[Part, ...],
                          blocks: list[DataBlock], chunks: int, details: dict[str, object]) -> dict[str, Score]:
        # Room for every key the reply may hold: reasons, one object per document, ten points.
        max_output = 40 + 50 * sum(p in asked for p in ("similarity", "outside"))
        max_output += (12 + 6 * sum(p in asked for p in ("relevant", "used"))) * chunks if chunks else 0
        max_output += 30 * MAX_POINTS if "points" in asked else 0
        request = build_request(CALL_ID, self._system, blocks, tonic_reply(asked, chunks),
                                max_output_tokens=max_output, metrics=tuple(m.metric_id for m in judged))
        reply = await ask(self._judge, request)
        if isinstance(reply, Failure):
            return {m.metric_id: reply.score(m.metric_id, m.scale,
                                             {**details, "prompt_version": self.prompt_versions[m.metric_id]})
                    for m in judged}
        verdicts = _verdicts(reply.value, chunks)
        details = {**details, **_details(verdicts)}
        scores: dict[str, Score] = {}
        for i, metric in enumerate(judged):
            own = {**details, "prompt_version": self.prompt_versions[metric.metric_id]}
            value = metric.compute(verdicts)
            if value is None:
                scores[metric.metric_id] = skipped(metric.metric_id, metric.scale, metric.undefined_reason, own)
                continue
            threshold = self._thresholds.get(metric.metric_id)
            defect = value == 0.0 if threshold is None else value < threshold
            usage = reply.usage if i == 0 else None  # one call: usage on the first metric only
            scores[metric.metric_id] = graded(metric.metric_id, value, metric.scale, defect, usage=usage,
                                              reason=_reason(metric.parts, verdicts), details=own)
        return scores

    def _scale(self, metric_id: str) -> Scale:
        return next(m.scale for m in self._metrics if m.metric_id == metric_id)


def _system_prompt_context(turn: Turn) -> tuple[DataBlock, ...] | Missing:
    found = gather(turn, (Input.CONTEXT,))
    return found if isinstance(found, Missing) else found.blocks


def _lines(parts: Sequence[Part]) -> list[str]:
    lines = [_ASK[p] for p in parts]
    if "relevant" in parts and "used" in parts:
        lines[list(parts).index("relevant"):list(parts).index("used") + 1] = [_BOTH_CHUNK_PARTS]
    return lines


def _verdicts(value: ReplyModel, chunks: int) -> TonicVerdicts:
    documents = getattr(value, "documents", None)
    by_number = {d.n: d for d in documents} if documents is not None else {}
    points = getattr(value, "points", None) or ()
    return TonicVerdicts(
        similarity=getattr(value, "similarity", None),
        chunks=tuple(ChunkVerdict(getattr(by_number[n], "relevant", None), getattr(by_number[n], "used", None))
                     for n in range(1, chunks + 1)) if by_number else (),
        points=tuple(Point(p.point, p.supported) for p in points),
        outside=getattr(value, "outside", None),
        similarity_reason=getattr(value, "similarity_reason", ""),
        outside_reason=getattr(value, "outside_reason", ""),
    )


def _docs(flags: Sequence[bool | None]) -> str:
    named = [f"doc{n}" for n, flag in enumerate(flags, start=1) if flag]
    return ", ".join(named) if named else "none"


def _reason(parts: tuple[Part, ...], v: TonicVerdicts) -> str:
    """The reason stored on one Tonic metric's Score: the judge's own where the metric is one
    judgement, else the judgements its value is computed from."""
    if parts == ("similarity",):
        return v.similarity_reason
    if parts == ("outside",):
        return v.outside_reason
    if parts == ("points",):
        unsupported = [p.point for p in v.points if not p.supported]
        return (f"{sum(p.supported for p in v.points)} of {len(v.points)} main points supported"
                + (f"; unsupported: {'; '.join(unsupported)}" if unsupported else ""))
    relevant = [c.relevant for c in v.chunks]
    used = [c.used for c in v.chunks]
    if parts == ("relevant",):
        return f"relevant to the question: {_docs(relevant)} (of {len(v.chunks)})"
    if parts == ("used",):
        return f"used in the answer: {_docs(used)} (of {len(v.chunks)})"
    return f"relevant: {_docs(relevant)}; relevant and used: {_docs([bool(r and u) for r, u in zip(relevant, used)])}"


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
                      definition=metric, default_threshold=metric.default_threshold,
                      inputs=_metric_inputs(metric), seed="Tonic Validate")


def _metric_inputs(metric: TonicMetric) -> tuple[str, ...]:
    """What a Tonic metric reads, from its parts: each part's own inputs (:func:`_needs`), the
    question beside a reference, the documents (or the system prompt) for every other part."""
    needed = {i for part in metric.parts for i in _needs(part)}
    if "similarity" in metric.parts:
        needed.add(Input.QUESTION)
    if any(p != "similarity" for p in metric.parts):
        needed.add(Input.CONTEXT)
    order = (Input.QUESTION, Input.ANSWER, Input.CONTEXT, Input.GROUND_TRUTH)
    return input_names(sorted(needed, key=order.index))
