"""What ``rag-monitor calibrate`` prints and writes: a readable table and the JSON report.

The JSON shape is a contract (scripts and CI read it)::

    {"rows": 120,
     "judge": {"model": "...", "served_model": "...", "base_url": "...",
               "prompt_version": {METRIC: "hash"}},
     "metrics": {METRIC: {"n": 118, "unscored": 2, "defect_rule": "defect when < 3",
                          "agreement": {"value", "lower", "upper"},
                          "kappa": {"value", "lower", "upper", "on": "value" | "verdict"},
                          "confusion": {"counts": {JUDGE_VERDICT: {HUMAN_VERDICT: rows}},
                                        "defect_recall": {...}, "defect_precision": {...},
                                        "pass_recall": {...}},
                          "best_threshold": {"threshold", "agreement": {...}, "current",
                                             "current_agreement": {...}} | null}},
     "compare": {"judge": {...}, "metrics": {METRIC: {...as above...}},
                 "difference": {METRIC: {"n", "agreement": {...}, "kappa": {...}}}}}

Intervals are 95 %; an undefined figure is null. ``compare`` is present with
``--compare-config``; its differences are the compared configuration minus the base one.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from monitor.calibration.agreement import Estimate
from monitor.calibration.run import CalibrationReport, ConfigComparison, JudgeIdentity, MetricCalibration

__all__ = ["report_json", "render_table"]


def _estimate(e: Estimate) -> dict[str, float | None]:
    return {k: v for k, v in e.as_dict().items() if k != "n"}


def _judge(identity: JudgeIdentity) -> dict[str, Any]:
    return {"model": identity.model, "served_model": identity.served_model, "base_url": identity.base_url,
            "prompt_version": dict(identity.prompt_versions)}


def _metric(m: MetricCalibration) -> dict[str, Any]:
    best = m.best_threshold
    return {
        "n": m.n,
        "unscored": m.unscored,
        "defect_rule": m.defect_rule,
        "agreement": _estimate(m.agreement),
        "kappa": {**_estimate(m.kappa), "on": m.kappa_on},
        "confusion": {"counts": {j: dict(row) for j, row in m.confusion.items()},
                      "defect_recall": _estimate(m.defect_recall),
                      "defect_precision": _estimate(m.defect_precision),
                      "pass_recall": _estimate(m.pass_recall)},
        "best_threshold": None if best is None else {
            "threshold": best.threshold, "agreement": _estimate(best.agreement),
            "current": best.current, "current_agreement": _estimate(best.current_agreement)},
    }


def _difference(d: ConfigComparison) -> dict[str, Any]:
    return {"n": d.n, "agreement": _estimate(d.agreement_difference), "kappa": _estimate(d.kappa_difference)}


def report_json(report: CalibrationReport) -> dict[str, Any]:
    """The report as the JSON contract above."""
    out: dict[str, Any] = {"rows": report.rows, "judge": _judge(report.judge),
                           "metrics": {k: _metric(m) for k, m in report.metrics.items()}}
    if report.compare_judge is not None and report.compare_metrics is not None and report.differences is not None:
        out["compare"] = {"judge": _judge(report.compare_judge),
                          "metrics": {k: _metric(m) for k, m in report.compare_metrics.items()},
                          "difference": {k: _difference(d) for k, d in report.differences.items()}}
    return out


def _num(x: float, signed: bool = False) -> str:
    if math.isnan(x):
        return "-"
    text = f"{x:+.3f}" if signed else f"{x:.3f}"
    return text.replace("-0.000", "0.000") if not signed else text.replace("-0.000", "+0.000")


def _with_interval(e: Estimate, signed: bool = False) -> str:
    if math.isnan(e.value):
        return "-"
    if math.isnan(e.lower):
        return _num(e.value, signed)
    return f"{_num(e.value, signed)} [{_num(e.lower, signed)}, {_num(e.upper, signed)}]"


def _counts(confusion: Mapping[str, Mapping[str, float]]) -> str:
    """``judge/human`` cells: dd = both defect, dp = judge defect, person pass, …"""
    cell = {(j, h): c for j, row in confusion.items() for h, c in row.items()}
    return " ".join(f"{j[0]}{h[0]}={cell.get((j, h), 0):g}" for j in ("defect", "pass") for h in ("defect", "pass"))


def _table(metrics: Mapping[str, MetricCalibration]) -> list[str]:
    header = ("metric", "n", "agreement [95% CI]", "kappa [95% CI]", "on", "judge/person", "best threshold")
    rows = [header]
    for m in metrics.values():
        best = m.best_threshold
        best_text = "-" if best is None else (
            f"{best.threshold:g} ({_num(best.agreement.value)}; now {best.current:g}: {_num(best.current_agreement.value)})")
        rows.append((m.metric, str(m.n) + (f" (+{m.unscored} unscored)" if m.unscored else ""),
                     _with_interval(m.agreement), _with_interval(m.kappa), m.kappa_on, _counts(m.confusion), best_text))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _identity(identity: JudgeIdentity) -> str:
    versions = ", ".join(f"{m} {v}" for m, v in identity.prompt_versions.items()) or "no judge prompt"
    served = f" (replies from {identity.served_model})" if identity.served_model not in (None, identity.model) else ""
    return f"{identity.model or 'no judge'}{served} at {identity.base_url or '-'}; prompt versions: {versions}"


def render_table(report: CalibrationReport) -> str:
    """The readable report: one line per metric, then the comparison when there is one."""
    lines = [f"{report.rows} labelled rows; judge: {_identity(report.judge)}", *_table(report.metrics),
             "judge/person: dd = both say defect, dp = judge defect, person pass, pd = judge pass, person "
             "defect, pp = both pass"]
    if report.compare_judge is not None and report.compare_metrics is not None and report.differences is not None:
        lines += ["", f"compared judge: {_identity(report.compare_judge)}", *_table(report.compare_metrics), "",
                  "difference (compared − base, same rows) [95% CI]:"]
        for d in report.differences.values():
            lines.append(f"  {d.metric}: n {d.n}, agreement {_with_interval(d.agreement_difference, True)}, "
                         f"kappa {_with_interval(d.kappa_difference, True)}")
    return "\n".join(lines)
