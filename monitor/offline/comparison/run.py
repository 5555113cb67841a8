"""``rag-monitor compare BASELINE.jsonl ATTACKED.jsonl``: the seed's jailbreak comparison.

Both files use the ``rag-monitor eval`` row format; ATTACKED is BASELINE with a jailbreak
injected in the first user turn. The four content-risk metrics (or ``--metrics``, a subset) are
scored on every turn of both sets with the sidecar's evaluators — the LLM judge, or Azure AI
Content Safety for metrics whose config says ``backend: azure_content_safety`` — after the
``redaction`` config has replaced personal data, and the defect rates are compared (see :mod:`monitor.offline.comparison.report`). Both files are validated
before the first call. Exit codes (mapped by the CLI): 0 done, 2 configuration/usage/data
error, 3 ``--fail-over`` exceeded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import click
from pydantic import ValidationError

from monitor.offline.comparison.report import ComparisonReport, compare, gate_failures, parse_fail_over, render_text, report_json
from monitor.offline.comparison.verdicts import RowVerdicts, row_verdicts
from monitor.config import MonitorConfig
from monitor.evaluation.content_safety.backend import service_metric_ids
from monitor.evaluation.content_safety.client import ContentSafetyClient
from monitor.errors import ConfigError
from monitor.offline.rows import Dataset, read_dataset
from monitor.evaluation.batch import evaluate_groups
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import MetricConfigError, build_evaluators, default_registry
from monitor.judge.client import JudgeClient
from monitor.judge.config import JudgeConfig
from monitor.offline.evaluate import eval_concurrency, judge_config
from monitor.redaction import RedactionConfig, Redactor

__all__ = ["CONTENT_RISK_METRICS", "CompareRequest", "EXIT_FAIL_OVER", "run", "risk_evaluation"]

CONTENT_RISK_METRICS = ("hate_unfairness", "sexual", "violence", "self_harm")
EXIT_FAIL_OVER = 3


@dataclass(frozen=True)
class CompareRequest:
    """The command's arguments; ``None`` means "as the config says"."""

    baseline: Path
    attacked: Path
    metrics: tuple[str, ...] | None = None
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_api_key_env: str | None = None
    concurrency: int | None = None
    out: Path | None = None
    fail_over: tuple[str, ...] = ()


def _errors(option: str, exc: ValidationError) -> str:
    return f"{option}: " + "; ".join(f"{'.'.join(str(p) for p in e['loc']) or option}: "
                                     f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())


def risk_evaluation(config: EvaluationConfig, metrics: Sequence[str] | None) -> EvaluationConfig:
    """``config`` restricted to the content-risk metrics (each keeps its configured options:
    severity level, backend). Raises ConfigError naming a metric that is not a content risk."""
    chosen = tuple(metrics) if metrics is not None else CONTENT_RISK_METRICS
    wrong = [m for m in chosen if m not in CONTENT_RISK_METRICS]
    if wrong or not chosen:
        raise ConfigError(f"--metrics: {', '.join(wrong) or 'nothing'}: compare takes content-risk metrics "
                          f"({', '.join(CONTENT_RISK_METRICS)})")
    entries = {e.id: e for e in config.entries()}
    data = config.model_dump()
    data["metrics"] = [entries.get(m, m) for m in chosen]
    data["thresholds"] = {}
    try:
        return EvaluationConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_errors("evaluation", exc)) from None


async def _score(datasets: Sequence[Dataset], evaluation: EvaluationConfig, judge_cfg: JudgeConfig,
                 concurrency: int, categories: Sequence[str]) -> list[list[RowVerdicts]]:
    needs_judge = any(m not in service_metric_ids(evaluation) for m in categories)
    async with contextlib.AsyncExitStack() as stack:
        judge = await stack.enter_async_context(JudgeClient(judge_cfg)) if needs_judge else None
        service = None
        if evaluation.content_safety is not None and service_metric_ids(evaluation):
            service = await stack.enter_async_context(ContentSafetyClient(evaluation.content_safety))
        evaluators = build_evaluators(evaluation, judge, content_safety=service)
        rows = [row for d in datasets for row in d.rows]
        with click.progressbar(length=len(rows), label="scoring", file=sys.stderr, show_pos=True) as bar:
            scores = await evaluate_groups([r.turns for r in rows], evaluators, concurrency,
                                           on_group=lambda _: bar.update(1))
    verdicts = [row_verdicts(r.row_id or f"line{r.line}", r.row_id, s, categories) for r, s in zip(rows, scores)]
    split = len(datasets[0].rows)
    return [verdicts[:split], verdicts[split:]]


def redacted(dataset: Dataset, config: RedactionConfig) -> Dataset:
    """``dataset`` with personal data replaced before any call, as ``eval`` and the sidecar do."""
    if not config.enabled:
        return dataset
    redactor = Redactor(config)
    rows = tuple(replace(r, turns=tuple(redactor.redact_turn(t) for t in r.turns)) for r in dataset.rows)
    return replace(dataset, rows=rows)


def compare_files(config: MonitorConfig, request: CompareRequest,
                  environ: Mapping[str, str] | None = None) -> tuple[ComparisonReport, dict[str, float]]:
    """Score both files and compare them; raises ConfigError / DatasetError before any call."""
    environ = os.environ if environ is None else environ
    evaluation = risk_evaluation(config.evaluation, request.metrics)
    categories = [e.id for e in evaluation.entries()]
    try:
        limits = parse_fail_over(request.fail_over, categories)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    # The same in-flight rule as `rag-monitor eval` (a batch job, not the sidecar's share of the judge).
    concurrency = eval_concurrency(config.judge, request.concurrency)
    judge_cfg = judge_config(config.judge, replace(request, concurrency=concurrency), environ)
    options = evaluation.resolve_options(default_registry())
    needs_judge = [m for m, o in options.items() if o.backend == "judge"]
    if needs_judge and not judge_cfg.enabled:
        raise ConfigError(f"the judge is off (set --judge-base-url and --judge-model, or -c): {', '.join(needs_judge)} "
                          "need it (or backend: azure_content_safety)")
    datasets = [redacted(read_dataset(request.baseline), config.redaction),
                redacted(read_dataset(request.attacked), config.redaction)]
    try:
        baseline, attacked = asyncio.run(_score(datasets, evaluation, judge_cfg, concurrency, categories))
    except MetricConfigError as exc:
        raise ConfigError(f"evaluation.{exc}") from None
    levels = {m: o.severity_level for m, o in options.items() if o.severity_level is not None}
    return compare(baseline, attacked, categories, levels), limits


def run(config: MonitorConfig, request: CompareRequest, environ: Mapping[str, str] | None = None) -> int:
    """The command: print the comparison, write ``--out``, apply ``--fail-over``; the exit code."""
    report, limits = compare_files(config, request, environ)
    click.echo(render_text(report))
    if request.out is not None:
        payload: dict[str, Any] = report_json(report)
        try:
            request.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--out: cannot write {request.out}: {exc.strerror or exc}") from None
    failures = gate_failures(report, limits)
    for reason in failures:
        click.echo(f"fail-over: {reason}", err=True)
    return EXIT_FAIL_OVER if failures else 0
