"""Per-chunk judgements shared by Tonic Validate's retrieval/augmentation metrics.

``retrieval_precision`` needs, per chunk, "is it relevant to the question"; ``augmentation_accuracy``
"does its information appear in the answer"; ``augmentation_precision`` both. The seed judges
each chunk; we judge each chunk too, but in ONE call that returns one verdict object per chunk
(the question and answer are sent once instead of once per chunk), asking only for the fields
the configured metrics need. Every configured chunk metric is built into one evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Literal, Mapping, Sequence

from monitor.evaluation.inputs import Input, Missing, document_blocks, gather
from monitor.evaluation.judging import Failure, ask
from monitor.evaluation.parsing import Parsed, ParseFailure, check_keys, first_failure, get_bool, get_int, get_list
from monitor.evaluation.prompting import array_field, bool_field, build_request, int_field, object_schema, system_prompt
from monitor.evaluation.registry import BuildContext, MetricGroup, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.judge.types import Judge
from monitor.model import Score, Turn

__all__ = [
    "Field",
    "FIELD_TEXT",
    "ChunkVerdict",
    "ChunkMetric",
    "parse_chunk_reply",
    "chunk_system_prompt",
    "ChunkJudgementEvaluator",
    "CHUNK_GROUP",
    "chunk_metric_spec",
]

SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
CALL_ID = "tonic_chunks"

Field = Literal["relevant", "used"]
FIELD_TEXT: Mapping[str, str] = {
    "relevant": "relevant: the chunk holds information useful for answering the question.",
    "used": "used: information from the chunk appears in the answer.",
}
_FIELD_INPUT = {"relevant": Input.QUESTION, "used": Input.ANSWER}


@dataclass(frozen=True, slots=True)
class ChunkVerdict:
    relevant: bool | None
    used: bool | None


@dataclass(frozen=True)
class ChunkMetric:
    """A metric computed from chunk verdicts; ``compute`` returns None when it is undefined."""

    metric_id: str
    fields: tuple[Field, ...]
    compute: Callable[[Sequence[ChunkVerdict]], float | None]
    undefined_reason: str = ""


def chunk_system_prompt(fields: Sequence[str]) -> str:
    """The fixed instructions for judging ``fields`` on every chunk."""
    keys = ", ".join(fields)
    return system_prompt(
        "You judge each retrieved chunk (docN) separately, in order. For every chunk report:",
        "\n".join(f"- {FIELD_TEXT[f]}" for f in fields),
        f"Keys: chunks (array, one object per chunk in order, with n = the chunk number and {keys} as booleans).",
    )


def chunk_schema(fields: Sequence[str], chunks: int) -> dict[str, Any]:
    """Reply schema for ``chunks`` chunks."""
    item = object_schema({"n": int_field(1, chunks), **{f: bool_field() for f in fields}})
    return object_schema({"chunks": array_field(item, chunks, chunks)})


def _parse_item(item: Any, index: int, fields: Sequence[str], chunks: int) -> Parsed[ChunkVerdict]:
    bad = check_keys(item, ("n", *fields))
    if bad:
        return bad
    n = get_int(item, "n", 1, chunks)
    if isinstance(n, ParseFailure):
        return n
    if n != index + 1:
        return ParseFailure("parse_error", f"chunks out of order: item {index + 1} has n={n}")
    values = {f: get_bool(item, f) for f in fields}
    failure = first_failure(*values.values())
    if failure:
        return failure
    return ChunkVerdict(relevant=values.get("relevant"), used=values.get("used"))  # type: ignore[arg-type]


def parse_chunk_reply(data: Mapping[str, Any], fields: Sequence[str], chunks: int) -> Parsed[tuple[ChunkVerdict, ...]]:
    """``{"chunks": [{"n": 1, <field>: bool, ...}, ...]}`` with exactly one item per chunk."""
    bad = check_keys(data, ("chunks",))
    if bad:
        return bad
    items = get_list(data, "chunks", chunks, chunks)
    if isinstance(items, ParseFailure):
        return items
    verdicts = [_parse_item(item, i, fields, chunks) for i, item in enumerate(items)]
    failure = first_failure(*verdicts)
    return failure if failure else tuple(verdicts)  # type: ignore[arg-type]


class ChunkJudgementEvaluator:
    """All configured chunk metrics from one judge call."""

    def __init__(self, metrics: Sequence[ChunkMetric], judge: Judge, thresholds: Mapping[str, float], max_context_chars: int) -> None:
        self._metrics = tuple(metrics)
        self.metric_ids = tuple(m.metric_id for m in self._metrics)
        self.fields = tuple(f for f in ("relevant", "used") if any(f in m.fields for m in self._metrics))
        self._judge = judge
        self._thresholds = dict(thresholds)
        self._max_context_chars = max_context_chars
        self._system = chunk_system_prompt(self.fields)

    def _skip_all(self, reason: str) -> list[Score]:
        return [skipped(m, SCALE, reason) for m in self.metric_ids]

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """One call; each metric computed from the verdicts."""
        texts = gather(turn, tuple(_FIELD_INPUT[f] for f in self.fields))
        docs = document_blocks(turn, self._max_context_chars)
        for missing in (texts, docs):
            if isinstance(missing, Missing):
                return self._skip_all(missing.reason)
        assert not isinstance(texts, Missing) and not isinstance(docs, Missing)
        blocks, details = docs
        request = replace(  # tokens are split across the metrics computed (JudgeRequest.metrics)
            build_request(CALL_ID, self._system, (*texts.blocks, *blocks), chunk_schema(self.fields, len(blocks)),
                          max_output_tokens=40 + 20 * len(blocks)),
            metrics=self.metric_ids,
        )
        verdict = await ask(self._judge, request, lambda data: parse_chunk_reply(data, self.fields, len(blocks)))
        if isinstance(verdict, Failure):
            return [verdict.score(m, SCALE, details) for m in self.metric_ids]
        details["chunks"] = [{"relevant": v.relevant, "used": v.used} for v in verdict.value]
        scores = []
        for i, metric in enumerate(self._metrics):
            value = metric.compute(verdict.value)
            if value is None:
                scores.append(skipped(metric.metric_id, SCALE, metric.undefined_reason, details))
                continue
            usage = verdict.usage if i == 0 else None  # one call: usage on the first metric only
            defect = value < self._thresholds[metric.metric_id]
            scores.append(graded(metric.metric_id, value, SCALE, defect, usage=usage, details={**details, "judge_call": CALL_ID}))
        return scores


def _build(specs: tuple[MetricSpec, ...], ctx: BuildContext) -> ChunkJudgementEvaluator:
    metrics = [s.definition for s in specs]
    thresholds = {s.metric_id: ctx.threshold(s.metric_id) for s in specs}
    return ChunkJudgementEvaluator(metrics, ctx.require_judge(), thresholds, ctx.max_context_chars)


CHUNK_GROUP = MetricGroup(CALL_ID, build=_build)


def chunk_metric_spec(metric: ChunkMetric, summary: str) -> MetricSpec:
    """The registry spec of a chunk metric (always built through :data:`CHUNK_GROUP`)."""
    return MetricSpec(
        metric.metric_id, summary, "judge", SCALE, group=CHUNK_GROUP, definition=metric,
        default_threshold=DEFAULT_THRESHOLD,
    )
