"""``rag-monitor calibrate LABELS.jsonl``: run the configured judge on labelled rows and measure
how well it agrees with the people who labelled them.

The rows are judged exactly as ``rag-monitor eval`` judges them (its judge options, metric
selection, redaction and concurrent runner, :mod:`monitor.offline.evaluate`); only the rows' last
turn is judged, the one their labels are about. Per metric the judge's verdict (``Score.defect``,
the metric's own rule) is compared with the person's (given, or their value under the same rule),
see :func:`calibrate_metric`. ``--compare-config B.yaml`` judges the same rows with B's judge and
evaluation sections and reports B − base on the same rows.

Exit codes (mapped by the CLI): 0 done, 2 configuration/usage/data error, 3 ``--fail-under``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import click

from monitor.calibration.agreement import Estimate, agreement, cohen_kappa, confusion, difference, kappa_difference
from monitor.calibration.labels import HumanLabel, LabelledRow, LabelledSet, integer_scale, read_labelled
from monitor.calibration.threshold import BestThreshold, DefectRule, best_threshold, defect_rule_of
from monitor.config import MonitorConfig, load_config
from monitor.errors import ConfigError
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators, default_registry, prompt_versions
from monitor.judge.config import JudgeConfig
from monitor.model import Score, ScoreStatus
from monitor.offline.comparison.run import redacted
from monitor.offline.evaluate import eval_concurrency, evaluate_rows, judge_config, select_metrics, service_metric_ids
from monitor.offline.rows import EvalRow

__all__ = ["CalibrateRequest", "JudgeIdentity", "MetricCalibration", "ConfigComparison", "CalibrationReport",
           "Judging", "calibrate_metric", "compare_metric", "calibrate_files", "EXIT_FAIL_UNDER"]

EXIT_FAIL_UNDER = 3


@dataclass(frozen=True)
class CalibrateRequest:
    """The command's arguments; ``None`` means "as the config says"."""

    labels: Path
    metrics: tuple[str, ...] | None = None
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_api_key_env: str | None = None
    concurrency: int | None = None
    compare_config: Path | None = None
    fail_under: tuple[str, ...] = ()
    as_json: bool = False
    out: Path | None = None


@dataclass(frozen=True, slots=True)
class JudgeIdentity:
    """Which judge produced the verdicts: the model asked for and each metric's prompt version
    (a hash of its prompt templates), so two reports can be told apart."""

    model: str | None
    base_url: str | None
    prompt_versions: Mapping[str, str]
    served_model: str | None = None
    """The model the judge's replies named (a provider's dated snapshot behind an alias)."""


@dataclass(frozen=True, slots=True)
class Judging:
    """One judge configuration's scores: per labelled row, metric -> Score of the row's last turn."""

    identity: JudgeIdentity
    rules: Mapping[str, DefectRule]
    scores: tuple[Mapping[str, Score], ...]


@dataclass(frozen=True, slots=True)
class MetricCalibration:
    metric: str
    n: int
    """Rows with a person's label and a judge value."""
    unscored: int
    """Labelled rows the judge gave no value (error, skipped, refused): not in ``n``."""
    agreement: Estimate
    kappa: Estimate
    kappa_on: str
    """``value`` (points of an integer scale, quadratic weights) or ``verdict`` (plain kappa)."""
    confusion: Mapping[str, Mapping[str, float]]
    """``{judge verdict: {human verdict: rows}}``."""
    defect_recall: Estimate
    """Of the rows people call defects, the share the judge calls defects."""
    defect_precision: Estimate
    """Of the rows the judge calls defects, the share people call defects."""
    pass_recall: Estimate
    """Of the rows people pass, the share the judge passes."""
    best_threshold: BestThreshold | None
    defect_rule: str


@dataclass(frozen=True, slots=True)
class ConfigComparison:
    """The compared configuration minus the base one, on the rows both scored."""

    metric: str
    n: int
    agreement_difference: Estimate
    kappa_difference: Estimate


