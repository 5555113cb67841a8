"""What ``rag-monitor eval`` reports: per-metric summary, the summary table, JSONL records,
and the ``--fail-under`` gate.

Every figure counts turns (a conversation row contributes one observation per assistant turn).
Only ``ok`` scores count towards ``n``, the mean and the defect rate; ``error`` and ``skipped``
scores are counted apart and never become numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from exporters.stats import wilson_interval
from monitor.evaluation.conversation import MetricAggregate
from monitor.model import Score, ScoreStatus

__all__ = [
    "MetricSummary",
    "summarise",
    "render_table",
    "row_record",
    "parse_fail_under",
    "fail_under_failures",
]


@dataclass
class MetricSummary:
    """One metric over every evaluated turn."""

    metric: str
    n: int = 0
    total: float = 0.0
    defects: int = 0
    errors: int = 0
    skipped: int = 0
    refused: int = 0
    """The judge refused or its provider's content filter blocked the call (``unscored_refused``):
    possibly harmful text, neither an error nor a skip."""
    error_types: Counter[str] = field(default_factory=Counter)
    skip_causes: Counter[str] = field(default_factory=Counter)
    """Why turns got no score (the evaluator's reason), with how many."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def defect_rate(self) -> float | None:
        return self.defects / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of the defect rate; (nan, nan) without an ``ok`` score."""
        return wilson_interval(self.defects, self.n)

    def add(self, score: Score) -> None:
        """Count one score."""
        self.prompt_tokens += score.usage.prompt_tokens
        self.completion_tokens += score.usage.completion_tokens
        if score.status == ScoreStatus.OK and score.value is not None:
            self.n += 1
            self.total += score.value
            self.defects += bool(score.defect)
        elif score.status == ScoreStatus.ERROR:
            self.errors += 1
            self.error_types[score.error_type or "unknown"] += 1
        elif score.status == ScoreStatus.REFUSED:
            self.refused += 1
        else:
            self.skipped += 1
            self.skip_causes[_cause(score.reason)] += 1


def _cause(reason: str | None, limit: int = 120) -> str:
    text = " ".join((reason or "no reason given").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarise(turn_scores: Iterable[Sequence[Score]], metric_order: Sequence[str] = ()) -> dict[str, MetricSummary]:
    """Per-metric summaries, ``metric_order`` first, then metrics in the order first seen."""
    summaries = {m: MetricSummary(m) for m in metric_order}
    for scores in turn_scores:
        for score in scores:
            summaries.setdefault(score.metric, MetricSummary(score.metric)).add(score)
    return summaries


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


_HEADER = ("metric", "n", "mean", "defect rate", "95% CI", "errors", "skipped", "prompt tok", "compl. tok")


def render_table(summaries: Mapping[str, MetricSummary]) -> str:
    """The summary as an aligned text table, plus a line per metric that had errors and per cause
    of its skips (so "skipped 3" always says why)."""
    rows = [_HEADER]
    for s in summaries.values():
        low, high = s.interval
        ci = "-" if math.isnan(low) else f"[{low:.3f}, {high:.3f}]"
        rows.append((s.metric, str(s.n), _num(s.mean), _num(s.defect_rate), ci, str(s.errors), str(s.skipped),
                     str(s.prompt_tokens), str(s.completion_tokens)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for s in summaries.values():
        if s.error_types:
            kinds = ", ".join(f"{kind} {count}" for kind, count in s.error_types.most_common())
            lines.append(f"errors in {s.metric}: {kinds}")
    for s in summaries.values():
        if s.refused:
            lines.append(f"refused in {s.metric}: {s.refused} (the judge refused or a content filter blocked the "
                         "call: possibly harmful, not scored)")
        for cause, count in s.skip_causes.most_common(3):
            lines.append(f"skipped in {s.metric}: {count} × {cause}")
        if len(s.skip_causes) > 3:
            lines.append(f"skipped in {s.metric}: {sum(s.skip_causes.values()) - sum(n for _, n in s.skip_causes.most_common(3))}"
                         " × other causes (see --out)")
    return "\n".join(lines)


def _aggregate_record(agg: MetricAggregate) -> dict[str, Any]:
    return {"method": agg.method, "value": agg.value, "turn_values": list(agg.turn_values),
            "ok": agg.ok, "errors": agg.errors, "skipped": agg.skipped}


def row_record(line: int, kind: str, row_id: str | None, turns: Sequence[tuple[str, Sequence[Score]]],
               aggregate: Mapping[str, MetricAggregate] | None = None) -> dict[str, Any]:
    """The output line of one input row: its turns' scores (and a conversation's aggregates)."""
    record: dict[str, Any] = {"line": line, "kind": kind, "id": row_id}
    if kind == "qa":
        record["scores"] = [s.to_record() for s in turns[0][1]]
    else:
        record["turns"] = [{"turn": i, "question": q, "scores": [s.to_record() for s in scores]}
                           for i, (q, scores) in enumerate(turns)]
        record["aggregate"] = {m: _aggregate_record(a) for m, a in (aggregate or {}).items()}
    return record


def parse_fail_under(specs: Sequence[str]) -> dict[str, float]:
    """``["groundedness=3.5", ...]`` → ``{"groundedness": 3.5}``; raises ValueError naming the bad one."""
    result: dict[str, float] = {}
    for spec in specs:
        metric, sep, raw = spec.partition("=")
        metric = metric.strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or not metric or not math.isfinite(value):
            raise ValueError(f"--fail-under {spec!r}: expected METRIC=NUMBER, e.g. groundedness=3.5")
        if metric in result:
            raise ValueError(f"--fail-under: {metric} is given twice")
        result[metric] = value
    return result


def fail_under_failures(summaries: Mapping[str, MetricSummary], limits: Mapping[str, float]) -> list[str]:
    """Why the run fails the gate: a metric whose mean is below its limit, or that has no value
    at all (a gate that passes on no data would hide a broken judge)."""
    reasons = []
    for metric, limit in limits.items():
        s = summaries.get(metric)
        if s is None or s.mean is None:
            errors = s.errors if s else 0
            reasons.append(f"{metric}: no scored turn to compare with {limit:g} ({errors} errors)")
        elif s.mean < limit:
            reasons.append(f"{metric}: mean {s.mean:.3f} is below {limit:g} (n={s.n})")
    return reasons
