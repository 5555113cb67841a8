"""The ``calibrate`` command's course: check the gate, judge, print, write, gate.

Exit codes (mapped by the CLI): 0 done, 2 configuration/usage/data error (raised before any
judge call), 3 a ``--fail-under`` kappa not met.
"""

from __future__ import annotations

import json
from typing import Mapping

import click

from monitor.calibration.labels import read_labelled
from monitor.calibration.report import render_table, report_json
from monitor.calibration.run import EXIT_FAIL_UNDER, CalibrateRequest, calibrate_files, chosen_metrics, kappa_gate
from monitor.config import MonitorConfig
from monitor.errors import ConfigError
from monitor.offline.evaluate import open_out
from monitor.offline.report import parse_fail_under

__all__ = ["run", "parse_kappa_limits"]


def parse_kappa_limits(specs: tuple[str, ...]) -> dict[str, float]:
    """``["groundedness=0.6"]`` → ``{"groundedness": 0.6}``; a kappa lies in [-1, 1]."""
    try:
        limits = parse_fail_under(specs)
    except ValueError as exc:
        raise ConfigError(str(exc).replace("groundedness=3.5", "groundedness=0.6 (a kappa)")) from None
    for metric, limit in limits.items():
        if not -1 <= limit <= 1:
            raise ConfigError(f"--fail-under {metric}={limit:g}: a kappa lies between -1 and 1")
    return limits


def run(config: MonitorConfig, request: CalibrateRequest, environ: Mapping[str, str] | None = None) -> int:
    """Run the command; returns the exit code (0 or 3). Raises ConfigError or DatasetError."""
    limits = parse_kappa_limits(request.fail_under)
    labelled = read_labelled(request.labels)
    metrics = chosen_metrics(labelled, request.metrics)
    for metric in limits:
        if metric not in metrics:
            raise ConfigError(f"--fail-under {metric}: not among the calibrated metrics ({', '.join(metrics)})")
    with open_out(request.out) as out:  # an unwritable --out fails before the judge is paid
        report = calibrate_files(config, request, environ, labelled)
        payload = report_json(report)
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False) if request.as_json else render_table(report))
        if out is not None:
            out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    failures = kappa_gate(report, limits)
    for reason in failures:
        click.echo(f"fail-under: {reason}", err=True)
    return EXIT_FAIL_UNDER if failures else 0
