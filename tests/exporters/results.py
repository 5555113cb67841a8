"""Builders of real ``EvaluationResult`` objects for exporter tests, and a telemetry double for
the result writers (store, JSONL sink)."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Mapping

from monitor.model import EvaluationResult, Score, ScoreStatus, Turn

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


class WriterTelemetry:
    """Counts what a result writer reports: drops per queue and results lost to failed writes."""

    def __init__(self) -> None:
        self.dropped: Counter[str] = Counter()
        self.write_failed = 0
        self.backlog_events: Counter[str] = Counter()

    def queue_dropped(self, queue: str, count: int) -> None:
        self.dropped[queue] += count

    def jsonl_write_failed(self, count: int) -> None:
        self.write_failed += count

    def store_write_failed(self, count: int) -> None:
        self.write_failed += count

    def backlog(self, event: str, count: int) -> None:
        self.backlog_events[event] += count
