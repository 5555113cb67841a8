"""JSONL sink: one JSON object per evaluated turn, appended to a file for offline analysis.

Each line holds the turn's ids, service, labels, weight, text and documents, and its ``scores``
in the same shape as the records ``rag-monitor eval`` writes (``metric``, ``outcome``,
``status``, ``value``, ``scale``, ``defect``, ``label``, ``reason``, ``error_type``, ``usage``,
``details``), so the same tools read both.

:meth:`JsonlSink.consume_result` only appends to a bounded deque; a writer task hands batches
to one thread that serialises and writes them, flushing after every batch (at most
``flush_interval_seconds`` after a result arrived) so a killed process loses at most the queue.
Past ``max_bytes`` the file is renamed to ``<path>.1`` (replacing the previous one) and a new one
is started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, Callable, Protocol, Sequence

from exporters.config import JsonlConfig
from monitor.model import EvaluationResult, Score

__all__ = ["JsonlTelemetry", "JsonlSink", "result_record", "score_record"]

log = logging.getLogger(__name__)


class JsonlTelemetry(Protocol):
    def queue_dropped(self, queue: str, count: int) -> None: ...

    def jsonl_write_failed(self, count: int) -> None: ...


def _number(value: float | None) -> float | None:
    # json.dumps writes NaN/Infinity, which strict JSON readers reject.
    return value if value is None or math.isfinite(value) else None


def score_record(score: Score) -> dict[str, Any]:
    """One score, keyed as in ``rag-monitor eval`` output."""
    usage = score.usage
    return {
        "metric": score.metric,
        "outcome": score.outcome,
        "status": score.status,
        "value": _number(score.value),
        "scale": list(score.scale),
        "defect": score.defect,
        "label": score.label,
        "reason": score.reason,
        "error_type": score.error_type,
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                  "latency_seconds": round(usage.latency_seconds, 6), "calls": usage.calls},
        "details": dict(score.details),
    }


def result_record(result: EvaluationResult, timestamp: float) -> dict[str, Any]:
    """The JSON object of one line. ``labels`` holds the turn's labels plus ``model`` when known."""
    turn = result.turn
    labels = dict(turn.labels)
    model = turn.response_model or turn.request_model
    if model and "model" not in labels:
        labels["model"] = model
    return {
        "timestamp": timestamp,
        "trace_id": turn.trace_id,
        "span_id": turn.chat_span_id,
        "conversation_id": turn.conversation_id,
        "service": turn.service,
        "labels": labels,
        "weight": _number(result.weight),
        "sampling_policy": result.sampling_policy,
        "question": turn.question,
        "answer": turn.answer,
        "documents": [{"id": d.id, "title": d.title, "content": d.content, "score": _number(d.score)}
                      for d in turn.documents],
        "scores": [score_record(s) for s in result.scores],
    }


class _RotatingFile:
    """Appends lines to ``path``; past ``max_bytes`` moves it to ``<path>.1``. Used by one thread."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self._path = path
        self._rotated = path.with_name(path.name + ".1")
        self._max_bytes = max_bytes
        self._file: BinaryIO | None = None
        self._size = 0

    def open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self._path, "ab")  # noqa: SIM115 - closed by close()
        self._size = self._file.tell()

    def write(self, lines: Sequence[bytes]) -> None:
        if self._file is None:  # a failed rotation or write closed it; try again
            self.open()
        for line in lines:
            assert self._file is not None
            if self._size and self._size + len(line) > self._max_bytes:
                self._rotate()
            self._file.write(line)
            self._size += len(line)
        assert self._file is not None
        self._file.flush()

    def _rotate(self) -> None:
        self.close()
        os.replace(self._path, self._rotated)
        self.open()

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


def _encode(batch: Sequence[tuple[float, EvaluationResult]]) -> list[bytes]:
    return [(json.dumps(result_record(r, ts), ensure_ascii=False, default=str) + "\n").encode()
            for ts, r in batch]


class JsonlSink:
    """``Component`` + ``ResultConsumer`` writing one JSON line per result (see module doc)."""

    def __init__(self, config: JsonlConfig, telemetry: JsonlTelemetry, clock: Callable[[], float] = time.time, *,
                 batch_size: int = 256, flush_interval_seconds: float = 1.0) -> None:
        if not config.path:
            raise ValueError("exporters.jsonl.path is not set")
        if batch_size <= 0 or flush_interval_seconds <= 0:
            raise ValueError("batch_size and flush_interval_seconds must be positive")
        self._config = config
        self._telemetry = telemetry
        self._clock = clock
        self._batch_size = batch_size
        self._flush_interval = flush_interval_seconds
        self._file = _RotatingFile(Path(config.path), config.max_bytes)
        self._queue: deque[tuple[float, EvaluationResult]] = deque()
        self._wake = asyncio.Event()
        self._accepting = True
        self._pool: ThreadPoolExecutor | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def consume_result(self, result: EvaluationResult) -> None:
        """Queue ``result``; drops and counts it (queue ``jsonl``) when full or shut down."""
        if not self._accepting or len(self._queue) >= self._config.queue_size:
            self._telemetry.queue_dropped("jsonl", 1)
            return
        self._queue.append((self._clock(), result))
        if len(self._queue) >= self._batch_size:
            self._wake.set()

    async def start(self) -> None:
        """Open (append to) the file and start the writer."""
        if self._task is not None:
            return
        pool = ThreadPoolExecutor(1, thread_name_prefix="rag-monitor-jsonl")
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self._file.open)
        except OSError as exc:
            pool.shutdown(wait=False)
            raise OSError(f"exporters.jsonl.path={self._config.path!r}: cannot open: {exc}") from exc
        self._pool = pool
        self._accepting = True
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="rag-monitor-jsonl-writer")

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, write what is queued until ``deadline`` (``loop.time()``), close."""
        self._accepting = False
        task, self._task = self._task, None
        if task is None:
            return
        loop = asyncio.get_running_loop()
        self._wake.set()
        try:
            await asyncio.wait_for(task, max(0.0, deadline - loop.time()))
        except TimeoutError:
            log.warning("jsonl sink: shutdown deadline reached with %d results unwritten", len(self._queue))
        if self._queue:
            self._telemetry.queue_dropped("jsonl", len(self._queue))
            self._queue.clear()
        pool, self._pool = self._pool, None
        assert pool is not None
        await loop.run_in_executor(pool, self._file.close)  # after any batch still being written
        pool.shutdown(wait=False)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._accepting or self._queue:
            if self._accepting and len(self._queue) < self._batch_size:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self._flush_interval)
                except TimeoutError:
                    pass
            batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
            if not batch:
                continue
            try:
                await loop.run_in_executor(self._pool, self._write, batch)
            except Exception as exc:  # disk full, permissions, a value json cannot take: count, go on
                self._telemetry.jsonl_write_failed(len(batch))
                if not self._failing:  # once per burst
                    self._failing = True
                    log.error("jsonl sink: writing to %s failed (%s); results are lost until it recovers",
                              self._config.path, exc)
                continue
            if self._failing:
                self._failing = False
                log.warning("jsonl sink: writes to %s recovered", self._config.path)

    def _write(self, batch: Sequence[tuple[float, EvaluationResult]]) -> None:
        try:
            self._file.write(_encode(batch))
        except OSError:
            with contextlib.suppress(OSError):  # the close flushes, and may fail the same way
                self._file.close()  # reopened (and re-measured) on the next batch
            raise
