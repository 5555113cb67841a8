"""The review queue's draw: which judged (turn, metric) pairs are offered to people, and with
what inclusion probability.

A judged pair belongs to the stratum of its metric and of the judge's verdict (``defect`` or
``pass``). It is drawn when a uniform number derived from its trace id and metric falls below the
stratum's probability (``review`` config): Poisson sampling within each stratum. The number is a
hash, not a random draw, so every replica of a fleet, a restarted process and the verdict join
(helper code in ``monitor.feedback``) all agree on which pairs are in the queue without sharing
any state, and the queue is the same however often it is listed.

A person's verdict on a drawn pair stands for ``1 / p`` judged pairs of its stratum; a verdict on
a pair the design would not draw (sent by an app over OTLP, say) has no known probability and
:func:`inclusion_probability` returns None for it. The turn's own sampling weight (1/p of the
sampler) is separate and multiplies this one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol, Sequence

from monitor.feedback.review_config import STRATA, ReviewConfig

__all__ = ["ReviewDesign", "ReviewKey", "ReviewedPairs", "draw_number", "inclusion_probability", "STRATA"]

ReviewKey = tuple[str, str]
"""``(trace id, metric)``: what a person's verdict is about."""

_SCALE = float(1 << 64)


def draw_number(trace_id: str, metric: str) -> float:
    """A number in [0, 1) fixed by the pair: the first 8 bytes of SHA-256 over both. Uniform
    enough across trace ids (random 128-bit ids in practice) for the inclusion probability to be
    the stratum's."""
    digest = hashlib.sha256(f"{trace_id}\x00{metric}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


@dataclass(frozen=True, slots=True)
class ReviewDesign:
    """The stratified draw of a ``review`` config: pure, shared by the queue and the join."""

    config: ReviewConfig

    def probability(self, metric: str, verdict: str) -> float:
        """The stratum's inclusion probability (``verdict``: the judge's, ``defect`` | ``pass``)."""
        return self.config.probability(metric, verdict)

    def drawn(self, trace_id: str, metric: str, verdict: str) -> bool:
        """Whether the judged pair is in the queue."""
        p = self.probability(metric, verdict)
        return p > 0.0 and draw_number(trace_id, metric) < p

    def inclusion_probability(self, trace_id: str, metric: str, judge_verdict: str | None) -> float | None:
        """The probability with which the pair entered the queue, for weighting a person's verdict
        on it (weight ``1 / p``); None when the pair is not one the queue draws: no judge verdict
        known (yet), a verdict outside ``defect``/``pass``, or a pair outside the sample."""
        if judge_verdict not in STRATA:
            return None
        if not self.drawn(trace_id, metric, judge_verdict):
            return None
        return self.probability(metric, judge_verdict)


def inclusion_probability(design: ReviewDesign, trace_id: str, metric: str,
                          judge_verdict: str | None) -> float | None:
    """:meth:`ReviewDesign.inclusion_probability` as a function (the verdict join's entry)."""
    return design.inclusion_probability(trace_id, metric, judge_verdict)


class ReviewedPairs(Protocol):
    """The verdict store's answer to "which of these pairs has a person already judged?"
    (implemented over the human verdicts table; the fleet's shared store when configured)."""

    async def reviewed(self, keys: Sequence[ReviewKey]) -> set[ReviewKey]: ...
