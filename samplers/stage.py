"""The sampling stage: one decision per conversation, shared by all its turns.

The assembler hands turns over as they complete; the first turn of a conversation is decided by
the sampler, later turns reuse the cached decision (and so the same weight). The cache is a
bounded LRU: when full, the least recently active conversation's decision is evicted and
counted; a later turn of an evicted conversation is decided afresh, which for hash-based
policies gives the same answer and for adaptive ones may not.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from monitor.model import SamplingDecision, Turn

from samplers.base import NO_SIGNALS, OutcomeSampler, SamplingResult, Signals, conversation_key
from samplers.feedback import forward_turn, forward_usage
from samplers.telemetry import NullSamplingTelemetry, SamplingTelemetry
from samplers.weighting import LOCAL, CellLedger

__all__ = ["SamplingStage"]


class SamplingStage:
    """Caches per-conversation decisions (bounded) and feeds usage back to the sampler."""

    def __init__(
        self,
        sampler: OutcomeSampler,
        *,
        max_conversations: int = 100_000,
        telemetry: SamplingTelemetry | None = None,
        ledger: CellLedger | None = None,
    ) -> None:
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        self._sampler = sampler
        self._max = max_conversations
        self._telemetry = telemetry or NullSamplingTelemetry()
        self._decisions: OrderedDict[str, SamplingDecision] = OrderedDict()
        self.evicted = 0
        """Decisions evicted so far (also reported to telemetry)."""
        self.ledger = ledger
        """Post-stratification counts of this process (``samplers.weighting``); None: weights stay 1/p."""

    def __len__(self) -> int:
        return len(self._decisions)

    def decide(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingDecision:
        """The decision for ``turn``'s conversation: drawn at its first turn, then cached.

        ``signals`` (local-tier values) matter only at the first turn, when the draw happens.
        """
        key = conversation_key(turn)
        cached = self._decisions.get(key)
        if cached is not None:
            self._decisions.move_to_end(key)
            forward_turn(self._sampler, key, first=False, sampled=cached.sampled)
            return cached
        result = self.draw(turn, signals)
        decision = result.decision
        if decision.cell is not None and self.ledger is not None:
            decision = replace(decision, cell=self.ledger.name(decision.cell, decision.probability, LOCAL))
            self.ledger.record(decision.cell or "", result.outcome)
        else:
            decision = replace(decision, cell=None)
        self._remember(key, decision)
        forward_turn(self._sampler, key, first=True, sampled=decision.sampled)
        return decision

    def draw(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingResult:
        """A fresh draw for ``turn``'s conversation, not cached and not counted in the ledger (the
        fleet decider proposes it to the fleet first, see ``monitor.fleet.decisions``)."""
        return self._sampler.draw(turn, signals)

    def uniform(self, conversation_id: str) -> float:
        """The shared uniform the draw of ``conversation_id`` thresholds (independent of the conversation)."""
        return self._sampler.uniform(conversation_id)

    def adopt(self, conversation_id: str, decision: SamplingDecision, *, first: bool) -> None:
        """Cache a decision taken elsewhere (the fleet's, or a draw this stage made and the fleet kept)."""
        self._remember(conversation_id, decision)
        forward_turn(self._sampler, conversation_id, first=first, sampled=decision.sampled)

    def _remember(self, key: str, decision: SamplingDecision) -> None:
        self._decisions[key] = decision
        self._decisions.move_to_end(key)
        if len(self._decisions) > self._max:
            self._decisions.popitem(last=False)
            self.evicted += 1
            self._telemetry.cache_evicted(1)

    def cached(self, conversation_id: str) -> SamplingDecision | None:
        """The cached decision, without touching recency."""
        return self._decisions.get(conversation_id)

    def forget(self, conversation_id: str) -> None:
        """Drop a closed conversation's decision (not counted as an eviction)."""
        self._decisions.pop(conversation_id, None)

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        """Judge tokens spent on ``metric`` for a turn of ``conversation_id``."""
        forward_usage(self._sampler, conversation_id, metric, tokens)
