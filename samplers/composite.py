"""``composite``: combine child policies with ``first_match`` (any child) or ``all_of``.

All random children threshold the same uniform ``u`` (see :mod:`samplers.base`), so:

* ``first_match`` keeps the conversation when any child selects it: ``u < max(p_i)``, inclusion
  probability ``max(p_i)``. The first selecting child in order is credited (its name labels the
  decision) and is the only one whose hard cap is spent; if its cap sheds, the next selecting
  child is tried.
* ``all_of`` keeps it when every child selects it: ``u < min(p_i)``, probability ``min(p_i)``.
  Hard caps are checked on all children before any is spent, so a refusal wastes nothing.

With independent uniforms per child the probabilities would be ``1 - prod(1 - p_i)`` and
``prod(p_i)`` instead; we do not use them because nested composites mixing shared and
independent draws have no closed form, and because ``all_of(probabilistic 10%, rate_limit)``
should mean "10%, capped" — the rate limiter's adaptive ``p`` is computed over all the traffic
it sees, which is only right when the two draws are nested.
"""

from __future__ import annotations

from typing import Literal, Sequence

from monitor.model import Turn

from samplers.base import Plan, Policy, Signals
from samplers.feedback import forward_turn, forward_usage

__all__ = ["CompositeMode", "CompositePolicy"]

CompositeMode = Literal["first_match", "all_of"]


class CompositePolicy:
    """A node combining ``children`` (at least one) by ``mode``."""

    def __init__(self, name: str, mode: CompositeMode, children: Sequence[Policy]) -> None:
        if not children:
            raise ValueError(f"composite {name!r} needs at least one child policy")
        if mode not in ("first_match", "all_of"):
            raise ValueError(f"unknown composite mode {mode!r}")
        self.name = name
        self.mode: CompositeMode = mode
        self._children = tuple(children)

    @property
    def children(self) -> tuple[Policy, ...]:
        """The child policies, in order."""
        return self._children

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Plan every child (adaptive ones see all traffic); combine by max or min."""
        plans = tuple(child.plan(turn, signals) for child in self._children)
        combine = max if self.mode == "first_match" else min
        probability = combine(p.probability for p in plans)
        # The first child at the combined probability decides the cell. first_match: what it selects
        # is kept whenever it is uncapped. all_of: any child's cap can shed.
        decider = next(p for p in plans if p.probability == probability)
        capped = decider.capped if self.mode == "first_match" else any(p.capped for p in plans)
        return Plan(self.name, probability, plans, capped=capped, cell=decider.cell_name())

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """``first_match``: None if some selecting child has room; else the first refusal.
        ``all_of``: the first child that would refuse."""
        first_refusal: str | None = None
        for child, child_plan in zip(self._children, plan.children):
            if self.mode == "first_match" and not child_plan.selects(u):
                continue
            refusal = child.shedder(child_plan, turn, u)
            if refusal is None and self.mode == "first_match":
                return None
            if refusal is not None and self.mode == "all_of":
                return refusal
            first_refusal = first_refusal or refusal
        return first_refusal if self.mode == "first_match" else None

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Spend the credited child's capacity (``first_match``) or every child's (``all_of``)."""
        pairs = zip(self._children, plan.children)
        if self.mode == "all_of":
            for child, child_plan in pairs:
                child.admit(child_plan, turn, u)
            return self.name
        for child, child_plan in pairs:
            if child_plan.selects(u) and child.shedder(child_plan, turn, u) is None:
                return child.admit(child_plan, turn, u)
        raise RuntimeError("admit() called for a conversation no child can take")

    def observe_turn(self, conversation_id: str, *, first: bool, sampled: bool) -> None:
        """Forward to children that take feedback."""
        for child in self._children:
            forward_turn(child, conversation_id, first=first, sampled=sampled)

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        """Forward to children that take feedback."""
        for child in self._children:
            forward_usage(child, conversation_id, metric, tokens)
