"""Local-tier evaluation in worker processes, so the serving process's loop and CPU stay free.

The local metrics are pure CPU (tokenising, folding, scoring) and hold the GIL while they run:
a thread does not keep them off the event loop, and their CPU is taken from ingest. The
:class:`LocalWorkerPool` runs them in ``evaluation.local_workers`` child processes
(``python -m monitor.evaluation.local.worker_process``) instead, and :class:`PooledEvaluator`
stands in for them in the evaluator list, so ``evaluate_turn`` runs them concurrently with the
judge as before. The serving process only pickles the turn and unpickles the Scores.

Contract:

* **Bounded, never blocking.** :meth:`LocalWorkerPool.submit` puts the turn in a queue of
  ``queue_size`` and returns at once; a full queue (the workers fall behind) is counted
  (``rag_monitor_queue_dropped_total{queue="local_workers"}``) and the offloaded metrics get an
  ``error`` Score of type :data:`OVERLOADED` — the turn's other metrics and its result go on.
* **A worker that dies is replaced.** A crash or a call past ``call_timeout`` kills the child,
  counts ``rag_monitor_local_worker_restarts_total{reason}`` (``crashed`` | ``timeout`` |
  ``start_failed``), starts a new one and runs the turn again once; a turn that loses its worker
  twice gets ``error`` Scores of type :data:`WORKER_LOST`. Nothing accepted goes unanswered.
* **Lifecycle.** ``start`` returns at once (children start in the background and load their
  models before they take work); ``shutdown(deadline)`` closes their stdin (they exit when it
  ends) and kills what is still running at ``deadline``. Safe twice and without ``start``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence, cast

from monitor.evaluation.local.worker_process import HEADER_BYTES, READY
from monitor.evaluation.scoring import failed
from monitor.interfaces import Evaluator
from monitor.model import Score, Turn
from monitor.telemetry import QUEUE_DROPPED, Telemetry, counter

__all__ = ["QUEUE", "OVERLOADED", "WORKER_LOST", "STOPPED", "EXCHANGE_FAILED", "LOCAL_WORKER_RESTARTS", "LocalWorkerPool",
           "PooledEvaluator", "split_offloadable"]

log = logging.getLogger(__name__)

QUEUE = "local_workers"
OVERLOADED = "local_workers_overloaded"
WORKER_LOST = "local_worker_lost"
STOPPED = "local_workers_stopped"
EXCHANGE_FAILED = "local_worker_exchange_failed"
_SCALE = (0.0, 1.0)  # an error carries no value; every local metric is on 0-1
_RELAUNCH_BACKOFF_SECONDS = 1.0
_SEND_SLICE_BYTES = 256 * 1024
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory holding ``monitor/``


LOCAL_WORKER_RESTARTS = counter(
    "rag_monitor_local_worker_restarts_total",
    "Local-tier worker processes replaced, by reason: crashed, timeout (a turn ran past the call timeout) or "
    "start_failed.", "reason")


class WorkerLost(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(eq=False)
class _Job:
    turn: Turn
    future: asyncio.Future[tuple[Score, ...]]
    job_id: int = field(default=0)


async def _read_frame(stream: asyncio.StreamReader) -> object:
    header = await stream.readexactly(HEADER_BYTES)
    return pickle.loads(await stream.readexactly(int.from_bytes(header, "big")))


def _frame(value: object) -> bytes:
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(HEADER_BYTES, "big") + body


class _Worker:
    """One child process and its two pipes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._stdin, self._stdout = process.stdin, process.stdout

    @classmethod
    async def launch(cls, evaluators_frame: bytes, timeout: float) -> "_Worker":
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_PACKAGE_ROOT, os.environ.get("PYTHONPATH"))))}
        # Its own session: a Ctrl-C or a signal to the serving process's group is the serving
        # process's to handle; the child ends when its stdin does (also when the parent is killed).
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.evaluation.local.worker_process",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, start_new_session=True)
        worker = cls(process)
        try:
            worker._stdin.write(evaluators_frame)
            async with asyncio.timeout(timeout):
                await worker._stdin.drain()
                ready = await _read_frame(worker._stdout)
        except BaseException as exc:
            worker.kill()
            await process.wait()
            if isinstance(exc, (TimeoutError, ConnectionError, asyncio.IncompleteReadError)):
                raise WorkerLost("start_failed", f"{type(exc).__name__}, exit code {process.returncode}") from None
            raise
        if ready != READY:
            worker.kill()
            raise WorkerLost("start_failed", f"unexpected greeting {ready!r}")
        return worker

    async def call(self, job: _Job, timeout: float) -> tuple[Score, ...]:
        body = pickle.dumps((job.job_id, job.turn), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            async with asyncio.timeout(timeout):
                await self._send(body)
                while True:
                    reply = await _read_frame(self._stdout)
                    job_id, scores = cast("tuple[int, tuple[Score, ...]]", reply)
                    if job_id == job.job_id:  # an older reply belongs to a call cut off earlier
                        return tuple(scores)
        except TimeoutError:
            raise WorkerLost("timeout", f"no answer within {timeout:g} s") from None
        except (ConnectionError, asyncio.IncompleteReadError):
            raise WorkerLost("crashed", "the process ended") from None

    async def _send(self, body: bytes) -> None:
        # In slices, each drained before the next: the pipe transport's buffer stays small, so
        # no single callback copies or shifts megabytes of a long turn.
        header = len(body).to_bytes(HEADER_BYTES, "big")
        if len(body) <= _SEND_SLICE_BYTES:  # the usual turn: one write, one system call
            self._stdin.write(header + body)
            await self._stdin.drain()
            return
        self._stdin.write(header)
        view = memoryview(body)
        for start in range(0, len(body), _SEND_SLICE_BYTES):
            self._stdin.write(view[start:start + _SEND_SLICE_BYTES])
            await self._stdin.drain()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()

    async def stop(self, deadline: float) -> None:
        """End of input: the child exits by itself; killed at ``deadline`` if it has not."""
        loop = asyncio.get_running_loop()
        if not self._stdin.is_closing():
            self._stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            self.kill()
            await self.process.wait()


def _errors(metric_ids: Sequence[str], error_type: str, message: str) -> tuple[Score, ...]:
    return tuple(failed(m, _SCALE, error_type, message) for m in metric_ids)


class LocalWorkerPool:
    """``workers`` child processes evaluating ``evaluators`` (picklable) on submitted turns."""

    def __init__(self, evaluators: Sequence[Evaluator], workers: int, queue_size: int, telemetry: Telemetry,
                 call_timeout: float = 30.0, start_timeout: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if workers < 1 or queue_size < 1:
            raise ValueError("a local worker pool needs at least one worker and a queue of at least one")
        self.metric_ids = tuple(m for e in evaluators for m in e.metric_ids)
        self._evaluators_frame = _frame(tuple(evaluators))  # fails here, not in a child, if unpicklable
        self._n_workers, self._queue_size = workers, queue_size
        self._telemetry = telemetry
        self._call_timeout, self._start_timeout = call_timeout, start_timeout
        self._clock = clock
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=queue_size)
        self._slots: list[asyncio.Task[None]] = []
        self._workers: dict[int, _Worker] = {}
        self._current: dict[int, _Job] = {}
        self._ids = itertools.count(1)
        self._last_start_failure = -_RELAUNCH_BACKOFF_SECONDS
        self._accepting = False

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def live_workers(self) -> int:
        """Children started and answering (what the restart tests watch)."""
        return sum(1 for w in self._workers.values() if w.process.returncode is None)

    @property
    def pids(self) -> tuple[int, ...]:
        """Process ids of the running children (for ``ps`` and the lifecycle tests)."""
        return tuple(w.process.pid for w in self._workers.values() if w.process.returncode is None)

    async def start(self) -> None:
        if self._slots:
            return
        self._accepting = True
        self._slots = [asyncio.create_task(self._slot(i), name=f"local-worker-{i}") for i in range(self._n_workers)]

    def submit(self, turn: Turn) -> asyncio.Future[tuple[Score, ...]] | None:
        """Queue ``turn``; None (counted) when the queue is full or the pool is stopped."""
        if not self._accepting:
            return None
        job = _Job(turn, asyncio.get_running_loop().create_future(), next(self._ids))
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self._telemetry.add(QUEUE_DROPPED, queue=QUEUE)
            return None
        return job.future

    async def evaluate(self, turn: Turn) -> tuple[Score, ...]:
        """The offloaded metrics' Scores for ``turn`` (``error`` Scores when it could not run)."""
        future = self.submit(turn)
        if future is None:
            reason = "the local worker pool's queue is full" if self._accepting else "the local worker pool is stopped"
            return _errors(self.metric_ids, OVERLOADED if self._accepting else STOPPED, reason)
        return await future

    async def _slot(self, index: int) -> None:
        await self._ensure_worker(index)  # start before traffic: the child loads its models now
        while True:
            job = await self._queue.get()
            if job.future.done():  # its caller gave up (cut off at shutdown)
                continue
            self._current[index] = job
            result = await self._run(index, job)
            del self._current[index]
            if not job.future.done():
                job.future.set_result(result)

    async def _run(self, index: int, job: _Job) -> tuple[Score, ...]:
        for _attempt in range(2):
            worker = await self._ensure_worker(index)
            if worker is None:
                return _errors(self.metric_ids, WORKER_LOST, "the local worker process could not be started")
            try:
                return await worker.call(job, self._call_timeout)
            except WorkerLost as lost:
                log.warning("local worker %d lost (%s); starting a new one", index, lost)
                self._telemetry.add(LOCAL_WORKER_RESTARTS, reason=lost.reason)
                worker.kill()
                await worker.process.wait()
                self._workers.pop(index, None)
            except Exception as exc:  # noqa: BLE001 - a turn or reply that cannot cross the pipe; the worker is fine
                log.warning("local worker %d: a turn could not be exchanged: %r", index, exc)
                return _errors(self.metric_ids, EXCHANGE_FAILED, f"{type(exc).__name__}: {exc}")
        return _errors(self.metric_ids, WORKER_LOST, "the local worker process died twice on this turn")

    async def _ensure_worker(self, index: int) -> _Worker | None:
        worker = self._workers.get(index)
        if worker is not None:
            return worker
        if self._clock() - self._last_start_failure < _RELAUNCH_BACKOFF_SECONDS:
            return None  # it just failed to start: answer at once rather than retry per turn
        try:
            worker = await _Worker.launch(self._evaluators_frame, self._start_timeout)
        except (WorkerLost, OSError) as exc:
            self._last_start_failure = self._clock()
            self._telemetry.add(LOCAL_WORKER_RESTARTS, reason="start_failed")
            log.error("local worker %d could not start: %s", index, exc)
            return None
        self._workers[index] = worker
        return worker

    async def shutdown(self, deadline: float) -> None:
        """Stop taking turns, answer what is queued or running with ``error`` Scores (the stage
        has already cut off its callers by then), let the children exit, kill them at ``deadline``."""
        self._accepting = False
        slots, self._slots = self._slots, []
        for task in slots:
            task.cancel()
        await asyncio.gather(*slots, return_exceptions=True)
        stopped = _errors(self.metric_ids, STOPPED, "the local worker pool stopped before this turn ran")
        for job in [*self._current.values(), *self._drain()]:
            if not job.future.done():
                job.future.set_result(stopped)
        self._current.clear()
        workers, self._workers = list(self._workers.values()), {}
        await asyncio.gather(*(w.stop(deadline) for w in workers), return_exceptions=True)

    def _drain(self) -> Iterable[_Job]:
        while not self._queue.empty():
            yield self._queue.get_nowait()


class PooledEvaluator:
    """The Evaluator that stands for the offloaded evaluators: their metrics, from the pool."""

    def __init__(self, pool: LocalWorkerPool) -> None:
        self.pool = pool
        self.metric_ids = pool.metric_ids

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        return await self.pool.evaluate(turn)


def split_offloadable(evaluators: Sequence[Evaluator], offloadable: Callable[[Evaluator], bool]
                      ) -> tuple[list[Evaluator], list[Evaluator]]:
    """(evaluators to run in the pool, evaluators to keep in process), each in the given order.
    An evaluator that cannot be pickled stays in process whatever ``offloadable`` says."""
    moved: list[Evaluator] = []
    kept: list[Evaluator] = []
    for evaluator in evaluators:
        (moved if offloadable(evaluator) and _picklable(evaluator) else kept).append(evaluator)
    return moved, kept


def _picklable(evaluator: Evaluator) -> bool:
    try:
        pickle.dumps(evaluator)
    except Exception:  # noqa: BLE001 - any failure means "not across a process boundary"
        log.info("%s cannot be pickled: it runs in the serving process", type(evaluator).__name__)
        return False
    return True
