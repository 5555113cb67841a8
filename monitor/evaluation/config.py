"""The ``evaluation`` config section: which metrics run and how their defects are decided.

Example (YAML)::

    evaluation:
      metrics:
        - f1_score
        - groundedness
        - {id: relevance, threshold: 4}
        - {id: violence, severity_level: high}
        - {id: local_jailbreak_attempt, operating_point: high_precision}
      thresholds: {coherence: 2}
      safety_defect_level: medium
      combine_metrics: true
      refused_severity: null

Unknown keys, unknown metric ids and options a metric does not take are errors naming them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from monitor.evaluation.content_safety.config import BACKEND as SERVICE_BACKEND
from monitor.evaluation.content_safety.config import SERVICE_METRICS, ContentSafetyConfig
from monitor.evaluation.inputs import DEFAULT_MAX_CONTEXT_CHARS
from monitor.evaluation.registry import MetricConfigError, MetricOptions, MetricRegistry, MetricSpec, default_registry
from monitor.evaluation.severity import SEVERITY_LEVEL_NAMES, parse_severity_level

__all__ = ["MetricEntry", "EvaluationConfig", "LOCAL_TIER_METRICS", "DEFAULT_JUDGE_METRICS"]

LOCAL_TIER_METRICS = (
    "f1_score",
    "local_lexical_groundedness",
    "local_offensive_language",
    "local_jailbreak_attempt",
    "local_system_prompt_leak",
)
# With combine_metrics on (the default) these eight cost TWO judge calls per sampled turn: the four
# RAG quality rubrics in one, the four content-risk severities (answer and question only) in the other.
DEFAULT_JUDGE_METRICS = (
    "groundedness",
    "relevance",
    "coherence",
    "fluency",
    "hate_unfairness",
    "sexual",
    "violence",
    "self_harm",
)

SeverityLevel = int | Literal["very_low", "low", "medium", "high"]


class _Section(BaseModel):
    # hide_input_in_errors: a model-level error would echo the input, content_safety.api_key included.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class MetricEntry(_Section):
    """A metric with per-metric options; a bare id string in ``metrics`` means no options."""

    id: str
    threshold: float | None = Field(None, description="defect when the value is below (or, for higher-is-worse metrics, at or above) this")
    operating_point: str | None = Field(
        None, description="a named threshold from the metric's published table (local_jailbreak_attempt: high_precision, "
        "balanced, high_recall); not with threshold")
    severity_level: SeverityLevel | None = Field(None, description="safety metrics: defect at severity >= this level (0-7 or a level name)")
    backend: Literal["judge", "azure_content_safety"] | None = Field(
        None, description="what scores the metric: the LLM judge (default) or Azure AI Content Safety "
        f"({', '.join(SERVICE_METRICS)}; needs content_safety)")

    @field_validator("severity_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> int | None:
        return None if value is None else parse_severity_level(value)


class EvaluationConfig(_Section):
    metrics: tuple[str | MetricEntry, ...] = Field(
        LOCAL_TIER_METRICS + DEFAULT_JUDGE_METRICS, description="metric ids to compute on sampled turns"
    )
    thresholds: dict[str, float] = Field(default_factory=dict, description="metric id -> defect threshold")
    safety_defect_level: SeverityLevel = Field(
        "medium", validate_default=True, description=f"defect at severity >= this level: 0-7 or one of {', '.join(SEVERITY_LEVEL_NAMES)}"
    )
    combine_metrics: bool = Field(
        True, description="judge groundedness/relevance/coherence/fluency in one call and the four safety "
        "severities in another (answer and question only); off: one call per metric")
    refused_severity: SeverityLevel | None = Field(
        None, description="when the judge refuses or a content filter blocks a safety call, count each of its "
        "severities at this level (0-7 or a level name; a defect when at or above the metric's severity_level); "
        "null (default): record unscored_refused, shown beside the defect rate as possibly harmful, not scored")
    max_context_chars: int = Field(DEFAULT_MAX_CONTEXT_CHARS, ge=500, description="context sent to the judge is cut to this")
    queue_size: int = Field(1000, gt=0, description="sampled turns waiting for evaluation; more are dropped and counted")
    max_queue_bytes: int = Field(
        64 * 1024 * 1024, gt=0, description="text of the sampled turns waiting for evaluation; more are dropped and counted")
    workers: int = Field(16, gt=0, le=1024, description="turns evaluated at once (the judge's max_concurrency still applies)")
    local_workers: int = Field(
        1, ge=0, le=64, description="processes that run the CPU-bound local metrics, so ingest and the admin port never "
        "wait for them; 0 runs them in the serving process (long texts in a thread)")
    local_queue_size: int = Field(
        64, gt=0, le=100_000, description="sampled turns waiting for a local worker; beyond it a turn's local metrics get "
        "an error score, counted in rag_monitor_queue_dropped_total{queue=\"local_workers\"}")
    content_safety: ContentSafetyConfig | None = Field(
        None, description="Azure AI Content Safety resource for metrics with backend: azure_content_safety")

    @field_validator("safety_defect_level", mode="before")
    @classmethod
    def _default_level(cls, value: object) -> int:
        return parse_severity_level(value)

    @field_validator("refused_severity", mode="before")
    @classmethod
    def _refused_level(cls, value: object) -> int | None:
        return None if value is None else parse_severity_level(value)

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: object) -> object:
        if isinstance(data, dict) and "combine_safety" in data:
            raise ValueError(
                "combine_safety was removed (CHANGELOG 2026-11-28): the safety severities are always judged "
                "in their own call; delete the key (combine_metrics still groups the quality rubrics)")
        return data

    @model_validator(mode="after")
    def _known_metrics(self) -> "EvaluationConfig":
        self.resolve_options(default_registry())
        return self

    def entries(self) -> tuple[MetricEntry, ...]:
        """``metrics`` with bare ids turned into entries."""
        return tuple(MetricEntry(id=m) if isinstance(m, str) else m for m in self.metrics)

    def resolve_options(self, registry: MetricRegistry) -> dict[str, MetricOptions]:
        """Metric id -> resolved options, in config order. Raises MetricConfigError naming the key."""
        resolved: dict[str, MetricOptions] = {}
        for index, entry in enumerate(self.entries()):
            key = f"metrics[{index}]"
            if entry.id in resolved:
                raise MetricConfigError(f"{key}: metric {entry.id!r} is listed twice")
            try:
                resolved[entry.id] = self._options_for(entry, registry, key)
            except MetricConfigError as exc:
                raise MetricConfigError(f"{key}: {exc}") from None
        for metric_id in self.thresholds:
            if metric_id not in resolved:
                raise MetricConfigError(f"thresholds.{metric_id}: metric is not in metrics")
        _check_derived(resolved, registry)
        return resolved

    def _options_for(self, entry: MetricEntry, registry: MetricRegistry, key: str) -> MetricOptions:
        spec = registry.get(entry.id)
        if entry.threshold is not None and entry.id in self.thresholds:
            raise MetricConfigError(f"{entry.id}: threshold set both here and in thresholds")
        threshold = entry.threshold if entry.threshold is not None else self.thresholds.get(entry.id)
        if entry.operating_point is not None:
            threshold = _operating_point(entry, spec, threshold)
        if threshold is not None:
            if spec.default_threshold is None:
                raise MetricConfigError(f"{entry.id} takes no threshold")
            low, high = spec.scale
            if not low <= threshold <= high:
                raise MetricConfigError(f"{entry.id}: threshold {threshold} is outside [{low}, {high}]")
        if entry.severity_level is not None and not spec.uses_severity_level:
            raise MetricConfigError(f"{entry.id} takes no severity_level")
        backend = entry.backend or "judge"
        if backend == SERVICE_BACKEND:
            if entry.id not in SERVICE_METRICS:
                raise MetricConfigError(f"{entry.id}: backend {SERVICE_BACKEND} scores only {', '.join(SERVICE_METRICS)}")
            if self.content_safety is None:
                raise MetricConfigError(f"{entry.id}: backend {SERVICE_BACKEND} needs content_safety.endpoint")
        return MetricOptions(
            backend=backend,
            threshold=threshold if threshold is not None else spec.default_threshold,
            severity_level=(
                # The validator already turned a level name into its number; parse again for the type.
                parse_severity_level(entry.severity_level if entry.severity_level is not None
                                     else self.safety_defect_level)
                if spec.uses_severity_level
                else None
            ),
        )


def _operating_point(entry: MetricEntry, spec: MetricSpec, threshold: float | None) -> float:
    """The threshold ``entry.operating_point`` names; errors name the option."""
    if threshold is not None:
        raise MetricConfigError(f"{entry.id}: set threshold or operating_point, not both")
    if not spec.operating_points:
        raise MetricConfigError(f"{entry.id} takes no operating_point")
    try:
        return spec.operating_points[entry.operating_point or ""]
    except KeyError:
        known = ", ".join(spec.operating_points)
        raise MetricConfigError(f"{entry.id}: operating_point {entry.operating_point!r} is not one of {known}") from None


def _check_derived(resolved: dict[str, MetricOptions], registry: MetricRegistry) -> None:
    for metric_id in resolved:
        spec = registry.get(metric_id)
        if spec.derived_from and not spec.derived_from & resolved.keys():
            needs = ", ".join(sorted(spec.derived_from))
            raise MetricConfigError(f"{metric_id} needs at least one of: {needs}")
