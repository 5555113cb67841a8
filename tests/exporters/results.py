"""Builders of real ``EvaluationResult`` objects for exporter tests, and a telemetry double for
the result writers (store, JSONL sink)."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Mapping

from exporters.jsonl_sink import JSONL_WRITE_FAILURES
from exporters.result_store import STORE_WRITE_FAILURES
from monitor.model import EvaluationResult, Score, ScoreStatus, Turn
from monitor.telemetry import BACKLOG, QUEUE_DROPPED, CountingTelemetry

_ids = itertools.count(1)


def turn(*, service: str = "rag-app", labels: Mapping[str, str] | None = None, model: str | None = "gpt-test",
         question: str = "What is the refund window?", answer: str = "30 days.",
         trace_id: str | None = None, chat_span_id: str | None = None, **extra: object) -> Turn:
    n = next(_ids)
    return Turn(trace_id=trace_id or f"{n:032x}", conversation_id=f"conv-{n}", question=question, answer=answer,
                service=service, labels=dict(labels or {}), response_model=model,
                chat_span_id=chat_span_id or f"{n:016x}", **extra)  # type: ignore[arg-type]


def score(metric: str, value: float | None, *, defect: bool | None = None, status: str = ScoreStatus.OK,
          scale: tuple[float, float] = (1.0, 5.0), reason: str | None = None, label: str | None = None) -> Score:
    return Score(metric=metric, value=value, scale=scale, status=status, defect=defect, reason=reason, label=label)


def result(*scores: Score, weight: float = 1.0, policy: str = "default", **turn_fields: object) -> EvaluationResult:
    return EvaluationResult(turn(**turn_fields), tuple(scores), weight, policy)  # type: ignore[arg-type]


class WriterTelemetry(CountingTelemetry):
    """Counts what a result writer reports: drops per queue, results lost to failed writes and
    backlog events (strict: a counter's labels must be exactly its declared ones)."""

    @property
    def dropped(self) -> Counter[str]:
        return Counter({q: int(n) for q, n in self.by_label(QUEUE_DROPPED, "queue").items()})

    @property
    def write_failed(self) -> int:
        return int(self.value(STORE_WRITE_FAILURES) + self.value(JSONL_WRITE_FAILURES))

    @property
    def backlog_events(self) -> Counter[str]:
        return Counter({e: int(n) for e, n in self.by_label(BACKLOG, "event").items()})
