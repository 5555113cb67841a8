"""The metric registry: additive, explicit, validated.

Every module in ``monitor.evaluation.metrics`` and ``monitor.evaluation.local`` that defines
``register(registry)`` adds its :class:`MetricSpec` there; :meth:`MetricRegistry.discover` scans
those packages, so a new metric is a new module and nothing central is edited. The registry is
an ordinary object (no import-time side effects, no mutable global): :func:`default_registry`
builds one on first use and never changes it afterwards.

Three ways a spec becomes an evaluator:

* ``build`` — one evaluator for the metric;
* ``group`` — metrics judged in one call (Tonic's per-chunk judgements always; with
  ``combine_metrics`` the rubric metrics in one call and the severities in another) are built
  together by the group's builder;
* ``wrap`` — a derived metric (``overall_score``) wraps the evaluators of the metrics it is
  computed from.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import logging
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Sequence

from monitor.evaluation.inputs import DEFAULT_MAX_CONTEXT_CHARS
from monitor.evaluation.scoring import Scale
from monitor.evaluation.severity import DEFAULT_SEVERITY_LEVEL, parse_severity_level
from monitor.interfaces import Evaluator
from monitor.judge.types import Judge

if TYPE_CHECKING:
    from monitor.evaluation.content_safety.evaluators import ContentSafetyService
    from monitor.evaluation.config import EvaluationConfig

__all__ = [
    "MetricOptions",
    "BuildContext",
    "MetricGroup",
    "MetricSpec",
    "input_names",
    "MetricRegistry",
    "MetricConfigError",
    "default_registry",
    "build_evaluators",
    "prompt_versions",
    "METRIC_PACKAGES",
]

log = logging.getLogger(__name__)

METRIC_PACKAGES = ("monitor.evaluation.metrics", "monitor.evaluation.local")


class MetricConfigError(ValueError):
    """The metric part of the configuration is invalid; the message names the key."""


@dataclass(frozen=True, slots=True)
class MetricOptions:
    """Resolved per-metric options (defaults applied)."""

    threshold: float | None = None
    severity_level: int | None = None
    backend: str = "judge"
    """What scores the metric: ``judge`` (or local code) or a service such as ``azure_content_safety``."""


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What builders get: the judge (None for the local tier) and the resolved options."""

    judge: Judge | None
    options: Mapping[str, MetricOptions] = field(default_factory=dict)
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS
    combine_metrics: bool = False
    refused_severity: int | None = None
    """``evaluation.refused_severity``: count a refused or filtered severity call at this severity."""

    def require_judge(self) -> Judge:
        """The judge; builders of judge-tier metrics call this."""
        if self.judge is None:
            raise MetricConfigError("a judge-tier metric was built without a judge")
        return self.judge

    def threshold(self, metric_id: str) -> float:
        """The resolved threshold of ``metric_id``."""
        value = self.options.get(metric_id, MetricOptions()).threshold
        if value is None:
            raise MetricConfigError(f"{metric_id}: no threshold resolved")
        return value

    def severity_level(self, metric_id: str) -> int:
        """The resolved severity defect level of ``metric_id``."""
        value = self.options.get(metric_id, MetricOptions()).severity_level
        if value is None:
            raise MetricConfigError(f"{metric_id}: no severity level resolved")
        return value


@dataclass(frozen=True)
class MetricGroup:
    """Metrics built into one evaluator; ``admits`` says whether a spec joins under ``ctx``."""

    name: str
    build: Callable[[tuple["MetricSpec", ...], BuildContext], Evaluator]
    admits: Callable[[BuildContext, "MetricSpec"], bool] = lambda ctx, spec: True


