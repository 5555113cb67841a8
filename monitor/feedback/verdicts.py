"""A person's verdict on one judged turn, and the rule that puts a value on a side.

A verdict arrives over OTLP (``monitor.feedback.otlp``) or ``POST /api/feedback``
(``monitor.admin.feedback_api``); both build a :class:`HumanVerdict` with :func:`make_verdict`, which
validates every field and names the one that is wrong. Agreement with the judge is decided on the
*side* of the metric's defect rule (:class:`DefectRule`), so a person may send ``pass``/``defect``
or a value on the metric's own scale (``4`` on a 1–5 rubric), whichever their review tool has.

Reviewer ids are never kept: :func:`reviewer_hash` turns them into an opaque digest, enough to
recognise a repeated verdict from the same person (idempotency) and no more.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Literal, Mapping

from monitor.evaluation.catalogue import direction_of
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import MetricRegistry, default_registry

__all__ = ["HumanVerdict", "DefectRule", "VerdictError", "defect_rules", "make_verdict", "reviewer_hash",
           "SOURCES", "VERDICTS", "MAX_REVIEWER_CHARS"]

VERDICTS = ("pass", "defect")
SOURCES = ("otlp", "api")
MAX_REVIEWER_CHARS = 200
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_ZERO_TRACE = "0" * 32
# A fixed prefix keeps these digests apart from any other use of sha256 over the same ids.
_REVIEWER_DOMAIN = b"rag-monitor reviewer\x00"


class VerdictError(ValueError):
    """A verdict that cannot be taken; ``field`` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class HumanVerdict:
    """One person's verdict on one metric of one turn (the trace the judge scored)."""

    trace_id: str
    metric: str
    verdict: str | None  # "pass" | "defect"; None when only a value was given
    value: float | None
    reviewer: str  # reviewer_hash() of the id sent, never the id itself
    source: str  # "otlp" | "api"
    at: float  # unix seconds, when received


@dataclass(frozen=True, slots=True)
class DefectRule:
    """A metric's defect rule as numbers: ``value >= cut`` is a defect when higher is worse,
    ``value < cut`` (or ``<= low`` without a threshold) when higher is better."""

    metric: str
    scale: tuple[float, float]
    higher_is_worse: bool
    cut: float
    inclusive: bool  # higher-is-better only: the cut itself is a defect (no threshold: the scale's floor)
    tier: Literal["judge", "local"] = "judge"

    def is_defect(self, value: float) -> bool:
        if self.higher_is_worse:
            return value >= self.cut
        return value <= self.cut if self.inclusive else value < self.cut

    def side(self, verdict: str | None, value: float | None) -> str:
        """``pass`` or ``defect``: the verdict when given, else the value's side of the rule."""
        if verdict is not None:
            return verdict
        if value is None:
            raise VerdictError("verdict", "neither a verdict nor a value")
        return "defect" if self.is_defect(value) else "pass"


def defect_rules(config: EvaluationConfig, registry: MetricRegistry | None = None) -> dict[str, DefectRule]:
    """The configured metrics' defect rules (the same thresholds and levels the evaluators apply)."""
    registry = registry or default_registry()
    out: dict[str, DefectRule] = {}
    for metric, options in config.resolve_options(registry).items():
        spec = registry.get(metric)
        low, high = float(spec.scale[0]), float(spec.scale[1])
        worse = direction_of(spec) == "higher_is_worse"
        if spec.uses_severity_level and options.severity_level is not None:
            rule = DefectRule(metric, (low, high), True, float(options.severity_level), True, spec.tier)
        elif options.threshold is not None:
            rule = DefectRule(metric, (low, high), worse, float(options.threshold), False, spec.tier)
        else:
            rule = DefectRule(metric, (low, high), worse, high if worse else low, True, spec.tier)
        out[metric] = rule
    return out


def reviewer_hash(reviewer: str) -> str:
    """An opaque, stable digest of a reviewer id (20 hex characters).

    Pseudonymous, not anonymous: whoever knows an id can recompute its digest. It is stable across
    replicas and restarts on purpose, so a verdict repeated by the same person counts once.
    """
    return hashlib.sha256(_REVIEWER_DOMAIN + reviewer.encode("utf-8")).hexdigest()[:20]


def _trace_id(raw: object) -> str:
    if not isinstance(raw, str) or not _TRACE_ID.match(raw.strip().lower()):
        raise VerdictError("trace_id", "32 hexadecimal characters expected (the judged turn's trace id)")
    trace_id = raw.strip().lower()
    if trace_id == _ZERO_TRACE:
        raise VerdictError("trace_id", "the all-zero trace id is invalid")
    return trace_id


def make_verdict(rules: Mapping[str, DefectRule], *, trace_id: object, metric: object, verdict: object = None,
                 value: object = None, reviewer: object, source: str, at: float) -> HumanVerdict:
    """A validated :class:`HumanVerdict`; :class:`VerdictError` names the first bad field.

    ``metric`` must be a configured metric (so labels stay bounded). A value must be a finite
    number on the metric's scale; when both a verdict and a value are sent they must be on the
    same side of the defect rule.
    """
    tid = _trace_id(trace_id)
    if not isinstance(metric, str) or metric not in rules:
        known = ", ".join(sorted(rules)) or "none"
        raise VerdictError("metric", f"{str(metric)[:80]!r} is not a configured metric ({known})")
    rule = rules[metric]
    if verdict is not None and verdict not in VERDICTS:
        raise VerdictError("verdict", f"{str(verdict)[:40]!r} is not one of {', '.join(VERDICTS)}")
    number: float | None = None
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise VerdictError("value", "a finite number expected")
        number = float(value)
        low, high = rule.scale
        if not low <= number <= high:
            raise VerdictError("value", f"{number:g} is outside {metric}'s scale [{low:g}, {high:g}]")
    if verdict is None and number is None:
        raise VerdictError("verdict", "send a verdict (pass | defect) or a value on the metric's scale")
    if verdict is not None and number is not None and rule.side(None, number) != verdict:
        raise VerdictError("value", f"{number:g} is a {rule.side(None, number)} under {metric}'s defect rule, "
                                    f"the verdict says {verdict}")
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise VerdictError("reviewer", "a non-empty reviewer id expected (stored hashed)")
    if len(reviewer) > MAX_REVIEWER_CHARS:
        raise VerdictError("reviewer", f"longer than {MAX_REVIEWER_CHARS} characters")
    if source not in SOURCES:
        raise VerdictError("source", f"{source!r} is not one of {', '.join(SOURCES)}")
    return HumanVerdict(tid, metric, verdict if isinstance(verdict, str) else None, number,
                        reviewer_hash(reviewer.strip()), source, float(at))
