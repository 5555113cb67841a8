"""The online evaluation stage: sample each conversation, queue its sampled turns, evaluate.

``turn_added`` runs on the event loop and never waits: it flags jailbreak attempts (the local
detector: bounded, a few milliseconds at most), asks the sampling stage for the conversation's
decision and enqueues sampled turns into a bounded queue (full → dropped and counted). Workers
evaluate with the configured evaluators (local tier + judge tier) and hand each
:class:`EvaluationResult`, carrying the Horvitz–Thompson weight of the decision, to every result
consumer. Judge token usage goes back to the sampler so budget policies learn the cost of a turn.

With a :class:`Backlog` (the result store), every enqueued turn is also made durable and leaves
the backlog when its result is stored; at shutdown what the deadline cuts off stays there
(counted ``deferred``) and the next start evaluates it first (``resumed``). Without one, what the
deadline cuts off is dropped and counted. Either way no accepted turn goes unaccounted.

In a fleet a :class:`FleetDecisions` (``monitor.fleet.decisions.FleetDecider``) decides first
turns through Redis, off the event loop's synchronous path: ``turn_added`` submits the turn and the
decision arrives a round trip later (a known conversation's at once). With a backlog that can be
claimed (``claim_expired``: the fleet's PostgreSQL store) and a ``claim_interval``, the stage also takes
over, every ``claim_interval`` seconds, the backlog rows whose lease expired — a replica that died — so its
sampled turns are evaluated by the others, once (the store's unique keys count a repeat).

With ``local_workers`` > 0 the CPU-bound local metrics (every local-tier evaluator but the
jailbreak detector, whose verdict the stage computes on arrival and the evaluator reuses) run in
a :class:`LocalWorkerPool` of that many processes; a :class:`PooledEvaluator` takes their place
in the evaluator list. The pool starts with the stage and stops after its workers, within the
same deadline.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Protocol, Sequence, runtime_checkable

from monitor.evaluation.local.jailbreak_attempt import JailbreakAttemptEvaluator, jailbreak_marker
from monitor.evaluation.local.worker_pool import LocalWorkerPool, PooledEvaluator, split_offloadable
from monitor.evaluation.registry import default_registry
from monitor.evaluation.judge_identity import JudgeIdentity
from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.interfaces import Evaluator, ResultConsumer
from monitor.model import Conversation, EvaluationResult, SamplingDecision, Turn
from monitor.telemetry import BACKLOG, QUEUE_DROPPED, Telemetry

__all__ = ["DecisionSource", "FleetDecisions", "ClaimableBacklog", "EvaluationStage", "offload_local"]

log = logging.getLogger(__name__)
_QUEUE = "evaluation"
_WARM_UP_TURN = Turn("0" * 32, "warm-up", "Is the tent waterproof?", "The tent is not waterproof.",
                     system_prompt="Answer from the documents only.")


class DecisionSource(Protocol):
    """What the stage needs from ``samplers.stage.SamplingStage``."""

    def decide(self, turn: Turn) -> SamplingDecision: ...

    def forget(self, conversation_id: str) -> None: ...

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None: ...


class FleetDecisions(Protocol):
    """Decisions shared by a fleet (``monitor.fleet.decisions.FleetDecider``)."""

    def submit(self, turn: Turn, deliver: Callable[[Turn, SamplingDecision], None]) -> None:
        """Call ``deliver`` with the conversation's decision, now or after the fleet answers; never waits."""
        ...

    async def drain(self, deadline: float | None = None) -> None:
        """Deliver what is still waiting (decided locally) and stop taking batches, by ``deadline``."""
        ...


class Backlog(Protocol):
    """Durable memory of sampled turns not yet evaluated (``exporters.result_store.ResultStore``)."""

    def defer(self, turn: Turn, decision: SamplingDecision) -> bool:
        """Remember the turn until its result is stored; never blocks. False: not made durable."""
        ...

    def forget(self, trace_id: str) -> None: ...

    async def backlog_ceiling(self) -> int:
        """The highest sequence number in the backlog now (0 when empty)."""
        ...

    async def load_backlog(self, after_seq: int, limit: int) -> list[tuple[int, Turn, SamplingDecision]]: ...


@runtime_checkable
class ClaimableBacklog(Protocol):
    """A backlog shared by a fleet, whose rows carry a claimant and a lease (the PostgreSQL store)."""

    async def claim_expired(self, limit: int) -> list[tuple[int, Turn, SamplingDecision]]:
        """Claim up to ``limit`` rows whose lease expired (their replica died) for this replica."""
        ...

    async def release(self, seqs: Sequence[int]) -> None:
        """Give back claimed rows this replica will not evaluate after all."""
        ...