@dataclass(frozen=True)
class CalibrationReport:
    rows: int
    judge: JudgeIdentity
    metrics: Mapping[str, MetricCalibration]
    compare_judge: JudgeIdentity | None = None
    compare_metrics: Mapping[str, MetricCalibration] | None = None
    differences: Mapping[str, ConfigComparison] | None = None


@dataclass(frozen=True, slots=True)
class _Paired:
    """One metric's rows that have both a person's label and a judge value."""

    keys: tuple[int, ...]
    judge_verdicts: tuple[str, ...]
    human_verdicts: tuple[str, ...]
    judge_values: tuple[float, ...]
    human_values: tuple[float | None, ...]


def _pair(metric: str, rows: Sequence[LabelledRow], scores: Sequence[Mapping[str, Score]],
          human_rule: DefectRule) -> tuple[_Paired, int]:
    keys, jv, hv, jx, hx = [], [], [], [], []
    unscored = 0
    for i, (row, by_metric) in enumerate(zip(rows, scores, strict=True)):
        label = row.labels.get(metric)
        if label is None:
            continue
        score = by_metric.get(metric)
        if score is None or score.status != ScoreStatus.OK or score.value is None:
            unscored += 1
            continue
        keys.append(i)
        jv.append("defect" if score.defect else "pass")
        hv.append(_human_verdict(label, human_rule))
        jx.append(score.value)
        hx.append(label.value)
    return _Paired(tuple(keys), tuple(jv), tuple(hv), tuple(jx), tuple(hx)), unscored


def _human_verdict(label: HumanLabel, rule: DefectRule) -> str:
    if label.verdict is not None:
        return label.verdict
    assert label.value is not None  # parse_label sets one of the two
    return rule.verdict(label.value)


def _value_categories(rule: DefectRule, paired: _Paired) -> list[float] | None:
    """The scale's points when kappa can be taken on values: an integer scale, every person gave
    a value and every judge value is a point of the scale. None: kappa on verdicts."""
    if not integer_scale(rule.scale) or not paired.keys:
        return None
    low, high = rule.scale
    points = [float(p) for p in range(int(low), int(high) + 1)]
    values = list(paired.judge_values) + list(paired.human_values)
    if any(v is None or v not in points for v in values):
        return None
    return points


def _kappa(paired: _Paired, categories: list[float] | None) -> Estimate:
    if categories is not None:
        return cohen_kappa(list(zip(paired.judge_values, paired.human_values)), weights="quadratic",
                           categories=categories)
    return cohen_kappa(list(zip(paired.judge_verdicts, paired.human_verdicts)), weights=None,
                       categories=["pass", "defect"])


def _share(pairs: Sequence[tuple[str, str]], given: int, side: str) -> Estimate:
    """Agreement among the pairs whose element ``given`` (0 judge, 1 human) is ``side``."""
    return agreement([p for p in pairs if p[given] == side])


def calibrate_metric(metric: str, rows: Sequence[LabelledRow], judging: Judging,
                     human_rule: DefectRule | None = None) -> MetricCalibration:
    """Agreement, kappa, confusion with its rates, and the best threshold for ``metric``.

    ``human_rule`` turns a person's value into a verdict (default: this judging's own rule)."""
    rule = judging.rules[metric]
    paired, unscored = _pair(metric, rows, judging.scores, human_rule or rule)
    pairs = list(zip(paired.judge_verdicts, paired.human_verdicts))
    categories = _value_categories(rule, paired)
    return MetricCalibration(
        metric=metric, n=len(pairs), unscored=unscored, agreement=agreement(pairs),
        kappa=_kappa(paired, categories), kappa_on="value" if categories is not None else "verdict",
        confusion=confusion(pairs), defect_recall=_share(pairs, 1, "defect"),
        defect_precision=_share(pairs, 0, "defect"), pass_recall=_share(pairs, 1, "pass"),
        best_threshold=best_threshold(rule, paired.judge_values, paired.human_verdicts),
        defect_rule=rule.describe())


