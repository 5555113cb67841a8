"""Building blocks of the adaptive policies: interval clocks, smoothed counters, token buckets.

Adaptive probabilities change only at interval boundaries and are computed from traffic that
has already arrived, never from the conversation being decided. That is what keeps the
Horvitz–Thompson weight honest: conditionally on the past, a conversation is kept with exactly
the probability reported for it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Protocol

from samplers.base import Clock

__all__ = ["Intervals", "EwmaCounter", "TokenBucket", "ThinnedLimiter", "LengthTracker", "SharedTraffic"]


class SharedTraffic(Protocol):
    """What a fleet tells an adaptive policy (``monitor.fleet.traffic``): the fleet's arrivals and
    this replica's share of a fleet-wide cap. Calls are cheap reads of figures synced in the
    background; None means "not known yet", and the policy uses its own counts."""

    def arrival_rate(self, node: str, horizon_seconds: float) -> float | None:
        """Conversations per second the whole fleet saw at ``node`` over the last ``horizon_seconds``."""
        ...

    def share(self) -> float:
        """This replica's share of a fleet-wide cap: 1 / the fleet's size (last known while Redis is away)."""
        ...

# Float refills accumulate rounding error; a bucket that is short by 1e-9 of a token is full.
_EPSILON = 1e-9


class Intervals:
    """Fixed-length intervals on an injected clock; reports how many closed since last asked."""

    def __init__(self, clock: Clock, seconds: float, *, aligned: bool = False) -> None:
        if seconds <= 0:
            raise ValueError("interval seconds must be positive")
        self._clock = clock
        self._seconds = seconds
        now = clock()
        # Aligned to multiples of ``seconds`` on a wall clock, every replica of a fleet closes its
        # intervals together and computes its probability from the same fleet figures.
        self._start = now - now % seconds if aligned else now

    @property
    def seconds(self) -> float:
        """Interval length."""
        return self._seconds

    def closed(self) -> int:
        """Number of intervals that ended since the previous call (0 most of the time)."""
        elapsed = self._clock() - self._start
        count = int(elapsed // self._seconds) if elapsed > 0 else 0
        self._start += count * self._seconds
        return count


class EwmaCounter:
    """Amount per interval, exponentially smoothed over closed intervals.

    Empty intervals decay the value geometrically, so the *ratio* of two counters closed
    together is unaffected by idle time (used for cost-per-turn and turns-per-conversation).
    """

    def __init__(self, smoothing: float, initial: float | None = None) -> None:
        if not 0.0 < smoothing <= 1.0:
            raise ValueError("smoothing must be in (0, 1]")
        self._alpha = smoothing
        self.value = initial
        self.pending = 0.0

    def add(self, amount: float = 1.0) -> None:
        """Count ``amount`` in the current interval."""
        self.pending += amount

    def close(self, intervals: int) -> None:
        """Fold the current interval in, then ``intervals - 1`` empty ones."""
        if intervals <= 0:
            return
        fresh, self.pending = self.pending, 0.0
        if self.value is None:
            self.value = fresh
        else:
            self.value = self._alpha * fresh + (1.0 - self._alpha) * self.value
        self.value *= (1.0 - self._alpha) ** (intervals - 1)


class TokenBucket:
    """Classic token bucket: ``rate`` tokens per second, at most ``burst`` stored.

    Over any interval of length T it grants at most ``burst + rate * T`` tokens.
    """

    def __init__(self, clock: Clock, rate: float, burst: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self._clock = clock
        self._rate = rate
        self._burst = burst
        self._tokens = burst
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        if now > self._last:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now

    def available(self) -> bool:
        """Whether a token can be taken now."""
        self._refill()
        return self._tokens >= 1.0 - _EPSILON

    def resize(self, rate: float, burst: float) -> None:
        """New refill rate and capacity from now on (tokens held are kept, up to the new capacity)."""
        self._refill()
        self._rate = rate
        self._burst = burst
        self._tokens = min(self._tokens, burst)

    def take(self) -> None:
        """Take one token (callers check :meth:`available` first)."""
        self._refill()
        self._tokens -= 1.0


class ThinnedLimiter:
    """At most ``rate`` admissions per second, spread evenly over the traffic.

    A bare token bucket keeps the first conversations of every burst and drops the rest, so
    the kept set over-represents burst starts and has no known inclusion probability. Here an
    adaptive probability ``p = target_utilisation * rate / arrival_rate`` thins the traffic
    first (``arrival_rate`` smoothed over past intervals), and the bucket is only the hard cap
    that catches what the estimate missed; those are counted as ``shed``.
    """

    def __init__(
        self,
        clock: Clock,
        rate: float,
        burst: float,
        *,
        target_utilisation: float,
        adjust_seconds: float,
        smoothing: float,
        on_change: Callable[[float], None] | None = None,
        shared: SharedTraffic | None = None,
        node: str = "",
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._target = target_utilisation
        self._bucket = TokenBucket(clock, rate, burst)
        self._intervals = Intervals(clock, adjust_seconds, aligned=shared is not None)
        self._arrivals = EwmaCounter(smoothing)
        self._on_change = on_change
        self._shared = shared
        self._node = node
        self._share = 1.0
        # No traffic seen yet: keep everything and let the bucket cap the first interval.
        self.probability = 1.0

    def arrive(self) -> float:
        """Record one arriving conversation; return the probability it is drawn with."""
        self._adjust()
        self._arrivals.add()
        return self.probability

    def available(self) -> bool:
        """Whether the hard cap has room for one more conversation now."""
        self._follow_share()
        return self._bucket.available()

    def take(self) -> None:
        """Spend one admission."""
        self._bucket.take()

    def _follow_share(self) -> None:
        # In a fleet the cap is the fleet's: this replica's bucket refills at its share of it.
        if self._shared is None:
            return
        share = self._shared.share()
        if share != self._share:
            self._share = share
            self._bucket.resize(self._rate * share, max(1.0, self._burst * share))

    def _adjust(self) -> None:
        closed = self._intervals.closed()
        if not closed:
            return
        self._arrivals.close(closed)
        per_second = (self._arrivals.value or 0.0) / self._intervals.seconds
        if self._shared is not None:
            fleet = self._shared.arrival_rate(self._node, self._intervals.seconds)
            if fleet is not None:
                per_second = fleet
        wanted = self._target * self._rate
        self.probability = 1.0 if per_second <= wanted else wanted / per_second
        if self._on_change is not None:
            self._on_change(self.probability)


class LengthTracker:
    """Learns turns per conversation from conversations that went idle.

    Counting turns and new conversations per interval would be simpler, but their ratio swings
    wildly whenever traffic rises or falls (ongoing conversations keep producing turns while
    few new ones start), and the budget would swing with it. So turns are counted per
    conversation in a bounded LRU, and a conversation's length is folded into the estimate once
    it has been idle ``idle_seconds`` (or is evicted by the bound, then it counts as truncated).
    """

    def __init__(
        self,
        clock: Clock,
        *,
        idle_seconds: float,
        max_tracked: int,
        smoothing: float,
        initial: float,
    ) -> None:
        self._clock = clock
        self._idle = idle_seconds
        self._max = max_tracked
        self._active: OrderedDict[str, tuple[int, float]] = OrderedDict()
        # Prior: one pseudo-conversation of ``initial`` turns, fading as real ones finish.
        self.turns = EwmaCounter(smoothing, initial=initial)
        self.conversations = EwmaCounter(smoothing, initial=1.0)
        self.truncated = 0

    def observe(self, conversation_id: str) -> None:
        """One turn of ``conversation_id`` now."""
        count, _ = self._active.pop(conversation_id, (0, 0.0))
        self._active[conversation_id] = (count + 1, self._clock())
        self.sweep()
        if len(self._active) > self._max:
            self._finish(*self._active.popitem(last=False))
            self.truncated += 1

    def sweep(self) -> None:
        """Fold in every conversation idle for ``idle_seconds``."""
        horizon = self._clock() - self._idle
        while self._active:
            conversation_id, (count, last) = next(iter(self._active.items()))
            if last > horizon:
                break
            self._finish(conversation_id, (count, last))
            del self._active[conversation_id]

    def close(self, intervals: int) -> None:
        """Close the smoothing interval(s) of both counters together."""
        self.sweep()
        self.turns.close(intervals)
        self.conversations.close(intervals)

    def mean(self) -> float:
        """Mean turns per finished conversation (at least 1)."""
        conversations = self.conversations.value or 0.0
        if conversations <= 0.0:
            return 1.0
        return max(1.0, (self.turns.value or 0.0) / conversations)

    def _finish(self, conversation_id: str, entry: tuple[int, float]) -> None:
        self.turns.add(entry[0])
        self.conversations.add()
