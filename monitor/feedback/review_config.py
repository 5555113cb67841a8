"""The ``review`` section: how the review queue draws judged turns for people to check.

Example (YAML)::

    review:
      probabilities: {defect: 0.5, pass: 0.05}     # chance a judged (turn, metric) enters the queue
      metric_probabilities:                          # per-metric overrides of either stratum
        groundedness: {defect: 1.0, pass: 0.1}
      max_items: 200                                 # at most this many items per /api/review answer
      lookback_hours: 24                             # judged turns older than this are not offered

Defects are rare and the ones people most want checked, passes are many: drawing both, at rates
that differ by stratum, keeps the queue short while both sides of the judge's verdict get
reviewed. Each item carries its inclusion probability, so the agreement computed from the
reviews is weighted back to all judged turns (Horvitz-Thompson: weight 1/p).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ReviewConfig", "StratumProbabilities", "STRATA"]

STRATA = ("defect", "pass")
_METRIC_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class StratumProbabilities(BaseModel):
    """Inclusion probability of a judged (turn, metric) in each stratum of the judge's verdict.
    0 leaves the stratum out of the queue; 1 offers every such turn."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    defect: float = Field(0.5, ge=0.0, le=1.0, description="for turns the judge called a defect")
    pass_: float = Field(0.05, ge=0.0, le=1.0, alias="pass", description="for turns the judge passed")

    def of(self, verdict: str) -> float:
        """The probability of the stratum ``verdict`` (``defect`` | ``pass``)."""
        if verdict == "defect":
            return self.defect
        if verdict == "pass":
            return self.pass_
        raise ValueError(f"not a judge verdict: {verdict!r}")


class ReviewConfig(BaseModel):
    """The review queue served at ``GET /api/review`` and on the status page's review view (shown
    when ``admin.review_token`` is set)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    probabilities: StratumProbabilities = Field(default_factory=StratumProbabilities,
                                                description="inclusion probability per judge verdict, every metric")
    metric_probabilities: dict[str, StratumProbabilities] = Field(
        default_factory=dict, description="per-metric inclusion probabilities (metric id -> {defect, pass})")
    max_items: int = Field(200, ge=1, le=1000, description="at most this many items per /api/review answer")
    lookback_hours: float = Field(24.0, gt=0, le=24 * 30,
                                  description="judged turns older than this are not offered for review")

    @field_validator("metric_probabilities")
    @classmethod
    def _metric_ids(cls, value: dict[str, StratumProbabilities]) -> dict[str, StratumProbabilities]:
        for metric in value:
            if not _METRIC_ID.match(metric):
                raise ValueError(f"review.metric_probabilities: {metric!r} is not a metric id")
        return value

    def probability(self, metric: str, verdict: str) -> float:
        """The inclusion probability of a judged (turn, ``metric``) whose judge verdict is
        ``verdict``."""
        return self.metric_probabilities.get(metric, self.probabilities).of(verdict)
