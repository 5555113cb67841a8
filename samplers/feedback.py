"""Feedback from later stages to adaptive policies.

``judge_budget`` must learn what a sampled conversation costs: tokens per judged turn (per metric,
from the judge's usage) and turns per conversation (from the turns the stage sees). Policies that
need it implement :class:`UsageFeedback`; composites and :class:`samplers.base.PolicySampler`
forward it to every child that does, and :class:`samplers.stage.SamplingStage` feeds it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["UsageFeedback", "forward_turn", "forward_usage"]


@runtime_checkable
class UsageFeedback(Protocol):
    """Receives what sampled conversations turned out to cost. Calls must not block."""

    def observe_turn(self, conversation_id: str, *, first: bool, sampled: bool) -> None:
        """A turn arrived: ``first`` for the conversation's first turn (or first after its
        decision was evicted), ``sampled`` when the conversation is being evaluated."""
        ...

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        """The judge spent ``tokens`` (prompt + completion) on ``metric`` for one turn."""
        ...


_KNOWN: dict[type, bool] = {}
_MAX_KNOWN = 256


def _takes_feedback(kind: type) -> bool:
    # A runtime Protocol isinstance check walks the protocol's members on every call (it was 5 %
    # of the serving process's samples, once per turn per policy); the answer depends on the
    # class only, and policy classes are few.
    known = _KNOWN.get(kind)
    if known is None:
        if len(_KNOWN) >= _MAX_KNOWN:
            _KNOWN.clear()
        known = _KNOWN[kind] = issubclass(kind, UsageFeedback)
    return known


def forward_turn(target: object, conversation_id: str, *, first: bool, sampled: bool) -> None:
    """Call ``observe_turn`` on ``target`` when it takes feedback."""
    if _takes_feedback(type(target)):
        target.observe_turn(conversation_id, first=first, sampled=sampled)  # type: ignore[attr-defined]


def forward_usage(target: object, conversation_id: str, metric: str, tokens: int) -> None:
    """Call ``observe_usage`` on ``target`` when it takes feedback."""
    if _takes_feedback(type(target)):
        target.observe_usage(conversation_id, metric, tokens)  # type: ignore[attr-defined]
