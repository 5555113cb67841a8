"""SamplingStage: one decision per conversation, bounded cache, feedback forwarding."""

from __future__ import annotations

import pytest

from monitor.model import Turn
from samplers import NO_SIGNALS, PolicySampler, SamplingResult, SamplingStage, Signals
from samplers.probabilistic import ProbabilisticPolicy
from monitor.model import SamplingDecision


class RecordingTelemetry:
    def __init__(self) -> None:
        self.decisions: list[tuple[str, str]] = []
        self.evicted = 0

    def decision(self, policy: str, outcome: str) -> None:
        self.decisions.append((policy, outcome))

    def probability(self, policy: str, value: float) -> None:
        pass

    def cache_evicted(self, count: int) -> None:
        self.evicted += count


class AlternatingSampler:
    """Samples every other new conversation; records feedback."""

    name = "alternating"

    def __init__(self) -> None:
        self.draws = 0
        self.turns: list[tuple[str, bool, bool]] = []
        self.usage: list[tuple[str, str, int]] = []

    def draw(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingResult:
        self.draws += 1
        sampled = self.draws % 2 == 1
        outcome = "sampled" if sampled else "not_sampled"
        return SamplingResult(SamplingDecision(sampled, self.name, 0.5), outcome)

    def observe_turn(self, conversation_id: str, *, first: bool, sampled: bool) -> None:
        self.turns.append((conversation_id, first, sampled))

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        self.usage.append((conversation_id, metric, tokens))


def _turn(conversation: str, trace: str = "t") -> Turn:
    return Turn(trace, conversation, "q", "a")


def test_all_turns_share_the_first_decision() -> None:
    sampler = AlternatingSampler()
    stage = SamplingStage(sampler)
    first = stage.decide(_turn("a", "t1"))
    other = stage.decide(_turn("b", "t2"))
    assert first.sampled and not other.sampled
    assert stage.decide(_turn("a", "t3")) is first
    assert stage.decide(_turn("b", "t4")) is other
    assert sampler.draws == 2
    assert sampler.turns == [("a", True, True), ("b", True, False), ("a", False, True), ("b", False, False)]


def test_missing_conversation_id_falls_back_to_trace() -> None:
    sampler = AlternatingSampler()
    stage = SamplingStage(sampler)
    stage.decide(Turn("trace-1", "", "q", "a"))
    assert stage.cached("trace-1") is not None


def test_bounded_cache_evicts_least_recent_and_counts() -> None:
    telemetry = RecordingTelemetry()
    sampler = AlternatingSampler()
    stage = SamplingStage(sampler, max_conversations=2, telemetry=telemetry)
    stage.decide(_turn("a"))
    stage.decide(_turn("b"))
    stage.decide(_turn("a"))  # a is now the most recent
    stage.decide(_turn("c"))  # evicts b
    assert len(stage) == 2 and stage.cached("b") is None and stage.cached("a") is not None
    assert stage.evicted == telemetry.evicted == 1
    stage.decide(_turn("b"))  # decided afresh
    assert sampler.draws == 4


def test_forget_is_not_an_eviction() -> None:
    telemetry = RecordingTelemetry()
    stage = SamplingStage(AlternatingSampler(), telemetry=telemetry)
    stage.decide(_turn("a"))
    stage.forget("a")
    stage.forget("never-seen")
    assert len(stage) == 0 and telemetry.evicted == 0


def test_usage_is_forwarded() -> None:
    sampler = AlternatingSampler()
    stage = SamplingStage(sampler)
    stage.observe_usage("a", "groundedness", 321)
    assert sampler.usage == [("a", "groundedness", 321)]


def test_decisions_are_counted_once_per_conversation() -> None:
    telemetry = RecordingTelemetry()
    sampler = PolicySampler(ProbabilisticPolicy("p", 1.0), "s", telemetry)
    stage = SamplingStage(sampler)
    for trace in ("t1", "t2", "t3"):
        stage.decide(_turn("a", trace))
    assert telemetry.decisions == [("p", "sampled")]


def test_rejects_zero_capacity() -> None:
    with pytest.raises(ValueError):
        SamplingStage(AlternatingSampler(), max_conversations=0)
