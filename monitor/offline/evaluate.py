"""``rag-monitor eval DATA.jsonl``: score a data set offline with the sidecar's own evaluators.

The same code path as the sidecar: :func:`~monitor.evaluation.registry.build_evaluators` on the
``evaluation`` config, the real :class:`~monitor.judge.client.JudgeClient` (budgets, retries,
circuit breaker, structured output) on the ``judge`` config, the sidecar's jailbreak-attempt
flag (when a selected metric reads it) then :func:`~monitor.evaluation.runner.evaluate_turn` per
turn. Command-line options override the config file; with no judge model/endpoint only the local
tier runs (said on stderr).

The file is read and validated completely before the first judge call, so a malformed row costs
nothing. Turns are evaluated by ``concurrency`` workers (see :func:`eval_concurrency`); a turn that
fails in an unexpected way becomes ``internal_error`` scores and the run goes on.
Results are written per input row, in input order, as soon as the row and every row before it
are complete (``--out``); the summary table goes to stdout, progress and notices to stderr.

Exit codes (mapped by the CLI): 0 done, 2 configuration/usage/data error, 3 ``--fail-under``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Collection, Iterator, Mapping, Protocol, Sequence, TextIO

import click
from pydantic import ValidationError

from monitor.config import MonitorConfig
from monitor.evaluation.content_safety.config import BACKEND as SERVICE_BACKEND
from monitor.errors import ConfigError
from monitor.offline.report import MetricSummary, fail_under_failures, parse_fail_under, render_table, row_record, summarise
from monitor.offline.rows import Dataset, EvalRow, read_dataset
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.conversation import aggregate_conversation
from monitor.evaluation.local.jailbreak_attempt import jailbreak_marker
from monitor.evaluation.registry import MetricConfigError, build_evaluators, default_registry
from monitor.evaluation.runner import INTERNAL_ERROR, InternalErrors, evaluate_turn
from monitor.evaluation.scoring import failed
from monitor.interfaces import Evaluator
from monitor.judge.config import JudgeConfig
from monitor.judge.telemetry import RecordingJudgeTelemetry
from monitor.model import Score, Turn
from monitor.redaction import REDACTIONS, Redactor
from monitor.telemetry import CountingTelemetry

__all__ = ["EvalRequest", "RowOutcome", "EXIT_FAIL_UNDER", "DEFAULT_CONCURRENCY", "open_out", "select_metrics",
           "judge_config", "eval_concurrency", "evaluate_rows", "progress_label", "run"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAIL_UNDER = 3

DEFAULT_CONCURRENCY = 64
"""Turns in flight when neither ``--concurrency`` nor the config's ``judge.max_concurrency`` says
otherwise. ``judge.max_concurrency``'s own default (4) is a long-running sidecar's share of a judge
it shares with the application; an offline run is a batch job that should finish at the judge's
pace (the peers default to 10-50 in flight). The judge's other limits still apply."""
# Metrics whose evaluator reads Turn.jailbreak_attempt (the judge's jailbreak metric reports it in
# its details); for any other set the detector's verdict would be computed and never read.
_READS_JAILBREAK_FLAG = frozenset({"jailbreak"})


@dataclass(frozen=True)
class EvalRequest:
    """The command's arguments; ``None`` means "as the config says"."""

    data: Path
    metrics: tuple[str, ...] | None = None
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_api_key_env: str | None = None
    concurrency: int | None = None
    out: Path | None = None
    fail_under: tuple[str, ...] = ()
    allow_missing: bool = False
    """Run what can run when a metric named in ``metrics`` cannot (no judge) instead of exit 2."""


@dataclass(frozen=True, slots=True)
class RowOutcome:
    """One input row with the scores of each of its turns (in turn order)."""

    row: EvalRow
    turn_scores: tuple[tuple[Score, ...], ...]


def _validation_message(option: str, exc: ValidationError) -> str:
    # A model-level error has no location: say the option once, not "--metrics: --metrics: ...".
    parts = [(f"{'.'.join(str(p) for p in e['loc'])}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
             for e in exc.errors()]
    return f"{option}: " + "; ".join(parts)


def select_metrics(config: EvaluationConfig, metrics: Sequence[str] | None) -> EvaluationConfig:
    """``config`` restricted to ``metrics`` (keeping their per-metric options from the config).
    Raises ConfigError naming an unknown id."""
    if metrics is None:
        return config
    if not metrics:
        raise ConfigError("--metrics: no metric id given")
    registry = default_registry()
    for metric in metrics:
        if metric not in registry:
            try:
                registry.get(metric)
            except MetricConfigError as exc:  # names the id, with a did-you-mean
                raise ConfigError(f"--metrics: {exc}") from None
    entries = {e.id: e for e in config.entries()}
    data = config.model_dump()
    data["metrics"] = [entries.get(m, m) for m in metrics]
    data["thresholds"] = {k: v for k, v in config.thresholds.items() if k in metrics}
    try:
        return EvaluationConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message("--metrics", exc)) from None


