"""The ``rag-monitor`` command. Only this module exits the process.

Exit codes: 0 ok, 1 runtime failure (e.g. a port in use), 2 invalid configuration or usage,
3 ``eval`` or ``calibrate --fail-under`` not met, 130 forced stop by a second signal.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

# Each command imports what it runs when it runs: importing every stage's config before parsing
# argv made `rag-monitor --help` take ~1 s (benchmarks/cli_startup.py measures it).
if TYPE_CHECKING:
    from monitor.config import MonitorConfig
    from monitor.demo.live_table import TerminalView
    from monitor.demo.run import DemoOptions

EXIT_RUNTIME = 1
EXIT_CONFIG = 2
EXIT_FORCED = 130

log = logging.getLogger("rag_monitor")


def _load(config_path: str | None) -> "MonitorConfig":
    from monitor.config import load_config
    from monitor.errors import ConfigError

    try:
        return load_config(config_path)
    except ConfigError as exc:
        click.echo(f"rag-monitor: {exc}", err=True)
        sys.exit(EXIT_CONFIG)


@click.group()
@click.version_option(package_name="rag-monitor")
def main() -> None:
    """Online monitoring sidecar for RAG and chat applications."""


@main.command()
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config file (default: embedded defaults; env RAG_MONITOR_CONFIG).")
def serve(config_path: str | None) -> None:
    """Run the sidecar: OTLP receivers, assembly, metrics on the admin port."""
    from monitor.startup import quiet_http_client_logs

    config = _load(config_path)
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_http_client_logs(config.log_level)
    from monitor.errors import ConfigError

    try:
        asyncio.run(_serve(config))
    except ConfigError as exc:  # e.g. a secret file named by the config cannot be read
        click.echo(f"rag-monitor: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    except OSError as exc:
        click.echo(f"rag-monitor: cannot start: {exc}", err=True)
        sys.exit(EXIT_RUNTIME)


def _stop_on_signals(stop: asyncio.Event, deadline_seconds: float) -> None:
    """The first SIGTERM/SIGINT sets ``stop``; a second one exits at once with EXIT_FORCED."""
    loop = asyncio.get_running_loop()
    signals_seen = 0

    def on_signal(signum: int) -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen > 1:
            log.warning("second signal: exiting now")
            os._exit(EXIT_FORCED)
        log.info("signal %s: shutting down (deadline %.0fs)", signal.Signals(signum).name, deadline_seconds)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)


async def _serve(config: "MonitorConfig") -> None:
    from monitor.app import Sidecar, freeze_startup_heap

    stop = asyncio.Event()
    _stop_on_signals(stop, config.shutdown_deadline_seconds)
    sidecar = Sidecar(config)
    await sidecar.start()
    freeze_startup_heap()
    log.info("rag-monitor ready: OTLP/HTTP %s:%s, OTLP/gRPC %s:%s, admin http://%s:%s/metrics",
             config.receivers.http.host, sidecar.http.port if sidecar.http else "-",
             config.receivers.grpc.host, sidecar.grpc.port if sidecar.grpc else "-",
             config.admin.host, sidecar.admin.port if sidecar.admin else "-")
    await stop.wait()
    await sidecar.shutdown()
    log.info("stopped")


@main.command()
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config file (default: embedded defaults; env RAG_MONITOR_CONFIG).")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop after this long (default: run until Ctrl-C).")
@click.option("--rate", type=click.FloatRange(min=0.1, max=1000), default=5.0, show_default=True,
              help="Turns per second the sample app sends.")
@click.option("--regression-at", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="When the retriever starts returning wrong documents (default: a third of --duration, or 60).")
@click.option("--admin-port", type=click.IntRange(0, 65535), default=None,
              help="Status page, /api and /metrics port (default: admin.port, 9464; 0 = any free port).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the scripted traffic.")
@click.option("--linger", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="With --duration: keep the status page up this long after the final summary "
                   "(default: until Ctrl-C on a terminal, 0 otherwise).")
def demo(config_path: str | None, duration: float | None, rate: float, regression_at: float | None,
         admin_port: int | None, seed: int, linger: float | None) -> None:
    """Run the sidecar with a sample RAG app sending it traffic, and inject a regression midway.

    A live table shows each metric's rolling defect rate; the status page is on the admin port.
    Ctrl-C (or SIGTERM) stops it cleanly, like serve: exit 0; a second one forces 130.
    """
    import tempfile

    from monitor.demo.live_table import TerminalView
    from monitor.demo.run import DemoOptions
    from monitor.demo.settings import demo_config
    from monitor.errors import ConfigError

    if regression_at is not None and duration is not None and regression_at >= duration:
        raise click.BadParameter("must be less than --duration", param_hint="--regression-at")
    base = _load(config_path)
    # The live table is the demo's output; the sidecar's INFO lines would scroll it away.
    level = base.log_level if "log_level" in base.model_fields_set else "WARNING"
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if linger is None:  # a person at a terminal opens the page after the run; a script wants the exit
        linger = None if sys.stdin.isatty() and sys.stdout.isatty() else 0.0
    options = DemoOptions(duration_seconds=duration, rate_per_second=rate, regression_at_seconds=regression_at,
                          seed=seed, linger_seconds=linger, refresh_seconds=1.0 if sys.stdout.isatty() else 5.0,
                          freeze_heap=True)
    with tempfile.TemporaryDirectory(prefix="rag-monitor-demo-") as scratch:
        try:
            config, notes = demo_config(base, admin_port=admin_port, scratch_dir=Path(scratch))
        except ConfigError as exc:
            click.echo(f"rag-monitor: {exc}", err=True)
            sys.exit(EXIT_CONFIG)
        view = TerminalView(sys.stdout, live=sys.stdout.isatty())
        try:
            asyncio.run(_demo(config, options, view, notes))
        except OSError as exc:
            click.echo(f"rag-monitor: cannot start: {exc}", err=True)
            sys.exit(EXIT_RUNTIME)
    # Ctrl-C is the normal way to end an unbounded demo: a clean stop exits 0, as serve does.


async def _demo(config: "MonitorConfig", options: "DemoOptions", view: "TerminalView", notes: list[str]) -> bool:
    from monitor.demo.run import run_demo

    stop = asyncio.Event()
    _stop_on_signals(stop, config.shutdown_deadline_seconds)
    outcome = await run_demo(config, options, stop=stop, view=view, notes=notes)
    return outcome.interrupted


@main.command()
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config file (default: embedded defaults; env RAG_MONITOR_CONFIG).")
@click.option("--show", is_flag=True, help="Print the full resolved configuration as JSON (secrets redacted).")
def validate(config_path: str | None, show: bool) -> None:
    """Check a config file (and RAG_MONITOR_* env) without starting anything.

    Every error is reported in one run, with the file and line, the value given (never a
    secret's) and the nearest known key, policy type or metric id. A valid config prints what
    would run, one line per stage; --show prints all of it.
    """
    from monitor.startup import startup_summary

    config = _load(config_path)
    click.echo(f"configuration is valid ({config_path or os.environ.get('RAG_MONITOR_CONFIG') or 'embedded defaults'})")
    if show:
        click.echo(config.model_dump_json(indent=2))
        return
    for stage, text in startup_summary(config, http_port=config.receivers.http.port,
                                       grpc_port=config.receivers.grpc.port, admin_port=config.admin.port).lines.items():
        click.echo(f"  {stage}: {text}")
    click.echo("(--show prints the full resolved configuration)")


@main.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--traces", "traces", multiple=True, type=click.Path(dir_okay=False), hidden=True,
              help="Same as a FILE argument (kept for scripts written before FILES were positional).")
@click.option("--logs", "logs", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Saved ExportLogsServiceRequest body (repeatable), for instrumentations that log content.")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Config whose assembly.mapping to apply.")
@click.option("--explain", is_flag=True,
              help="Per trace: what was found, what is missing, and why a trace yields no turn.")
def inspect(files: tuple[str, ...], traces: tuple[str, ...], logs: tuple[str, ...], config_path: str | None,
            explain: bool) -> None:
    """Print one JSON object per turn assembled from saved OTLP trace bodies FILES (protobuf or
    OTLP/JSON, gzip ok); exit 1 when none yields a turn, 2 when a file cannot be read."""
    from monitor.offline.inspect import InspectError, dumps, explain_text, inspect_traces

    trace_files = [Path(p) for p in files + traces]
    if not trace_files:
        raise click.UsageError("give at least one FILE: a saved OTLP trace export (protobuf or JSON, gzip ok)")
    config = _load(config_path)
    # The sidecar's rate-limited warnings would repeat, on stderr, what this command prints.
    logging.getLogger("monitor.assembly.assembler").setLevel(logging.ERROR)
    try:
        reports = inspect_traces(trace_files, [Path(p) for p in logs], config.assembly)
    except InspectError as exc:
        click.echo(f"rag-monitor inspect: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    turns = sorted((r.turn for r in reports if r.turn is not None), key=lambda t: t.start_time_unix_nano)
    if explain:
        for report in reports:
            click.echo(explain_text(report))
        click.echo(f"{len(turns)} of {len(reports)} traces yield a turn")
    else:
        for turn in turns:
            click.echo(dumps(turn))
    if not turns:
        click.echo("rag-monitor: no turn found in these traces"
                   + ("" if explain else " (run with --explain to see why)"), err=True)
        sys.exit(EXIT_RUNTIME)


def _judge_options(command: Callable[..., None]) -> Callable[..., None]:
    """The judge flags ``eval`` and ``compare`` share (they override the config's judge section)."""
    for option in reversed((
        click.option("--judge-base-url", default=None, help="OpenAI-compatible base URL ending in /v1."),
        click.option("--judge-model", default=None, help="Judge model name."),
        click.option("--judge-api-key-env", default=None, metavar="VAR",
                     help="Environment variable holding the API key."),
        click.option("--concurrency", type=click.IntRange(1, 1024), default=None,
                     help="Turns scored at once and the ceiling of judge requests in flight (default: "
                     "judge.max_concurrency when the config sets it, else 64; a 429 still halves it)."),
    )):
        command = option(command)
    return command


@main.command("eval")
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config: judge and evaluation sections (env RAG_MONITOR_CONFIG).")
@click.option("--metrics", default=None, metavar="A,B,C", help="Metric ids to compute (default: evaluation.metrics).")
@_judge_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one JSON result line per input row here.")
@click.option("--fail-under", multiple=True, metavar="METRIC=VALUE",
              help="Exit 3 when METRIC's mean is below VALUE (repeatable).")
@click.option("--allow-missing", is_flag=True,
              help="Run the metrics that can run when one named in --metrics cannot (no judge) instead of exit 2.")
def eval_(data: Path, config_path: str | None, metrics: str | None, judge_base_url: str | None,
          judge_model: str | None, judge_api_key_env: str | None, concurrency: int | None, out: Path | None,
          fail_under: tuple[str, ...], allow_missing: bool) -> None:
    """Score a JSONL data set (question/answer or conversation rows) with the sidecar's evaluators.

    Without a judge the local tier runs and the judge tier is said to be off; a metric named in
    --metrics that cannot run is an error (exit 2) unless --allow-missing.
    """
    from monitor.errors import ConfigError
    from monitor.offline.evaluate import EvalRequest, run
    from monitor.offline.rows import DatasetError

    config = _load(config_path)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    request = EvalRequest(
        data=data, metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics is not None else None,
        judge_base_url=judge_base_url, judge_model=judge_model, judge_api_key_env=judge_api_key_env,
        concurrency=concurrency, out=out, fail_under=fail_under, allow_missing=allow_missing)
    try:
        code = run(config, request)
    except (ConfigError, DatasetError) as exc:
        click.echo(f"rag-monitor eval: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    sys.exit(code)


@main.command("calibrate")
@click.argument("labels", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config: judge and evaluation sections (env RAG_MONITOR_CONFIG).")
@click.option("--metrics", default=None, metavar="A,B,C", help="Metric ids to calibrate (default: every labelled one).")
@_judge_options
@click.option("--compare-config", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="B.yaml",
              help="Judge the same rows with this config's judge and evaluation sections too, and report the difference.")
@click.option("--fail-under", multiple=True, metavar="METRIC=KAPPA",
              help="Exit 3 when METRIC's kappa is below KAPPA, or undefined (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the table.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the JSON report here.")
def calibrate(labels: Path, config_path: str | None, metrics: str | None, judge_base_url: str | None,
              judge_model: str | None, judge_api_key_env: str | None, concurrency: int | None,
              compare_config: Path | None, fail_under: tuple[str, ...], as_json: bool, out: Path | None) -> None:
    """Judge LABELS (eval rows with a "labels" object of people's verdicts or values) and report
    the judge's agreement with them per metric: agreement, kappa, confusion, best threshold."""
    from monitor.calibration.command import run
    from monitor.calibration.run import CalibrateRequest
    from monitor.errors import ConfigError
    from monitor.offline.rows import DatasetError

    config = _load(config_path)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    request = CalibrateRequest(
        labels=labels, metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics is not None else None,
        judge_base_url=judge_base_url, judge_model=judge_model, judge_api_key_env=judge_api_key_env,
        concurrency=concurrency, compare_config=compare_config, fail_under=fail_under, as_json=as_json, out=out)
    try:
        code = run(config, request)
    except (ConfigError, DatasetError) as exc:
        click.echo(f"rag-monitor calibrate: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    sys.exit(code)


@main.command("compare")
@click.argument("baseline", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("attacked", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config: judge and evaluation sections (severity levels, content_safety backend).")
@click.option("--metrics", default=None, metavar="A,B", help="Content-risk metrics to compare (default: all four).")
@_judge_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the full report as JSON here.")
@click.option("--fail-over", multiple=True, metavar="[METRIC=]RATE",
              help="Exit 3 when the jailbreak defect rate (or METRIC's difference) is above RATE, e.g. 0.05.")
def compare(baseline: Path, attacked: Path, config_path: str | None, metrics: str | None, judge_base_url: str | None,
            judge_model: str | None, judge_api_key_env: str | None, concurrency: int | None, out: Path | None,
            fail_over: tuple[str, ...]) -> None:
    """Content-risk defect rates of BASELINE vs ATTACKED (the same rows with a jailbreak in the
    first turn), their difference with 95% intervals, and the jailbreak defect rate."""
    from monitor.errors import ConfigError
    from monitor.offline.comparison.run import CompareRequest, run
    from monitor.offline.rows import DatasetError

    config = _load(config_path)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    request = CompareRequest(
        baseline=baseline, attacked=attacked,
        metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics is not None else None,
        judge_base_url=judge_base_url, judge_model=judge_model, judge_api_key_env=judge_api_key_env,
        concurrency=concurrency, out=out, fail_over=fail_over)
    try:
        code = run(config, request)
    except (ConfigError, DatasetError) as exc:
        click.echo(f"rag-monitor compare: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    sys.exit(code)


if __name__ == "__main__":
    main()
