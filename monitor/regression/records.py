"""The one input of the regression engine: an evaluated verdict with its sampling weight.

The engine never sees turns or scores: the plumbing turns each ``EvaluationResult`` score into one
``Observation`` (one per metric), so the statistics stay pure and testable on an injected clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

__all__ = ["Observation"]

_NO_LABELS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Observation:
    """One metric's verdict on one sampled turn.

    ``weight`` is the Horvitz–Thompson weight (1/inclusion probability, times any
    post-stratification factor) known when the turn was evaluated; ``defect`` is None when the
    metric gave no verdict, ``score`` is normalised to [0, 1] with higher meaning better.
    """

    at: float
    service: str
    metric: str
    version: str
    weight: float = 1.0
    defect: bool | None = None
    score: float | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)

    def __post_init__(self) -> None:
        if not math.isfinite(self.at):
            raise ValueError(f"Observation.at must be finite, got {self.at!r}")
        # Sampler weights are >= 1; anything positive is accepted so a rounding in a
        # post-stratification factor cannot drop a verdict.
        if not (math.isfinite(self.weight) and self.weight > 0.0):
            raise ValueError(f"Observation.weight must be finite and > 0, got {self.weight!r}")
        if self.score is not None and not (0.0 <= self.score <= 1.0):
            raise ValueError(f"Observation.score must lie in [0, 1], got {self.score!r}")