@dataclass(frozen=True)
class MetricSpec:
    """A metric's contract: id, tier, scale, aggregation, options and how to build it."""

    metric_id: str
    summary: str
    tier: Literal["judge", "local"]
    scale: Scale
    aggregation: Literal["mean", "max"] = "mean"
    build: Callable[[BuildContext], Evaluator] | None = None
    group: MetricGroup | None = None
    definition: Any = None
    """Metric-specific data a group builder reads (e.g. a rubric definition)."""
    default_threshold: float | None = None
    """Set when the metric takes a ``threshold`` option."""
    operating_points: Mapping[str, float] = field(default_factory=dict)
    """Named thresholds the ``operating_point`` option picks from (e.g. ``balanced``), when the
    metric publishes a table of them."""
    uses_severity_level: bool = False
    derived_from: frozenset[str] = frozenset()
    wrap: Callable[[tuple[Evaluator, ...], BuildContext], Evaluator] | None = None
    inputs: tuple[str, ...] = ()
    """The parts of a turn the metric reads, named as the data-set columns are (``question``,
    ``answer``, ``context``, ``ground_truth``, ``history``, ``system_prompt``); ``?`` marks an
    optional one. Empty: taken from ``definition`` when it declares ``required``/``optional``.
    The generated metric reference (tools/docs/generate.py) shows them."""
    seed: str | None = None
    """Where the metric's definition comes from: ``Azure``, ``Opik``, ``Tonic Validate`` or
    ``rag-monitor`` (its own); shown in the generated metric reference."""

    def declared_inputs(self) -> tuple[str, ...]:
        """:attr:`inputs`, or those the ``definition`` declares (a rubric's required and optional)."""
        if self.inputs:
            return self.inputs
        return input_names(getattr(self.definition, "required", ()), getattr(self.definition, "optional", ()))


    def __post_init__(self) -> None:
        if self.build is None and self.group is None and self.wrap is None:
            raise ValueError(f"{self.metric_id}: a spec needs build, group or wrap")

    def default_options(self) -> MetricOptions:
        """Options when the config sets none: the default threshold / the Medium level."""
        level = DEFAULT_SEVERITY_LEVEL if self.uses_severity_level else None
        return MetricOptions(threshold=self.default_threshold, severity_level=level)


def input_names(required: Iterable[Any], optional: Iterable[Any] = ()) -> tuple[str, ...]:
    """A metric's inputs (``Input`` members or names) as the data-set columns name them, optional
    ones marked ``?``: what :attr:`MetricSpec.inputs` holds."""

    def name(item: Any) -> str:
        raw = str(getattr(item, "value", item))
        return "ground_truth" if raw == "reference" else raw

    return tuple(name(i) for i in required) + tuple(f"{name(i)}?" for i in optional)


