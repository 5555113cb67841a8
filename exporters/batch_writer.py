"""The queue-and-writer-task part that the result store and the JSONL sink share.

:meth:`BatchWriter.consume_result` only appends ``(timestamp, result)`` to a bounded deque (a
full or stopped queue drops and counts the result), so the event loop never waits on a disk. A
writer task takes batches of ``batch_size``, or whatever is queued after ``flush_interval``
seconds, and awaits the subclass's :meth:`BatchWriter._write_batch` for each; that method does
the I/O off the loop and handles its own failures (an exception from it ends the writer).
:meth:`BatchWriter._stop_writer` drains the queue until a deadline and counts what is left as
dropped. Opening and closing files stays with the subclass, which knows what a batch still in
flight needs.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import deque
from typing import Callable

from monitor.model import EvaluationResult
from monitor.telemetry import QUEUE_DROPPED, Telemetry

__all__ = ["Batch", "BatchWriter"]

Batch = list[tuple[float, EvaluationResult]]


class BatchWriter(ABC):
    """``ResultConsumer`` base: bounded queue + writer task feeding :meth:`_write_batch`.

    ``queue`` names the queue in ``queue_dropped`` and the task (``rag-monitor-<queue>-writer``);
    ``label`` starts the log line of a missed shutdown deadline, written to ``log``.
    """

    def __init__(self, queue: str, telemetry: Telemetry, clock: Callable[[], float], *, capacity: int,
                 batch_size: int, flush_interval: float, log: logging.Logger, label: str,
                 max_queue_bytes: int = 64 * 1024 * 1024) -> None:
        self._max_queue_bytes = max_queue_bytes
        self._queued_bytes = 0
        self._queue_name = queue
        self._drops = telemetry
        self._clock = clock
        self._capacity = capacity
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._log = log
        self._label = label
        self._queue: deque[tuple[float, EvaluationResult]] = deque()
        self._sizes: deque[int] = deque()  # text bytes of each queued result, in queue order
        self._wake = asyncio.Event()
        # Results consumed before start() wait in the queue for the writer.
        self._accepting = True
        self._task: asyncio.Task[None] | None = None

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def consume_result(self, result: EvaluationResult) -> None:
        """Queue ``result`` for writing; drops and counts it when the queue is full or closed."""
        size = result.turn.text_bytes
        if (not self._accepting or len(self._queue) >= self._capacity
                or self._queued_bytes + size > self._max_queue_bytes):
            self._drops.add(QUEUE_DROPPED, queue=self._queue_name)
            return
        self._queue.append((self._clock(), result))
        self._sizes.append(size)
        self._queued_bytes += size
        if len(self._queue) >= self._batch_size:
            self._wake.set()

    @abstractmethod
    async def _write_batch(self, batch: Batch) -> None:
        """Write ``batch`` off the event loop; count and log a failure rather than raise it."""

    async def _after_batch(self) -> None:
        """Runs after every round of the writer, with or without a batch: periodic upkeep."""

    @property
    def _writer_running(self) -> bool:
        return self._task is not None

    def _start_writer(self) -> None:
        """Accept results again and start the writer task (the subclass has opened its files)."""
        self._accepting = True
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name=f"rag-monitor-{self._queue_name}-writer")

    async def _stop_writer(self, deadline: float) -> bool:
        """Stop accepting, write what is queued until ``deadline`` (``loop.time()``), count the
        rest as dropped. False when the writer was not running (nothing for the subclass to close)."""
        self._accepting = False
        task, self._task = self._task, None
        if task is None:
            return False
        loop = asyncio.get_running_loop()
        self._wake.set()
        try:
            await asyncio.wait_for(task, max(0.0, deadline - loop.time()))
        except TimeoutError:
            self._log.warning("%s: shutdown deadline reached with %d results unwritten", self._label,
                              len(self._queue))
        if self._queue:
            self._drops.add(QUEUE_DROPPED, len(self._queue), queue=self._queue_name)
            self._queue.clear()
            self._sizes.clear()
            self._queued_bytes = 0
        return True

    async def _run(self) -> None:
        while self._accepting or self._queue:
            if self._accepting and len(self._queue) < self._batch_size:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self._flush_interval)
                except TimeoutError:
                    pass
            batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
            self._queued_bytes -= sum(self._sizes.popleft() for _ in batch)
            if batch:
                await self._write_batch(batch)
            await self._after_batch()
