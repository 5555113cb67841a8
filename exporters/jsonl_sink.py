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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence

from exporters.batch_writer import Batch, BatchWriter
from exporters.config import JsonlConfig
from exporters.labels import recorded_labels
from monitor.model import EvaluationResult, Score
from monitor.telemetry import Telemetry, counter

__all__ = ["JSONL_WRITE_FAILURES", "JsonlSink", "result_record", "score_record"]

log = logging.getLogger(__name__)


JSONL_WRITE_FAILURES = counter("rag_monitor_jsonl_write_failures_total",
                               "Results lost because a JSONL sink write failed.")


def _number(value: float | None) -> float | None:
    # json.dumps writes NaN/Infinity, which strict JSON readers reject.
    return value if value is None or math.isfinite(value) else None


def score_record(score: Score) -> dict[str, Any]:
    """One score, keyed as in ``rag-monitor eval`` output (its record, with NaN/Inf as null)."""
    return {**score.to_record(), "value": _number(score.value)}


def result_record(result: EvaluationResult, timestamp: float) -> dict[str, Any]:
    """The JSON object of one line. ``labels`` holds the turn's labels plus ``model`` when known."""
    turn = result.turn
    labels = recorded_labels(turn)
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
        # Conversation text: readable by this user only, whatever the umask.
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)
        self._file = os.fdopen(fd, "ab")
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


class JsonlSink(BatchWriter):
    """``Component`` + ``ResultConsumer`` writing one JSON line per result (see module doc)."""

    def __init__(self, config: JsonlConfig, telemetry: Telemetry, clock: Callable[[], float] = time.time, *,
                 batch_size: int = 256, flush_interval_seconds: float = 1.0) -> None:
        if not config.path:
            raise ValueError("exporters.jsonl.path is not set")
        if batch_size <= 0 or flush_interval_seconds <= 0:
            raise ValueError("batch_size and flush_interval_seconds must be positive")
        super().__init__("jsonl", telemetry, clock, capacity=config.queue_size, batch_size=batch_size,
                         flush_interval=flush_interval_seconds, log=log, label="jsonl sink",
                         max_queue_bytes=config.max_queue_bytes)
        self._config = config
        self._telemetry = telemetry
        self._file = _RotatingFile(Path(config.path), config.max_bytes)
        self._pool: ThreadPoolExecutor | None = None
        self._failing = False

    async def start(self) -> None:
        """Open (append to) the file and start the writer."""
        if self._writer_running:
            return
        pool = ThreadPoolExecutor(1, thread_name_prefix="rag-monitor-jsonl")
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self._file.open)
        except OSError as exc:
            pool.shutdown(wait=False)
            raise OSError(f"exporters.jsonl.path={self._config.path!r}: cannot open: {exc}") from exc
        self._pool = pool
        self._start_writer()

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, write what is queued until ``deadline`` (``loop.time()``), close."""
        if not await self._stop_writer(deadline):
            return
        pool, self._pool = self._pool, None
        assert pool is not None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(pool, self._file.close)  # after any batch still being written
        pool.shutdown(wait=False)

    async def _write_batch(self, batch: Batch) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._pool, self._write, batch)
        except Exception as exc:  # disk full, permissions, a value json cannot take: count, go on
            self._telemetry.add(JSONL_WRITE_FAILURES, len(batch))
            if not self._failing:  # once per burst
                self._failing = True
                log.error("jsonl sink: writing to %s failed (%s); results are lost until it recovers",
                          self._config.path, exc)
            return
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
