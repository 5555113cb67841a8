"""A metric's defect rule as a function of its value, and the threshold that best matches people.

The rule is the one :func:`monitor.evaluation.catalogue.defect_rule` states in words: severity
metrics are defects at or above their level; other metrics with a threshold are defects below it
(or, when higher is worse, at or above it); metrics without one are defects at the bad end of
their scale. Calibration needs it as a function, to turn a person's *value* into a verdict and to
try other thresholds on the judge's values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from monitor.calibration.agreement import Estimate, agreement
from monitor.evaluation.catalogue import direction_of
from monitor.evaluation.registry import MetricOptions, MetricSpec

__all__ = ["DefectRule", "defect_rule_of", "BestThreshold", "best_threshold"]


@dataclass(frozen=True, slots=True)
class DefectRule:
    scale: tuple[float, float]
    higher_is_worse: bool
    threshold: float | None
    """The threshold or severity level; None: only the bad end of the scale is a defect."""

    def is_defect(self, value: float) -> bool:
        low, high = self.scale
        if self.threshold is None:
            return value >= high if self.higher_is_worse else value <= low
        return value >= self.threshold if self.higher_is_worse else value < self.threshold

    def verdict(self, value: float) -> str:
        return "defect" if self.is_defect(value) else "pass"

    def describe(self) -> str:
        if self.threshold is None:
            end = self.scale[1] if self.higher_is_worse else self.scale[0]
            return f"defect when {end:g}"
        return f"defect when {'≥' if self.higher_is_worse else '<'} {self.threshold:g}"


def defect_rule_of(spec: MetricSpec, options: MetricOptions) -> DefectRule:
    """The configured rule of a metric (its resolved threshold or severity level)."""
    scale = (float(spec.scale[0]), float(spec.scale[1]))
    if spec.uses_severity_level and options.severity_level is not None:
        return DefectRule(scale, True, float(options.severity_level))
    return DefectRule(scale, direction_of(spec) == "higher_is_worse",
                      None if options.threshold is None else float(options.threshold))


@dataclass(frozen=True, slots=True)
class BestThreshold:
    """The threshold under which the judge's values agree most with the people's verdicts."""

    threshold: float
    agreement: Estimate
    current: float
    current_agreement: Estimate


def _candidates(rule: DefectRule, judge_values: Sequence[float]) -> list[float]:
    low, high = rule.scale
    # A threshold changes verdicts only where the judge has values: cutting at each value it gave
    # (and at both ends of the scale) covers every split a configurable threshold can make.
    points = {v for v in judge_values if low <= v <= high} | {low, high}
    return sorted(points | ({rule.threshold} if rule.threshold is not None else set()))


def best_threshold(rule: DefectRule, judge_values: Sequence[float],
                   human_verdicts: Sequence[str]) -> BestThreshold | None:
    """The threshold that maximises agreement of ``rule`` (with that threshold) applied to
    ``judge_values`` with ``human_verdicts``; ties go to the one nearest the current threshold
    (a change needs a reason). None for a metric without a threshold, or without rows."""
    if rule.threshold is None or not judge_values:
        return None
    current = rule.threshold

    def score(threshold: float) -> Estimate:
        trial = replace(rule, threshold=threshold)
        return agreement([(trial.verdict(v), h) for v, h in zip(judge_values, human_verdicts, strict=True)])

    scored = [(score(t), t) for t in _candidates(rule, judge_values)]
    best, threshold = max(scored, key=lambda item: (item[0].value, -abs(item[1] - current)))
    return BestThreshold(threshold, best, current, score(current))