class EvaluationStage:
    """ConversationSink + Component."""

    def __init__(self, sampling: DecisionSource, evaluators: Sequence[Evaluator],
                 consumers: Sequence[ResultConsumer], telemetry: Telemetry, queue_size: int, workers: int,
                 backlog: Backlog | None = None, max_queue_bytes: int = 64 * 1024 * 1024,
                 local_workers: int = 0, local_queue_size: int = 64,
                 prepare: Callable[[Turn], Turn] | None = None, fleet: FleetDecisions | None = None,
                 claim_interval: float | None = None, identity: JudgeIdentity | None = None) -> None:
        self._max_queue_bytes = max_queue_bytes
        # Judge model and prompt version on each judge score (monitor.evaluation.judge_identity).
        self._identity = identity
        self._queued_bytes = 0
        # Applied to each sampled turn before it is queued, kept in the backlog or evaluated: the
        # redactor. After the sampling decision, so its cost follows the sampled traffic, not all
        # of it (it was a third of the serving process's CPU when every turn was redacted).
        self._prepare = prepare
        self._backlog = backlog
        self._fleet = fleet
        self._claim_interval = claim_interval
        self._claim_task: asyncio.Task[None] | None = None
        self._resume_task: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._sampling = sampling
        # The configured detector when local_jailbreak_attempt runs, so the flag uses its threshold
        # and the evaluator reuses this verdict instead of scoring the question again.
        self._mark_jailbreak = jailbreak_marker(evaluators)
        self._pool, self._evaluators = offload_local(tuple(evaluators), local_workers, local_queue_size, telemetry)
        self._consumers = tuple(consumers)
        self._telemetry = telemetry
        # (turn, decision, text bytes counted against max_queue_bytes)
        self._queue: asyncio.Queue[tuple[Turn, SamplingDecision, int]] = asyncio.Queue(maxsize=queue_size)
        self._n_workers = workers
        self._workers: list[asyncio.Task[None]] = []
        self._errors = InternalErrors()
        self._accepting = False

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def local_pool(self) -> LocalWorkerPool | None:
        """The local worker pool (None with ``local_workers`` 0 or nothing to offload)."""
        return self._pool

    def turn_added(self, turn: Turn) -> None:
        if not self._accepting or not self._evaluators:
            return
        turn = self._mark_jailbreak(turn)
        if self._fleet is not None:
            self._fleet.submit(turn, self._decided)
        else:
            self._decided(turn, self._sampling.decide(turn))

    def _decided(self, turn: Turn, decision: SamplingDecision) -> None:
        if not decision.sampled:
            return
        if self._prepare is not None:
            turn = self._prepare(turn)
        size = turn.text_bytes
        if self._queued_bytes + size > self._max_queue_bytes:
            self._telemetry.add(QUEUE_DROPPED, queue=_QUEUE)
            return
        try:
            self._queue.put_nowait((turn, decision, size))
        except asyncio.QueueFull:
            self._telemetry.add(QUEUE_DROPPED, queue=_QUEUE)
            return
        self._queued_bytes += size
        if self._backlog is not None:
            self._backlog.defer(turn, decision)

    def conversation_closed(self, conversation: Conversation) -> None:
        self._sampling.forget(conversation.id)

    async def start(self) -> None:
        if self._workers:
            return
        if self._pool is not None:
            await self._pool.start()
        await self._warm_up()
        self._accepting = True
        self._workers = [asyncio.create_task(self._work(), name=f"evaluate-{i}") for i in range(self._n_workers)]
        if self._backlog is not None:
            self._resume_task = asyncio.create_task(self._resume(self._backlog), name="evaluation-resume")
            if self._claim_interval is not None and isinstance(self._backlog, ClaimableBacklog):
                self._claim_task = asyncio.create_task(self._claim(self._backlog), name="evaluation-claim")

    async def _warm_up(self) -> None:
        """Read the local models now, not on the first turn: the detector's weights in a thread
        (it runs on the loop afterwards), then the in-process local metrics on a tiny turn (they
        load their own models off the loop). The pool's workers warm up by themselves: start()
        does not wait for them."""
        await asyncio.get_running_loop().run_in_executor(None, self._mark_jailbreak, _WARM_UP_TURN)
        local = [e for e in self._evaluators if _is_local_cpu_work(e) and not isinstance(e, PooledEvaluator)]
        if local:
            await evaluate_turn(_WARM_UP_TURN, local, InternalErrors())

    async def _resume(self, backlog: Backlog) -> None:
        """Feed the previous run's backlog into the queue as room frees up, oldest first. New turns
        are admitted meanwhile; the rows they add lie above the ceiling read at start."""
        resumed = 0
        try:
            ceiling = await backlog.backlog_ceiling()
            last = 0
            while self._accepting and last < ceiling:
                room = self._queue.maxsize - self._queue.qsize()
                if room < max(1, self._queue.maxsize // 4):
                    await asyncio.sleep(0.2)
                    continue
                rows = [r for r in await backlog.load_backlog(last, room) if r[0] <= ceiling]
                if not rows:
                    break
                for seq, turn, decision in rows:
                    size = turn.text_bytes
                    try:
                        self._queue.put_nowait((turn, decision, size))
                    except asyncio.QueueFull:  # new turns took the room meanwhile: later
                        break
                    self._queued_bytes += size
                    last = seq
                    resumed += 1
        except Exception:  # the store went away: what is left stays for the next start
            log.exception("resuming the evaluation backlog failed")
        if resumed:
            self._telemetry.add(BACKLOG, resumed, event="resumed")
            log.info("evaluation backlog: %d turns from the previous run queued for evaluation", resumed)

    async def _claim(self, backlog: ClaimableBacklog) -> None:
        """Take over the backlog rows of replicas that died (their lease expired), as room allows."""
        claimed = 0
        while self._accepting:
            await asyncio.sleep(self._claim_interval or 5.0)
            room = self._queue.maxsize - self._queue.qsize()
            if room < max(1, self._queue.maxsize // 4):
                continue
            try:
                rows = await backlog.claim_expired(room)
            except Exception:  # the store is away: the rows stay leased to nobody, claimed later
                log.warning("claiming expired backlog rows failed", exc_info=True)
                continue
            taken = 0
            for _, turn, decision in rows:
                size = turn.text_bytes
                try:
                    self._queue.put_nowait((turn, decision, size))
                except asyncio.QueueFull:  # new turns took the room meanwhile: the rest goes back
                    break
                self._queued_bytes += size
                taken += 1
            if taken < len(rows):
                try:
                    await backlog.release([seq for seq, _, _ in rows[taken:]])
                except Exception:  # their lease runs out by itself
                    log.warning("releasing claimed backlog rows failed", exc_info=True)
            claimed += taken
            if taken:
                self._telemetry.add(BACKLOG, taken, event="claimed")
                log.info("evaluation backlog: %d turns of a stopped replica claimed (%d so far)", taken, claimed)

    async def _work(self) -> None:
        while True:
            turn, decision, size = await self._queue.get()
            self._queued_bytes -= size
            self._in_flight += 1
            try:
                await self._evaluate(turn, decision)
            except asyncio.CancelledError:
                raise
            except Exception:  # a consumer bug must not stop the workers
                log.exception("evaluating trace %s failed", turn.trace_id)
                if self._backlog is not None:
                    self._backlog.forget(turn.trace_id)
            finally:
                self._in_flight -= 1
                self._queue.task_done()

    async def _evaluate(self, turn: Turn, decision: SamplingDecision) -> None:
        scores = await evaluate_turn(turn, self._evaluators, self._errors)
        if self._identity is not None:
            scores = self._identity.stamp(scores)
        for score in scores:
            tokens = score.usage.prompt_tokens + score.usage.completion_tokens
            if tokens:
                self._sampling.observe_usage(turn.conversation_id, score.metric, tokens)
        result = EvaluationResult(turn, scores, decision.weight, decision.policy, cell=decision.cell)
        for consumer in self._consumers:
            consumer.consume_result(result)

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, let queued turns finish until ``deadline``, then stop the workers.
        What is left — queued or cut off mid-evaluation — stays in the backlog (``deferred``) or,
        without one, is dropped and counted. Never raises, never outlives ``deadline`` by more
        than the workers' cancellation."""
        if self._fleet is not None:  # turns still waiting for the fleet's decision: decided here, queued
            await self._fleet.drain(deadline)
        self._accepting = False
        tasks = [t for t in (self._resume_task, self._claim_task) if t is not None]
        self._resume_task = self._claim_task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if not self._workers:
            return
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self._queue.join(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            pass
        left = self._queue.qsize() + self._in_flight
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        if self._pool is not None:
            await self._pool.shutdown(deadline)
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        self._queued_bytes = 0
        if left:
            if self._backlog is not None:
                self._telemetry.add(BACKLOG, left, event="deferred")
                log.warning("shutdown deadline: %d sampled turns not evaluated; kept in the backlog for the "
                            "next start", left)
            else:
                self._telemetry.add(QUEUE_DROPPED, left, queue=_QUEUE)
                log.warning("shutdown deadline: %d sampled turns not evaluated and dropped (the result store, "
                            "which keeps them for the next start, is off)", left)
        self._in_flight = 0


def _is_local_cpu_work(evaluator: Evaluator) -> bool:
    """Local-tier metrics, except the jailbreak detector: its verdict is computed on arrival in
    this process (the sampling rule reads it) and the evaluator reuses it from a memo here."""
    registry = default_registry()
    return not isinstance(evaluator, JailbreakAttemptEvaluator) and all(
        m in registry and registry.get(m).tier == "local" for m in evaluator.metric_ids)


def offload_local(evaluators: tuple[Evaluator, ...], workers: int, queue_size: int,
             telemetry: Telemetry) -> tuple[LocalWorkerPool | None, tuple[Evaluator, ...]]:
    """(the pool, the evaluator list with one PooledEvaluator where the first offloaded one was)."""
    if workers < 1:
        return None, evaluators
    moved, _ = split_offloadable(evaluators, _is_local_cpu_work)
    if not moved:
        return None, evaluators
    pool = LocalWorkerPool(moved, workers, queue_size, telemetry)
    first = evaluators.index(moved[0])
    kept: list[Evaluator] = [e for e in evaluators if e not in moved]
    kept.insert(first, PooledEvaluator(pool))  # everything before the first moved one was kept
    return pool, tuple(kept)
