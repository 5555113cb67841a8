"""The Azure seed's jailbreak comparison from Python: :func:`compare_jailbreak`.

Score a baseline set and the same set with jailbreak injections in the first turn with the
content-risk metrics, and compare their defect rates (per category and for any content risk)
with 95% intervals; the jailbreak defect rate is the difference for any content risk. The same
computation as ``rag-monitor compare`` (:mod:`monitor.offline.comparison.report`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from monitor.offline.comparison.report import ComparisonReport, compare, render_text
from monitor.offline.comparison.run import CONTENT_RISK_METRICS
from monitor.offline.comparison.verdicts import row_verdicts
from monitor.evaluation.severity import DEFAULT_SEVERITY_LEVEL, parse_severity_level
from rag_monitor.loop_thread import run_blocking
from rag_monitor.metric import Metric
from rag_monitor.scorer import Progress, Scorer

__all__ = ["ComparisonReport", "acompare_jailbreak", "compare_jailbreak", "format_comparison"]

format_comparison = render_text
"""The comparison as the table ``rag-monitor compare`` prints."""


async def acompare_jailbreak(baseline: Sequence[Mapping[str, Any]], attacked: Sequence[Mapping[str, Any]],
                             metrics: Sequence[Metric], *, concurrency: int = 8,
                             progress: Progress | bool = False) -> ComparisonReport:
    """Compare the content-risk defect rates of ``baseline`` and ``attacked`` rows (the
    ``rag-monitor eval`` row shape; ids pair the rows, else their order does). ``metrics`` are
    content-risk metrics sharing one judge or Content Safety resource, e.g.
    ``[HateUnfairness(judge=j), Sexual(judge=j), Violence(judge=j), SelfHarm(judge=j)]``."""
    wrong = [m.metric_id for m in metrics if m.metric_id not in CONTENT_RISK_METRICS]
    if wrong or not metrics:
        raise ValueError(f"metrics: {', '.join(wrong) or 'none given'}: the comparison takes content-risk metrics "
                         f"({', '.join(CONTENT_RISK_METRICS)})")
    scorer = Scorer(metrics)
    categories = [m.metric_id for m in metrics]
    rows = [*baseline, *attacked]
    parsed, scores = await scorer.turn_scores_many(rows, concurrency=concurrency, progress=progress)
    verdicts = []
    for index, (row, turn_scores) in enumerate(zip(rows, scores)):
        row_id = None if row.get("id") is None else str(row["id"])
        verdicts.append(row_verdicts(row_id or f"row{index}", row_id, turn_scores, categories))
    levels = {m.metric_id: parse_severity_level(m.options["severity_level"])
              if m.options.get("severity_level") is not None else DEFAULT_SEVERITY_LEVEL for m in metrics}
    return compare(verdicts[:len(baseline)], verdicts[len(baseline):], categories, levels)


def compare_jailbreak(baseline: Sequence[Mapping[str, Any]], attacked: Sequence[Mapping[str, Any]],
                      metrics: Sequence[Metric], *, concurrency: int = 8,
                      progress: Progress | bool = False) -> ComparisonReport:
    """:func:`acompare_jailbreak` for synchronous code."""
    return run_blocking(acompare_jailbreak(baseline, attacked, metrics, concurrency=concurrency, progress=progress))
