"""The policy tree every sampler is built from, and the root that turns it into a decision.

Every random policy thresholds the **same** uniform number per conversation:
``u = H(salt, conversation id)`` in [0, 1). A policy selects a conversation when
``u < p`` where ``p`` is the inclusion probability it computed *before* looking at ``u``
(from configuration, turn attributes and past traffic only). Two consequences:

* Policies are nested: whatever is selected at ``p`` is selected at every ``p' > p``, on every
  replica, in every process (``u`` comes from SHA-256, not Python's salted ``hash``).
* Composites stay exact: "any child selects" is ``u < max(p_i)`` and "all children select" is
  ``u < min(p_i)``, so the combined inclusion probability is a max/min of child probabilities
  at every depth of the tree, with no independence assumption to get wrong.

A decision is made in two steps so that hard caps (token buckets, token ledgers) only spend
capacity on conversations that are actually kept: :meth:`Policy.plan` computes the probability
(and records the arrival for adaptive policies); if ``u < p``, :meth:`Policy.shedder` asks,
without side effects, whether a hard cap would refuse, and :meth:`Policy.admit` commits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol

from monitor.model import SamplingDecision, Turn

from samplers.feedback import forward_turn, forward_usage
from samplers.telemetry import NullSamplingTelemetry, SamplingTelemetry

__all__ = [
    "Clock",
    "Signals",
    "NO_SIGNALS",
    "OUTCOMES",
    "Plan",
    "Policy",
    "SamplingResult",
    "PolicySampler",
    "OutcomeSampler",
    "conversation_key",
    "uniform",
]

Clock = Callable[[], float]
"""Monotonic seconds (``time.monotonic`` in production, a fake in tests)."""

Signals = Mapping[str, float]
"""Local-tier signal values computed before sampling (e.g. ``{"toxicity": 0.93}``)."""

NO_SIGNALS: Signals = {}

OUTCOMES = ("sampled", "not_sampled", "shed")
"""Values of the ``outcome`` telemetry label. ``shed``: selected by the draw, refused by a hard
cap; the conversation is not evaluated and the Horvitz–Thompson estimate is biased by it, which
is why it is counted on its own."""


def conversation_key(turn: Turn) -> str:
    """The id a decision is keyed by: the conversation id, else the trace id (one-turn chat)."""
    return turn.conversation_id or turn.trace_id


def uniform(salt: str, conversation_id: str) -> float:
    """Deterministic uniform number in [0, 1) for ``(salt, conversation_id)``.

    53 bits of SHA-256, so every float is exact and ``u < 1.0`` always holds.
    """
    digest = hashlib.sha256(f"{salt}\x00{conversation_id}".encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") >> 11) / float(1 << 53)


@dataclass(frozen=True, slots=True)
class Plan:
    """A policy's inclusion probability for one conversation, with its children's plans."""

    policy: str
    probability: float
    children: tuple["Plan", ...] = ()
    stratum: str | None = None
    """Stratum the conversation fell in (stratified policies), kept for ``admit``."""
    capped: bool = False
    """Whether a hard cap can shed a conversation this plan selects (rate limits, budgets)."""
    cell: str = ""
    """Post-stratification cell: the node whose probability decided (``policy[:stratum]``);
    empty means this node's own name (see :meth:`cell_name`)."""

    def selects(self, u: float) -> bool:
        """Whether the shared uniform selects this node."""
        return u < self.probability

    def cell_name(self) -> str:
        """The node that decides this plan's probability and caps, as ``policy[:stratum]``."""
        if self.cell:
            return self.cell
        return f"{self.policy}:{self.stratum}" if self.stratum else self.policy

    def nodes(self) -> list[str]:
        """Every node of the plan tree as ``policy[:stratum]`` (the arrivals each one saw)."""
        own = f"{self.policy}:{self.stratum}" if self.stratum else self.policy
        return [own, *(name for child in self.children for name in child.nodes())]


class Policy(Protocol):
    """One node of the policy tree."""

    @property
    def name(self) -> str:
        """Label value: in telemetry and in ``SamplingDecision.policy``."""
        ...

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Inclusion probability for this conversation; must not depend on its uniform.

        Adaptive policies record the arrival here, so every child of a composite sees all the
        traffic the composite sees.
        """
        ...

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """For a selected conversation: name of the policy whose hard cap would refuse it,
        or None. No side effects."""
        ...

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Commit capacity for a selected, not-shed conversation; return the policy credited."""
        ...


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """A decision plus its outcome (``sampled`` | ``not_sampled`` | ``shed``) and the plan it came from."""

    decision: SamplingDecision
    outcome: str
    plan: Plan | None = None


class OutcomeSampler(Protocol):
    """What the sampling stage asks of a policy tree: a decision and its outcome."""

    name: str

    def draw(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingResult:
        """Decide for the conversation ``turn`` opens."""
        ...

    def uniform(self, conversation_id: str) -> float:
        """The uniform number the draw of ``conversation_id`` thresholds."""
        ...


class PolicySampler:
    """The root of a policy tree: implements :class:`OutcomeSampler`.

    ``decide`` is meant to be called once per conversation (at its first turn); caching the
    decision for later turns is :class:`samplers.stage.SamplingStage`'s job.
    """

    def __init__(
        self,
        root: Policy,
        salt: str,
        telemetry: SamplingTelemetry | None = None,
    ) -> None:
        self.name = root.name
        self._root = root
        self._salt = salt
        self._telemetry = telemetry or NullSamplingTelemetry()

    def uniform(self, conversation_id: str) -> float:
        """The shared uniform of ``conversation_id`` (see :func:`uniform`)."""
        return uniform(self._salt, conversation_id)

    @property
    def root(self) -> Policy:
        """The policy tree (feedback is forwarded to it)."""
        return self._root

    def decide(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingDecision:
        """Decide for the conversation ``turn`` opens (see :meth:`draw`)."""
        return self.draw(turn, signals).decision

    def draw(self, turn: Turn, signals: Signals = NO_SIGNALS) -> SamplingResult:
        """Draw, apply hard caps, count, and return the decision with its outcome.

        The decision's probability is the one the draw used, for all three outcomes; the
        policy named is the credited child when sampled, the shedding cap when shed, and the
        root otherwise.
        """
        plan = self._root.plan(turn, signals)
        u = uniform(self._salt, conversation_key(turn))
        # Only a capped plan can shed, so only its weight may need post-stratifying (samplers.weighting).
        cell = plan.cell_name() if plan.capped else None
        if not plan.selects(u):
            result = SamplingResult(SamplingDecision(False, self.name, plan.probability, cell), "not_sampled", plan)
        else:
            shedder = self._root.shedder(plan, turn, u)
            if shedder is not None:
                result = SamplingResult(SamplingDecision(False, shedder, plan.probability, cell), "shed", plan)
            else:
                credited = self._root.admit(plan, turn, u)
                result = SamplingResult(SamplingDecision(True, credited, plan.probability, cell), "sampled", plan)
        self._telemetry.decision(result.decision.policy, result.outcome)
        return result

    def observe_turn(self, conversation_id: str, *, first: bool, sampled: bool) -> None:
        """Forward to the policy tree (see :class:`samplers.feedback.UsageFeedback`)."""
        forward_turn(self._root, conversation_id, first=first, sampled=sampled)

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        """Forward to the policy tree (see :class:`samplers.feedback.UsageFeedback`)."""
        forward_usage(self._root, conversation_id, metric, tokens)
