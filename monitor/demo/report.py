"""The demo's machine-readable final summary, printed as one ``FINAL-SUMMARY-JSON {...}`` line.

``metrics.<id>.windows.<window>`` uses the field names of ``/api/summary`` so the two can be
compared number for number; ``metrics.<id>.phases`` adds the demo's own before/after-regression
counts, which the rolling windows cannot show. Rates and means are ``null`` when nothing was
scored, never ``0`` or NaN.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from exporters.rolling import WindowStats
from monitor.admin.api import window_document
from monitor.demo.phases import PhaseStats
from monitor.demo.traffic import TrafficStats

__all__ = ["FINAL_PREFIX", "RunFacts", "window_json", "phase_json", "final_document", "final_line"]

FINAL_PREFIX = "FINAL-SUMMARY-JSON "


@dataclass(frozen=True, slots=True)
class RunFacts:
    elapsed_seconds: float
    interrupted: bool
    regression_at_seconds: float | None
    regression_started_at: float | None  # unix seconds
    turns_evaluated: int
    turns_not_evaluated: int  # still outstanding when the drain deadline passed
    admin_url: str
    otlp_http_endpoint: str


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def window_json(stats: WindowStats) -> dict[str, Any]:
    """The window as ``/api/summary`` shows it: the API's own function, so the numbers compare."""
    return window_document(stats)


def phase_json(stats: PhaseStats) -> dict[str, Any]:
    return {"evaluations": stats.evaluations, "defects": stats.defects, "errors": stats.errors,
            "skipped": stats.skipped, "defect_rate": _finite(stats.defect_rate), "mean": _finite(stats.mean)}


def final_document(facts: RunFacts, windows: Sequence[tuple[str, float]],
                   summary: Mapping[str, Mapping[str, WindowStats]],
                   phases: Mapping[str, Mapping[str, PhaseStats]], traffic: TrafficStats | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for metric in sorted(set(summary) | set(phases)):
        metrics[metric] = {
            "windows": {name: window_json(stats) for name, stats in summary.get(metric, {}).items()},
            "phases": {phase: phase_json(stats) for phase, stats in phases.get(metric, {}).items()},
        }
    document: dict[str, Any] = {
        "elapsed_seconds": round(facts.elapsed_seconds, 3),
        "interrupted": facts.interrupted,
        "admin_url": facts.admin_url,
        "otlp_http_endpoint": facts.otlp_http_endpoint,
        "regression_at_seconds": facts.regression_at_seconds,
        "regression_started_at": facts.regression_started_at,
        "turns_evaluated": facts.turns_evaluated,
        "turns_not_evaluated": facts.turns_not_evaluated,
        "windows": [{"name": name, "seconds": seconds} for name, seconds in windows],
        "metrics": metrics,
    }
    if traffic is not None:
        document["traffic"] = {
            "turns": traffic.turns, "conversations": traffic.conversations,
            "turns_before_regression": traffic.turns_before_regression,
            "turns_after_regression": traffic.turns_after_regression,
            "variants": dict(sorted(traffic.variants.items())), "jailbreak_attempts": traffic.jailbreak_attempts,
            "with_reference": traffic.with_reference, "spans_flushed": traffic.flushed,
        }
    return document


def final_line(document: Mapping[str, Any]) -> str:
    # allow_nan=False: a NaN that slipped through fails here rather than printing invalid JSON.
    return FINAL_PREFIX + json.dumps(document, allow_nan=False, separators=(",", ":"), sort_keys=False)
