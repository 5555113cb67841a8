"""The ``regressions`` section: release comparisons and the time-based change detector.

Example (YAML)::

    regressions:
      alpha: 0.05            # error level of the anytime-valid intervals
      margin: 0.0            # a release regressed when the lower bound of its difference exceeds this
      driver_labels: [route, model]

The app's version itself comes from ``assembly.mapping.version`` (``service.version`` by default).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from exporters.config import FORBIDDEN_LABELS, VERSION_LABEL

__all__ = ["RegressionsConfig", "DetectorConfig", "RUNBOOKS"]

RUNBOOKS = "https://github.com/rag-monitor/rag-monitor/blob/main/helm/rag-monitor/docs/runbooks.md"
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class DetectorConfig(BaseModel):
    """The time-based change detector (an e-detector per metric and statistic): how it steps, what
    it compares with and when it alarms. Its false-alarm rate is set by ``alarm_level``: on
    unchanged traffic the mean number of steps to a false alarm is at least that many."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_seconds: float = Field(300.0, gt=0, le=3600, description="one e-value per step that had evaluations")
    alarm_level: float = Field(10_000.0, gt=1, le=1e12, description="the detector alarms when its e-value reaches "
                                                                    "this (exported as log10)")
    reference_seconds: float = Field(604_800.0, gt=0, le=30 * 86_400,
                                     description="window the baseline level is estimated from")
    min_reference_evaluations: int = Field(100, ge=1, le=1_000_000,
                                           description="the detector does not arm before its reference holds these")
    rebaseline_seconds: float = Field(21_600.0, gt=0, le=30 * 86_400,
                                      description="how often the baseline level is re-estimated while quiet")
    hold_seconds: float = Field(7200.0, gt=0, le=7 * 86_400,
                                description="an alarm stays active this long before its new level becomes the "
                                            "baseline")


class RegressionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="compare releases and watch for regressions")
    alpha: float = Field(0.05, gt=0, le=0.2, description="error level of the anytime-valid confidence sequences "
                                                          "(valid however often they are looked at)")
    margin: float = Field(0.0, ge=0, lt=1, description="a release has regressed when the lower bound of its "
                                                       "defect-rate difference exceeds this")
    min_evaluations: int = Field(20, ge=1, le=100_000,
                                 description="evaluations each version needs before its interval is reported")
    canary_grace_seconds: float = Field(
        900.0, gt=0, le=86_400, description="the previous version still answering this long after the new one "
                                            "started makes the new one a canary (compared on the same minutes)")
    reactivation_gap_seconds: float = Field(
        1800.0, gt=0, le=7 * 86_400, description="a version silent this long, then seen again, is a rollback: "
                                                 "the candidate again")
    release_bucket_seconds: float = Field(
        300.0, gt=0, le=3600, description="time step of the comparisons: a canary is compared on the steps both "
                                          "versions answered, a deploy on the previous version's steps before "
                                          "the new one's first")
    driver_labels: list[str] = Field(
        default_factory=lambda: ["route", "model"], max_length=3,
        description="turn labels searched for the values that carry a change (the version is always searched)")
    detector: DetectorConfig = DetectorConfig()
    refresh_seconds: float = Field(5.0, gt=0, le=300, description="how often new evaluations are read (from the "
                                                                   "result store when there is one)")
    settle_seconds: float = Field(
        10.0, ge=0, le=600, description="evaluations are compared once this old, in time order: replicas write to the "
                                        "fleet's store with a delay, and a fixed order gives every replica the same "
                                        "figures (longer than the store's write delay)")
    history_hours: float = Field(
        72.0, gt=0, le=168, description="evaluations read back from the result store at start: as far back as the "
                                        "comparisons remember (3 days of steps), so a replica started now compares "
                                        "like one that ran through the release")
    max_pending: int = Field(
        100_000, gt=0, description="evaluations held until the next refresh (without a result store: past it the "
                                   "oldest are dropped and counted) or until they are settle_seconds old (past it "
                                   "the oldest are compared at once)")
    runbook_base_url: str = Field(RUNBOOKS, description="the runbooks page; /api/regressions links "
                                                         "<url>#<alert name in lower case>")

    @field_validator("driver_labels")
    @classmethod
    def _labels_ok(cls, names: list[str]) -> list[str]:
        for name in names:
            if not _LABEL_NAME.match(name):
                raise ValueError(f"{name!r} is not a label name")
            if name in FORBIDDEN_LABELS or name == VERSION_LABEL:
                raise ValueError(f"{name!r} cannot be a driver label (reserved, an id or text field, or the version)")
        if len(set(names)) != len(names):
            raise ValueError("labels are listed twice")
        return names

    @field_validator("runbook_base_url")
    @classmethod
    def _url_ok(cls, url: str) -> str:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"{url!r} is not an http(s) URL")
        return url