class MetricRegistry:
    """Metric specs by id. Built explicitly; :meth:`discover` fills it from the metric packages."""

    def __init__(self, specs: Iterable[MetricSpec] = ()) -> None:
        self._specs: dict[str, MetricSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: MetricSpec) -> None:
        """Add ``spec``; a second spec with the same id is a programming error."""
        if spec.metric_id in self._specs:
            raise ValueError(f"metric {spec.metric_id!r} is registered twice")
        self._specs[spec.metric_id] = spec

    @classmethod
    def discover(cls, packages: Sequence[str] = METRIC_PACKAGES) -> "MetricRegistry":
        """A registry with every spec that the modules of ``packages`` register."""
        registry = cls()
        for package_name in packages:
            package = importlib.import_module(package_name)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                if info.name.startswith("_"):
                    continue  # private helpers shared by several metrics
                module = importlib.import_module(f"{package_name}.{info.name}")
                register = getattr(module, "register", None)
                if callable(register):
                    register(registry)
        return registry

    def __contains__(self, metric_id: object) -> bool:
        return metric_id in self._specs

    def get(self, metric_id: str) -> MetricSpec:
        """The spec of ``metric_id``; an unknown id raises :class:`MetricConfigError`."""
        try:
            return self._specs[metric_id]
        except KeyError:
            known = ", ".join(sorted(self._specs))
            close = difflib.get_close_matches(metric_id, self._specs, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise MetricConfigError(f"unknown metric id {metric_id!r}{hint} (known: {known})") from None

    def ids(self) -> tuple[str, ...]:
        """Every registered id, sorted."""
        return tuple(sorted(self._specs))

    def aggregation(self, metric_id: str) -> str:
        """"mean" or "max" for ``metric_id`` ("mean" for ids this registry does not know)."""
        spec = self._specs.get(metric_id)
        return spec.aggregation if spec else "mean"

    def build(self, ctx: BuildContext, metric_ids: Sequence[str]) -> tuple[Evaluator, ...]:
        """Evaluators for ``metric_ids`` (already validated), grouping and wrapping as declared."""
        specs = [self.get(m) for m in metric_ids]
        # Ids built without resolved options (tests, tools) get the spec defaults.
        defaults = {s.metric_id: s.default_options() for s in specs if s.metric_id not in ctx.options}
        ctx = dataclasses.replace(ctx, options={**ctx.options, **defaults})
        if ctx.judge is None:
            dropped = [s.metric_id for s in specs if s.tier == "judge"]
            if dropped:
                log.info("no judge configured: judge-tier metrics off: %s", ", ".join(dropped))
            specs = [s for s in specs if s.tier != "judge"]
        built: list[Evaluator] = []
        groups: dict[str, list[MetricSpec]] = {}
        for spec in specs:
            if spec.group is not None and spec.group.admits(ctx, spec):
                groups.setdefault(spec.group.name, []).append(spec)
            elif spec.build is not None:
                built.append(spec.build(ctx))
        for members in groups.values():
            built.append(members[0].group.build(tuple(members), ctx))  # type: ignore[union-attr]
        for spec in specs:
            if spec.wrap is not None and spec.build is None:
                built = _wrap(spec, built, ctx)
        return tuple(built)


def _wrap(spec: MetricSpec, built: list[Evaluator], ctx: BuildContext) -> list[Evaluator]:
    inner = [e for e in built if set(e.metric_ids) <= spec.derived_from]
    if not inner:
        log.info("%s: none of its component metrics is built; it is off", spec.metric_id)
        return built
    rest = [e for e in built if e not in inner]
    assert spec.wrap is not None
    return [*rest, spec.wrap(tuple(inner), ctx)]


@functools.cache
def default_registry() -> MetricRegistry:
    """The registry of every metric shipped in this package (built once, never mutated)."""
    return MetricRegistry.discover()


def build_evaluators(
    config: "EvaluationConfig", judge: Judge | None, registry: MetricRegistry | None = None,
    content_safety: "ContentSafetyService | None" = None,
) -> tuple[Evaluator, ...]:
    """Evaluators for ``config``; with ``judge`` None only the local tier is built. Metrics whose
    backend is ``azure_content_safety`` are built on ``content_safety`` (which they then need)."""
    registry = registry or default_registry()
    options = config.resolve_options(registry)
    on_service = {m: o for m, o in options.items() if o.backend != "judge"}
    if on_service:
        from monitor.evaluation.content_safety.backend import build_service_evaluators

        if content_safety is None:
            raise MetricConfigError(f"{', '.join(on_service)}: backend azure_content_safety needs a "
                                    "Content Safety client (evaluation.content_safety)")
        options = {m: o for m, o in options.items() if m not in on_service}
        service_built = build_service_evaluators(
            {m: o.severity_level for m, o in on_service.items() if o.severity_level is not None},
            {m: o.threshold for m, o in on_service.items() if o.threshold is not None}, content_safety)
    else:
        service_built = ()
    ctx = BuildContext(
        judge=judge,
        options=options,
        max_context_chars=config.max_context_chars,
        combine_metrics=config.combine_metrics,
        refused_severity=(None if config.refused_severity is None
                          else parse_severity_level(config.refused_severity)),  # validated: an int already
    )
    return registry.build(ctx, list(options)) + service_built


def prompt_versions(evaluators: Sequence[Evaluator]) -> dict[str, str]:
    """Metric id -> the ``prompt_version`` its judge prompt has in these evaluators (judge metrics
    only; the same hash every Score of the metric carries in ``details["prompt_version"]``), for a
    calibration set or a report to record which wording produced its values."""
    return {m: v for e in evaluators for m, v in getattr(e, "prompt_versions", {}).items()}