class JudgeOverrides(Protocol):
    """The judge options ``eval`` and ``compare`` share on the command line."""

    @property
    def judge_base_url(self) -> str | None: ...
    @property
    def judge_model(self) -> str | None: ...
    @property
    def judge_api_key_env(self) -> str | None: ...
    @property
    def concurrency(self) -> int | None: ...


def judge_config(base: JudgeConfig, request: JudgeOverrides, environ: Mapping[str, str]) -> JudgeConfig:
    """``base`` with the command-line overrides applied; raises ConfigError."""
    data = base.model_dump()
    if request.judge_base_url:
        data.update(base_url=request.judge_base_url, azure=None)
    if request.judge_model:
        data["model"] = request.judge_model
    if request.judge_api_key_env:
        key = environ.get(request.judge_api_key_env)
        if not key:
            raise ConfigError(f"--judge-api-key-env: environment variable {request.judge_api_key_env} is not set")
        data.update(api_key=key, api_key_file=None)
    if request.concurrency is not None:
        data["max_concurrency"] = request.concurrency
    try:
        return JudgeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message("judge", exc)) from None


def eval_concurrency(judge: JudgeConfig, requested: int | None) -> int:
    """Turns in flight for ``eval``, which is also the ceiling of its judge client's window:
    ``--concurrency`` when given; else ``judge.max_concurrency`` when the config sets it (a limit
    the operator chose for their judge, respected as is); else :data:`DEFAULT_CONCURRENCY`.

    Whatever the number, the judge client still enforces ``judge.requests_per_minute``,
    ``judge.tokens_per_minute`` and the client-wide 429 throttle, which halves the window on a
    rate-limited round and grows it back, so a ceiling above what the judge takes costs a few
    throttled rounds, not a failed run."""
    if requested is not None:
        return requested
    return judge.max_concurrency if "max_concurrency" in judge.model_fields_set else DEFAULT_CONCURRENCY


def _jailbreak_flagger(evaluators: Sequence[Evaluator]) -> Callable[[Turn], Turn] | None:
    """The function that sets ``Turn.jailbreak_attempt`` (the sidecar's own, sharing the memo of
    ``local_jailbreak_attempt`` when it runs), or None when no selected metric reads the flag."""
    if not any(m in _READS_JAILBREAK_FLAG for e in evaluators for m in e.metric_ids):
        return None
    return jailbreak_marker(evaluators)


