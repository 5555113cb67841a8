"""``judge_budget``: spend at most ``tokens_per_minute`` judge tokens, spread over the traffic.

Two mechanisms, on purpose:

1. **Adaptive probability.** Every ``adjust_seconds`` the policy recomputes

       p = min(1, target_utilisation * budget / (arrivals_per_minute * expected_cost))
       expected_cost = tokens_per_judged_turn * turns_per_conversation

   from smoothed past traffic. ``tokens_per_judged_turn`` is the sum over metrics of the tokens
   the judge reported (:meth:`observe_usage`) per sampled turn; ``turns_per_conversation`` is
   the smoothed length of conversations that went idle (:meth:`observe_turn`,
   :class:`samplers.adaptive.LengthTracker`). Until feedback arrives the configured priors
   are used. ``p`` never depends on the conversation being decided, so the weight ``1/p``
   is an honest inclusion probability.

2. **Hard cap.** Each admitted conversation reserves its ``expected_cost`` at admission time in
   a sliding 60-second ledger; an admission that would take the ledger past the budget is shed
   (outcome ``shed``). Hence the *reserved* tokens never exceed the budget in any 60-second
   window. The reservation is a forecast: a conversation that runs longer than expected spends
   more, later. The forecasts are corrected by feedback, so spend follows the budget on
   average; the judge client's own token limit is the backstop for actual spend.

Shed conversations were drawn with ``p`` but not evaluated, so the estimate is biased while
shedding lasts; they are counted separately so that this is visible.

With several replicas and no fleet, each gets ``tokens_per_minute / replicas`` (``replicas`` in the
config). In a fleet (``fleet.redis_url``) the budget is the fleet's: the probability is computed
from the fleet's arrivals, the hard cap is this replica's share of the budget (1 / the fleet's
size), and ``replicas`` is ignored (deprecated).
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from monitor.model import Turn

from samplers.adaptive import EwmaCounter, Intervals, LengthTracker, SharedTraffic
from samplers.base import Clock, Plan, Signals

__all__ = ["BUDGET_WINDOW_SECONDS", "JudgeBudgetPolicy"]

BUDGET_WINDOW_SECONDS = 60.0
_PRIOR = "_prior"


class JudgeBudgetPolicy:
    """Adaptive probability under a judge-token budget, with a sliding-window hard cap."""

    def __init__(
        self,
        name: str,
        clock: Clock,
        *,
        tokens_per_minute: float,
        initial_tokens_per_turn: float,
        initial_turns_per_conversation: float,
        target_utilisation: float = 0.9,
        adjust_seconds: float = 10.0,
        smoothing: float = 0.5,
        learning_seconds: float = 300.0,
        conversation_idle_seconds: float = 300.0,
        max_tracked_conversations: int = 10_000,
        on_change: Callable[[float], None] | None = None,
        shared: SharedTraffic | None = None,
    ) -> None:
        if tokens_per_minute <= 0:
            raise ValueError("tokens_per_minute must be positive")
        self.name = name
        self._clock = clock
        self._fleet_budget = tokens_per_minute
        self._budget = tokens_per_minute
        self._target = target_utilisation
        self._on_change = on_change
        self._shared = shared
        self._intervals = Intervals(clock, adjust_seconds, aligned=shared is not None)
        self._arrivals = EwmaCounter(smoothing)
        # Costs and lengths change slowly and are noisy per interval (few judged turns, few
        # finished conversations), so they are smoothed over ``learning_seconds``; arrivals
        # use ``smoothing`` to follow bursts. Ratios are pairs of counters closed together;
        # the priors act as one pseudo-observation and fade as real traffic is folded in.
        learn = min(1.0, adjust_seconds / learning_seconds)
        self._lengths = LengthTracker(
            clock,
            idle_seconds=conversation_idle_seconds,
            max_tracked=max_tracked_conversations,
            smoothing=learn,
            initial=initial_turns_per_conversation,
        )
        self._judged_turns = EwmaCounter(learn, initial=1.0)
        self._tokens: dict[str, EwmaCounter] = {
            _PRIOR: EwmaCounter(learn, initial=initial_tokens_per_turn)
        }
        self._learn = learn
        self._ledger: deque[tuple[float, float]] = deque()
        self._reserved = 0.0
        self.probability = 1.0

    # -- estimates -------------------------------------------------------------------------

    def cost_per_turn(self) -> dict[str, float]:
        """Learned judge tokens per sampled turn, by metric (``_prior`` while it lasts)."""
        judged = self._judged_turns.value or 0.0
        if judged <= 0.0:
            return {}
        return {m: (c.value or 0.0) / judged for m, c in self._tokens.items()}

    def turns_per_conversation(self) -> float:
        """Learned mean number of turns per conversation (at least 1)."""
        return self._lengths.mean()

    def expected_cost(self) -> float:
        """Tokens a newly admitted conversation is expected to cost."""
        return sum(self.cost_per_turn().values()) * self.turns_per_conversation()

    def reserved(self) -> float:
        """Tokens reserved in the last 60 seconds."""
        self._expire()
        return self._reserved

    # -- Policy ----------------------------------------------------------------------------

    def plan(self, turn: Turn, signals: Signals) -> Plan:
        """Record the arrival; return the probability fixed at the last adjustment."""
        self._adjust()
        self._arrivals.add()
        return Plan(self.name, self.probability, capped=True)

    def shedder(self, plan: Plan, turn: Turn, u: float) -> str | None:
        """This policy when reserving the expected cost would overflow the window (in a fleet: this
        replica's share of the fleet's budget; the judge client's fleet-wide limiter is exact)."""
        if self._shared is not None:
            self._budget = self._fleet_budget * self._shared.share()
        if self.reserved() + self.expected_cost() > self._budget * (1.0 + 1e-12):
            return self.name
        return None

    def admit(self, plan: Plan, turn: Turn, u: float) -> str:
        """Reserve the expected cost now."""
        cost = self.expected_cost()
        self._expire()
        self._ledger.append((self._clock(), cost))
        self._reserved += cost
        return self.name

    # -- UsageFeedback ---------------------------------------------------------------------

    def observe_turn(self, conversation_id: str, *, first: bool, sampled: bool) -> None:
        """Count turns per conversation (all traffic) and judged turns (sampled ones)."""
        self._adjust()
        self._lengths.observe(conversation_id)
        if sampled:
            self._judged_turns.add()

    def observe_usage(self, conversation_id: str, metric: str, tokens: int) -> None:
        """Add judge tokens spent on ``metric``."""
        self._adjust()
        counter = self._tokens.get(metric)
        if counter is None:
            counter = self._tokens[metric] = EwmaCounter(self._learn)
        counter.add(max(0, tokens))

    # -- internals -------------------------------------------------------------------------

    def _expire(self) -> None:
        horizon = self._clock() - BUDGET_WINDOW_SECONDS
        while self._ledger and self._ledger[0][0] <= horizon:
            self._reserved -= self._ledger.popleft()[1]
        if not self._ledger:
            self._reserved = 0.0  # drop accumulated float error whenever the ledger empties

    def _adjust(self) -> None:
        closed = self._intervals.closed()
        if not closed:
            return
        self._lengths.close(closed)
        for counter in (self._arrivals, self._judged_turns):
            counter.close(closed)
        for counter in self._tokens.values():
            counter.close(closed)
        per_minute = (self._arrivals.value or 0.0) * BUDGET_WINDOW_SECONDS / self._intervals.seconds
        if self._shared is not None:
            fleet = self._shared.arrival_rate(self.name, self._intervals.seconds)
            if fleet is not None:
                per_minute = fleet * BUDGET_WINDOW_SECONDS
        demand = per_minute * self.expected_cost()
        wanted = self._target * self._fleet_budget
        self.probability = 1.0 if demand <= wanted else wanted / demand
        if self._on_change is not None:
            self._on_change(self.probability)
