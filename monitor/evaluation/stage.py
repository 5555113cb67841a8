"""The online evaluation stage: sample each conversation, queue its sampled turns, evaluate.

``turn_added`` runs on the event loop and never waits: it flags jailbreak attempts (cheap
patterns), asks the sampling stage for the conversation's decision and enqueues sampled turns
into a bounded queue (full → dropped and counted). Workers evaluate with the configured
evaluators (local tier + judge tier) and hand each :class:`EvaluationResult`, carrying the
Horvitz–Thompson weight of the decision, to every result consumer. Judge token usage goes back to
the sampler so budget policies learn the cost of a turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, Sequence

from monitor.evaluation.local.jailbreak_attempt import mark_jailbreak_attempt
from monitor.evaluation.runner import InternalErrors, evaluate_turn
from monitor.interfaces import Evaluator, ResultConsumer, Telemetry
from monitor.model import Conversation, EvaluationResult, SamplingDecision, Turn

__all__ = ["DecisionSource", "EvaluationStage"]

log = logging.getLogger(__name__)
_QUEUE = "evaluation"


class DecisionSource(Protocol):
    """What the stage needs from ``samplers.stage.SamplingStage``."""

    def decide(self, turn: Turn) -> SamplingDecision: ...

    def forget(self, conversation_id: str) -> None: ...

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None: ...


class EvaluationStage:
    """ConversationSink + Component."""

    def __init__(self, sampling: DecisionSource, evaluators: Sequence[Evaluator],
                 consumers: Sequence[ResultConsumer], telemetry: Telemetry, queue_size: int, workers: int) -> None:
        self._sampling = sampling
        self._evaluators = tuple(evaluators)
        self._consumers = tuple(consumers)
        self._telemetry = telemetry
        self._queue: asyncio.Queue[tuple[Turn, SamplingDecision]] = asyncio.Queue(maxsize=queue_size)
        self._n_workers = workers
        self._workers: list[asyncio.Task[None]] = []
        self._errors = InternalErrors()
        self._accepting = False

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def turn_added(self, conversation: Conversation, turn: Turn) -> None:
        if not self._accepting or not self._evaluators:
            return
        turn = mark_jailbreak_attempt(turn)
        decision = self._sampling.decide(turn)
        if not decision.sampled:
            return
        try:
            self._queue.put_nowait((turn, decision))
        except asyncio.QueueFull:
            self._telemetry.queue_dropped(_QUEUE, 1)

    def conversation_closed(self, conversation: Conversation) -> None:
        self._sampling.forget(conversation.id)

    async def start(self) -> None:
        if self._workers:
            return
        self._accepting = True
        self._workers = [asyncio.create_task(self._work(), name=f"evaluate-{i}") for i in range(self._n_workers)]

    async def _work(self) -> None:
        while True:
            turn, decision = await self._queue.get()
            try:
                await self._evaluate(turn, decision)
            except asyncio.CancelledError:
                raise
            except Exception:  # a consumer bug must not stop the workers
                log.exception("evaluating trace %s failed", turn.trace_id)
            finally:
                self._queue.task_done()

    async def _evaluate(self, turn: Turn, decision: SamplingDecision) -> None:
        scores = await evaluate_turn(turn, self._evaluators, self._errors)
        for score in scores:
            tokens = score.usage.prompt_tokens + score.usage.completion_tokens
            if tokens:
                self._sampling.observe_usage(turn.conversation_id, score.metric, tokens)
        result = EvaluationResult(turn, scores, decision.weight, decision.policy)
        for consumer in self._consumers:
            consumer.consume_result(result)

    async def shutdown(self, deadline: float) -> None:
        """Stop accepting, let queued turns finish until ``deadline``, cancel the rest."""
        self._accepting = False
        if not self._workers:
            return
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self._queue.join(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            log.warning("shutdown deadline: %d queued evaluations abandoned", self._queue.qsize())
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        dropped = 0
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            dropped += 1
        if dropped:
            self._telemetry.queue_dropped(_QUEUE, dropped)