async def _evaluate_one(turn: Turn, evaluators: Sequence[Evaluator], errors: InternalErrors,
                        flag: Callable[[Turn], Turn] | None) -> tuple[Score, ...]:
    try:
        return await evaluate_turn(flag(turn) if flag else turn, evaluators, errors)
    except Exception as exc:  # noqa: BLE001 - one turn's failure must not stop the run
        log.exception("turn %s: evaluation failed", turn.trace_id)
        return tuple(failed(m, (0.0, 1.0), INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
                     for e in evaluators for m in e.metric_ids)


async def evaluate_rows(rows: Sequence[EvalRow], evaluators: Sequence[Evaluator], concurrency: int, *,
                        on_turn: Callable[[], None] = lambda: None,
                        on_row: Callable[[RowOutcome], None] = lambda _: None) -> list[RowOutcome]:
    """Evaluate every turn of ``rows`` with at most ``concurrency`` turns in flight.

    ``on_turn`` is called after each turn; ``on_row`` in input order, for each row as soon as it
    and every row before it are done (so ``--out`` lines match the input lines one to one).
    Returns the outcomes in input order.
    """
    results: list[list[tuple[Score, ...]]] = [[() for _ in r.turns] for r in rows]
    remaining = [len(r.turns) for r in rows]
    done: list[RowOutcome | None] = [None] * len(rows)
    work = iter([(ri, ti) for ri, r in enumerate(rows) for ti in range(len(r.turns))])
    errors = InternalErrors()
    flag = _jailbreak_flagger(evaluators)
    next_out = 0

    def release() -> None:
        nonlocal next_out
        while next_out < len(rows) and done[next_out] is not None:
            on_row(done[next_out])  # type: ignore[arg-type]
            next_out += 1

    async def worker() -> None:
        for ri, ti in work:  # one shared iterator: each item is taken by exactly one worker
            results[ri][ti] = await _evaluate_one(rows[ri].turns[ti], evaluators, errors, flag)
            on_turn()
            remaining[ri] -= 1
            if remaining[ri] == 0:
                done[ri] = RowOutcome(rows[ri], tuple(results[ri]))
                release()

    workers = max(1, min(concurrency, sum(remaining)))
    async with asyncio.TaskGroup() as group:  # a failing on_row (disk full) stops the others
        for _ in range(workers):
            group.create_task(worker())
    return [o for o in done if o is not None]


def progress_label(turns: int, concurrency: int) -> str:
    """The progress line's label, sized to the work: never "64 at once" for 3 turns."""
    at_once = max(1, min(concurrency, turns))
    return f"evaluating {turns} turn{'s' if turns != 1 else ''}" + (f" ({at_once} at once)" if at_once > 1 else "")


def _record(outcome: RowOutcome) -> dict[str, object]:
    row = outcome.row
    turns = [(t.question, s) for t, s in zip(row.turns, outcome.turn_scores)]
    aggregate = aggregate_conversation(outcome.turn_scores) if row.kind == "conversation" else None
    return row_record(row.line, row.kind, row.row_id, turns, aggregate)


def _judge_notice(judge: JudgeConfig, metric_ids: Sequence[str]) -> str | None:
    """What stderr should say when the judge is off (None when it is on)."""
    if judge.enabled:
        return None
    registry = default_registry()
    off = [m for m in metric_ids if registry.get(m).tier == "judge"]
    notice = f"judge tier off (no judge {_judge_missing(judge)}): only the local tier runs"
    return notice + (f"; not run: {', '.join(off)} (give --judge-base-url and --judge-model, or judge: in -c)"
                     if off else "")


def _judge_missing(judge: JudgeConfig) -> str:
    return " and ".join(n for n, v in (("model", judge.effective_model), ("base_url", judge.base_url or judge.azure))
                        if not v)


def _check_requested(request: EvalRequest, judge: JudgeConfig, metric_ids: Sequence[str],
                     on_service: Collection[str]) -> None:
    """Metrics named in ``--metrics`` that cannot run are an error (exit 2) naming the fix, unless
    ``--allow-missing``; the default metric set runs what it can and says what is off."""
    if request.metrics is None or request.allow_missing or judge.enabled:
        return
    registry = default_registry()
    blocked = [m for m in metric_ids if registry.get(m).tier == "judge" and m not in on_service]
    if blocked:
        raise ConfigError(
            f"--metrics: {', '.join(blocked)} need{'s' if len(blocked) == 1 else ''} the judge, which is off "
            f"(no judge {_judge_missing(judge)}): give --judge-base-url URL --judge-model NAME (or a judge: "
            "section with -c), or add --allow-missing to run only the other metrics")


def _check_gate(limits: Mapping[str, float], metric_ids: Sequence[str], judge_on: bool) -> None:
    registry = default_registry()
    for metric in limits:
        if metric not in metric_ids:
            raise ConfigError(f"--fail-under {metric}: not among the evaluated metrics ({', '.join(metric_ids)})")
        if not judge_on and registry.get(metric).tier == "judge":
            raise ConfigError(f"--fail-under {metric}: the judge is off, so this metric does not run")


def service_metric_ids(config: EvaluationConfig) -> frozenset[str]:
    """The metrics ``config`` puts on Azure AI Content Safety (they need no LLM judge). Computed
    here rather than imported with the service's client, which loads the openai SDK (~0.5 s) that
    a run without a judge or the service never uses."""
    return frozenset(e.id for e in config.entries() if e.backend == SERVICE_BACKEND)


async def _run_async(dataset: Dataset, evaluation: EvaluationConfig, judge_cfg: JudgeConfig, concurrency: int,
                     out: TextIO | None, telemetry: RecordingJudgeTelemetry) -> list[RowOutcome]:
    # The clients load the openai SDK: imported only by a run that calls a judge or the service.
    judge = None
    if judge_cfg.enabled:
        from monitor.judge.client import JudgeClient

        judge = JudgeClient(judge_cfg, telemetry=telemetry)
    async with contextlib.AsyncExitStack() as stack:
        if judge is not None:
            await stack.enter_async_context(judge)
        service = None
        if evaluation.content_safety is not None and service_metric_ids(evaluation):
            from monitor.evaluation.content_safety.client import ContentSafetyClient

            service = await stack.enter_async_context(ContentSafetyClient(evaluation.content_safety, telemetry=telemetry))
        evaluators = build_evaluators(evaluation, judge, content_safety=service)
        if not evaluators:
            raise ConfigError("nothing to evaluate: every selected metric needs the judge")

        def write(outcome: RowOutcome) -> None:
            if out is not None:
                out.write(json.dumps(_record(outcome), ensure_ascii=False, default=str) + "\n")

        with click.progressbar(length=dataset.turn_count, label=progress_label(dataset.turn_count, concurrency), file=sys.stderr,
                               show_pos=True, show_eta=True) as bar:
            return await evaluate_rows(dataset.rows, evaluators, concurrency,
                                       on_turn=lambda: bar.update(1), on_row=write)
    raise AssertionError("unreachable")  # pragma: no cover - the stack re-raises


def _print_summary(dataset: Dataset, outcomes: Sequence[RowOutcome], metric_ids: Sequence[str],
                   judge_cfg: JudgeConfig, telemetry: RecordingJudgeTelemetry, elapsed: float) -> dict[str, MetricSummary]:
    kinds = [r.kind for r in dataset.rows]
    judge = f"{judge_cfg.effective_model} at {judge_cfg.base_url or 'Azure'}" if judge_cfg.enabled else "off"
    click.echo(f"{len(kinds)} rows ({kinds.count('qa')} question/answer, {kinds.count('conversation')} "
               f"conversations), {dataset.turn_count} turns in {elapsed:.1f}s; judge: {judge}")
    summaries = summarise((s for o in outcomes for s in o.turn_scores), metric_ids)
    click.echo(render_table(summaries))
    calls = telemetry.effective_outcomes()
    if judge_cfg.enabled:
        click.echo("judge calls: " + (", ".join(f"{k} {v}" for k, v in sorted(calls.items())) or "none"))
        click.echo("tokens of a shared judge call (combined_rubrics, tonic) count on its first metric")
    return summaries


def run(config: MonitorConfig, request: EvalRequest, environ: Mapping[str, str] | None = None) -> int:
    """Run the command; returns the exit code (0 or 3). Raises ConfigError or
    :class:`~monitor.offline.rows.DatasetError` (exit 2) before any judge call."""
    environ = os.environ if environ is None else environ
    limits = _parse_limits(request.fail_under)
    evaluation = select_metrics(config.evaluation, request.metrics)
    concurrency = eval_concurrency(config.judge, request.concurrency)
    judge_cfg = judge_config(config.judge, replace(request, concurrency=concurrency), environ)
    metric_ids = [e.id for e in evaluation.entries()]
    on_service = service_metric_ids(evaluation)  # scored by Azure AI Content Safety: no judge needed
    _check_requested(request, judge_cfg, metric_ids, on_service)
    _check_gate(limits, metric_ids, judge_cfg.enabled)
    dataset = _redacted(read_dataset(request.data), config)
    if dataset.ignored_keys:
        click.echo("columns that are not inputs, not read: "
                   + ", ".join(f"{k} ({n} rows)" for k, n in dataset.ignored_keys.items()), err=True)
    notice = _judge_notice(judge_cfg, [m for m in metric_ids if m not in on_service])
    if notice:
        click.echo(notice, err=True)
    if notice:
        registry = default_registry()
        metric_ids = [m for m in metric_ids if registry.get(m).tier != "judge" or m in on_service]
    telemetry = RecordingJudgeTelemetry()
    started = time.monotonic()
    with open_out(request.out) as out:
        outcomes = asyncio.run(_run_async(dataset, evaluation, judge_cfg, concurrency, out, telemetry))
    summaries = _print_summary(dataset, outcomes, metric_ids, judge_cfg, telemetry, time.monotonic() - started)
    failures = fail_under_failures(summaries, limits)
    for reason in failures:
        click.echo(f"fail-under: {reason}", err=True)
    return EXIT_FAIL_UNDER if failures else EXIT_OK


def _redacted(dataset: Dataset, config: MonitorConfig) -> Dataset:
    """``dataset`` with personal data replaced (``redaction`` config) before any judge call, so
    neither the judge nor ``--out`` sees it; what was replaced is said on stderr."""
    if not config.redaction.enabled:
        return dataset
    counts = CountingTelemetry()
    redactor = Redactor(config.redaction, counts)
    rows = tuple(replace(r, turns=tuple(redactor.redact_turn(t) for t in r.turns)) for r in dataset.rows)
    if redacted := counts.by_label(REDACTIONS, "kind"):
        click.echo("redacted: " + ", ".join(f"{k} {n:g}" for k, n in sorted(redacted.items())), err=True)
    return replace(dataset, rows=rows)


def _parse_limits(specs: Sequence[str]) -> dict[str, float]:
    try:
        return parse_fail_under(specs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@contextlib.contextmanager
def open_out(path: Path | None) -> Iterator[TextIO | None]:
    """``--out``'s file, opened before any work so that an unwritable path fails first (None: no file)."""
    if path is None:
        yield None
        return
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--out: cannot write {path}: {exc.strerror or exc}") from None
    with handle:
        yield handle
