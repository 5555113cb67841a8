"""What each configured metric means: scale, direction, defect rule and whether it runs.

A 1–5 rubric where higher is better and a 0–7 severity where higher is worse must not both read
"mean 3.00": the composition root builds this once at start from the evaluation config and the
metric registry and hands it to the readers (the status page, ``/api/summary``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import MetricOptions, MetricRegistry, MetricSpec, default_registry
from monitor.evaluation.severity import severity_label

__all__ = ["MetricInfo", "metric_catalogue", "direction_of", "defect_rule"]

Direction = Literal["higher_is_better", "higher_is_worse"]


@dataclass(frozen=True, slots=True)
class MetricInfo:
    metric: str
    summary: str
    tier: Literal["judge", "local"]
    scale: tuple[float, float]
    direction: Direction
    defect_rule: str
    enabled: bool
    off_reason: str | None = None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def direction_of(spec: MetricSpec) -> Direction:
    """Risk metrics aggregate a conversation by its worst (max) turn because higher is worse;
    quality metrics by the mean because higher is better (DESIGN §4)."""
    return "higher_is_worse" if spec.aggregation == "max" else "higher_is_better"


def defect_rule(spec: MetricSpec, options: MetricOptions) -> str:
    """The defect rule in words, with the configured threshold or level."""
    if spec.uses_severity_level and options.severity_level is not None:
        level = options.severity_level
        return f"defect when severity ≥ {level} ({severity_label(level)} or worse)"
    worse = direction_of(spec) == "higher_is_worse"
    if options.threshold is not None:
        return f"defect when ≥ {_num(options.threshold)}" if worse else f"defect when < {_num(options.threshold)}"
    low, high = spec.scale
    return f"defect when {_num(high)}" if worse else f"defect when {_num(low)}"


def metric_catalogue(config: EvaluationConfig, judge_enabled: bool,
                     registry: MetricRegistry | None = None) -> dict[str, MetricInfo]:
    """Every configured metric, in config order."""
    registry = registry or default_registry()
    out: dict[str, MetricInfo] = {}
    for metric, options in config.resolve_options(registry).items():
        spec = registry.get(metric)
        off = None if judge_enabled or spec.tier == "local" else "no judge configured (judge.model, judge.base_url)"
        out[metric] = MetricInfo(metric, spec.summary, spec.tier, (float(spec.scale[0]), float(spec.scale[1])),
                                 direction_of(spec), defect_rule(spec, options), off is None, off)
    return out