def compare_metric(metric: str, rows: Sequence[LabelledRow], base: Judging, other: Judging) -> ConfigComparison:
    """``other − base`` in agreement and kappa on the rows both scored (a paired bootstrap), the
    people's values read with the base configuration's rule for both."""
    human_rule = base.rules[metric]
    a, _ = _pair(metric, rows, base.scores, human_rule)
    b, _ = _pair(metric, rows, other.scores, human_rule)
    common = sorted(set(a.keys) & set(b.keys))
    a, b = _restrict(a, common), _restrict(b, common)
    a_pairs = list(zip(a.judge_verdicts, a.human_verdicts))
    b_pairs = list(zip(b.judge_verdicts, b.human_verdicts))
    cats_a, cats_b = _value_categories(human_rule, a), _value_categories(other.rules[metric], b)
    if cats_a is not None and cats_a == cats_b:
        kappa = kappa_difference(list(zip(b.judge_values, b.human_values)),
                                 list(zip(a.judge_values, a.human_values)), weights="quadratic", categories=cats_a)
    else:
        kappa = kappa_difference(b_pairs, a_pairs, weights=None, categories=["pass", "defect"])
    return ConfigComparison(metric, len(common), difference(b_pairs, a_pairs), kappa)


def _restrict(paired: _Paired, keys: Sequence[int]) -> _Paired:
    where = {k: i for i, k in enumerate(paired.keys)}
    idx = [where[k] for k in keys]
    return _Paired(tuple(keys), tuple(paired.judge_verdicts[i] for i in idx),
                   tuple(paired.human_verdicts[i] for i in idx), tuple(paired.judge_values[i] for i in idx),
                   tuple(paired.human_values[i] for i in idx))


# --- judging -----------------------------------------------------------------------------------


def _last_turns(labelled: LabelledSet) -> list[EvalRow]:
    # A conversation's labels are about its last assistant turn; earlier turns cost calls for nothing.
    return [replace(r.row, turns=r.row.turns[-1:]) for r in labelled.rows]


async def _judge(rows: Sequence[EvalRow], evaluation: EvaluationConfig, judge_cfg: JudgeConfig,
                 concurrency: int, label: str) -> tuple[list[dict[str, Score]], dict[str, str], str | None]:
    judge = None
    async with contextlib.AsyncExitStack() as stack:
        if judge_cfg.enabled:
            from monitor.judge.client import JudgeClient

            judge = await stack.enter_async_context(JudgeClient(judge_cfg))
        service = None
        if evaluation.content_safety is not None and service_metric_ids(evaluation):
            from monitor.evaluation.content_safety.client import ContentSafetyClient

            service = await stack.enter_async_context(ContentSafetyClient(evaluation.content_safety))
        evaluators = build_evaluators(evaluation, judge, content_safety=service)
        with click.progressbar(length=len(rows), label=label, file=sys.stderr, show_pos=True) as bar:
            outcomes = await evaluate_rows(rows, evaluators, concurrency, on_turn=lambda: bar.update(1))
        scores = [{s.metric: s for s in o.turn_scores[-1]} for o in outcomes]
        return scores, prompt_versions(evaluators), judge.served_model if judge is not None else None
    raise AssertionError("unreachable")  # pragma: no cover - the stack re-raises


def _setup(config: MonitorConfig, request: CalibrateRequest, metrics: Sequence[str], option: str,
           environ: Mapping[str, str]) -> tuple[EvaluationConfig, JudgeConfig, int]:
    evaluation = select_metrics(config.evaluation, metrics)
    concurrency = eval_concurrency(config.judge, request.concurrency)
    judge_cfg = judge_config(config.judge, replace(request, concurrency=concurrency), environ)
    registry = default_registry()
    on_service = service_metric_ids(evaluation)
    blocked = [m for m in metrics if registry.get(m).tier == "judge" and m not in on_service]
    if blocked and not judge_cfg.enabled:
        raise ConfigError(f"{option}: {', '.join(blocked)} need the judge, which is off: give --judge-base-url "
                          "URL --judge-model NAME (or a judge: section)")
    return evaluation, judge_cfg, concurrency


def _judging(labelled: LabelledSet, config: MonitorConfig, evaluation: EvaluationConfig, judge_cfg: JudgeConfig,
             concurrency: int, label: str) -> Judging:
    labelled_rows = redacted(replace(labelled.dataset, rows=tuple(_last_turns(labelled))), config.redaction).rows
    scores, versions, served = asyncio.run(_judge(labelled_rows, evaluation, judge_cfg, concurrency, label))
    registry = default_registry()
    rules = {m: defect_rule_of(registry.get(m), o) for m, o in evaluation.resolve_options(registry).items()}
    identity = JudgeIdentity(judge_cfg.effective_model if judge_cfg.enabled else None,
                             (judge_cfg.base_url or ("Azure" if judge_cfg.azure else None)) if judge_cfg.enabled else None,
                             versions, served)
    return Judging(identity, rules, tuple(scores))


def chosen_metrics(labelled: LabelledSet, requested: Sequence[str] | None) -> list[str]:
    """``--metrics`` (each must be labelled somewhere), else every labelled metric."""
    present = labelled.metrics()
    if requested is None:
        return list(present)
    missing = [m for m in requested if m not in present]
    if missing:
        raise ConfigError(f"--metrics: no row labels {', '.join(missing)} (labelled: {', '.join(present)})")
    return list(requested)


def calibrate_files(config: MonitorConfig, request: CalibrateRequest, environ: Mapping[str, str] | None = None,
                    labelled: LabelledSet | None = None) -> CalibrationReport:
    """Judge the labelled rows (read from ``request.labels`` unless given) — and with
    ``compare_config`` judge them again — and compare with the labels. Raises ConfigError /
    DatasetError before any judge call."""
    environ = os.environ if environ is None else environ
    labelled = read_labelled(request.labels) if labelled is None else labelled
    metrics = chosen_metrics(labelled, request.metrics)
    evaluation, judge_cfg, concurrency = _setup(config, request, metrics, "judge", environ)
    other = None
    if request.compare_config is not None:
        other_config = load_config(request.compare_config, environ)
        # B's file says everything about B: the command line's judge options are for the base.
        plain = CalibrateRequest(labels=request.labels, concurrency=request.concurrency)
        other = (other_config, *_setup(other_config, plain, metrics, f"--compare-config {request.compare_config}",
                                       environ))
    base = _judging(labelled, config, evaluation, judge_cfg, concurrency, "judging")
    results = {m: calibrate_metric(m, labelled.rows, base) for m in metrics}
    if other is None:
        return CalibrationReport(len(labelled.rows), base.identity, results)
    cfg_b, eval_b, judge_b, conc_b = other
    second = _judging(labelled, cfg_b, eval_b, judge_b, conc_b, "judging (compared)")
    return CalibrationReport(
        len(labelled.rows), base.identity, results, second.identity,
        {m: calibrate_metric(m, labelled.rows, second, base.rules[m]) for m in metrics},
        {m: compare_metric(m, labelled.rows, base, second) for m in metrics})


def kappa_gate(report: CalibrationReport, limits: Mapping[str, float]) -> list[str]:
    """Why the run fails ``--fail-under``: a metric whose kappa is below its limit, or undefined
    (a gate that passes without evidence would hide a broken judge)."""
    reasons = []
    for metric, limit in limits.items():
        kappa = report.metrics[metric].kappa
        if math.isnan(kappa.value):
            reasons.append(f"{metric}: kappa undefined on {kappa.n} rows (no judged row, or one category only)")
        elif kappa.value < limit:
            reasons.append(f"{metric}: kappa {kappa.value:.3f} < {limit:g}")
    return reasons
