"""Judge-vs-human agreement as numbers: the counters, the rate with its interval, the gauges.

Agreement means the person's verdict and the judge's score fall on the same side of the metric's
defect rule. Two views of it:

* ``rag_monitor_judge_agreement_total{metric, judge_model, agreement}`` counts each joined verdict
  once, on the replica that received it (sum it across replicas);
* the rate and its 95 % interval (``exporters.spec.AGREEMENT``) are computed from every stored
  joined verdict (the fleet's, with the PostgreSQL store), weighted by ``1 / p`` where ``p`` is the
  review queue's inclusion probability of the pair when known (a verdict the queue did not draw
  weighs 1), with Wilson's interval sized by the effective sample size
  (``monitor.calibration.agreement``). Every replica exports the same value: aggregate with max.

Labels are bounded: ``metric`` is a configured metric (unknown ones are refused before they get
here) and ``judge_model`` the configured judge model, ``local`` or a scoring service's name.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.spec import AGREEMENT
from monitor.calibration.agreement import Estimate, agreement
from monitor.telemetry import counter

__all__ = ["AGREEMENT_TOTAL", "HUMAN_VERDICTS", "HUMAN_VERDICTS_DROPPED", "ScoredPair", "AgreementFigure",
           "MetricAgreement", "AgreementSnapshot", "AgreementBoard", "AgreementCollector", "summarize",
           "snapshot_document"]

AGREEMENT_TOTAL = counter(
    "rag_monitor_judge_agreement_total",
    "People's verdicts joined with the judge's score of the same turn and metric, by whether both fall on the "
    "same side of the metric's defect rule (agreement: agree | disagree); counted once, by the replica that "
    "received the verdict.", "metric", "judge_model", "agreement")
HUMAN_VERDICTS = counter(
    "rag_monitor_human_verdicts_total",
    "People's verdicts received, by source (otlp | api) and state: joined (met the judge's score), pending "
    "(waiting for it), duplicate (the same reviewer's verdict on the turn and metric was there), invalid.",
    "source", "state")
HUMAN_VERDICTS_DROPPED = counter(
    "rag_monitor_human_verdicts_dropped_total",
    "People's verdicts that will never be counted in the agreement counter, by reason: expired (no judge score "
    "arrived within the pending TTL), pending_full (the bounded pending set was full), store_error (the result "
    "store refused the verdict).", "reason")


@dataclass(frozen=True, slots=True)
class ScoredPair:
    """One joined verdict: the two sides and the verdict's weight (1/p, or 1)."""

    metric: str
    judge_model: str
    judge: str  # pass | defect
    human: str  # pass | defect
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class AgreementFigure:
    """``n`` joined verdicts, ``agree`` of them agreeing (unweighted count), and the weighted
    ``rate`` with its 95 % interval (NaN when ``n`` is 0)."""

    n: int
    agree: int
    rate: float
    lower: float
    upper: float

    def document(self) -> dict[str, float | int | None]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)
        return {"n": self.n, "agree": self.agree, "rate": num(self.rate), "lower": num(self.lower),
                "upper": num(self.upper)}


@dataclass(frozen=True, slots=True)
class MetricAgreement:
    overall: AgreementFigure
    judge_models: Mapping[str, AgreementFigure] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgreementSnapshot:
    metrics: Mapping[str, MetricAgreement] = field(default_factory=dict)
    at: float = 0.0


def _figure(pairs: Sequence[ScoredPair]) -> AgreementFigure:
    est: Estimate = agreement([(p.judge, p.human) for p in pairs], [p.weight for p in pairs])
    return AgreementFigure(len(pairs), sum(p.judge == p.human for p in pairs), est.value, est.lower, est.upper)


def summarize(pairs: Iterable[ScoredPair], at: float | None = None) -> AgreementSnapshot:
    """Per metric, and per judge model within it."""
    by_metric: dict[str, list[ScoredPair]] = {}
    for p in pairs:
        by_metric.setdefault(p.metric, []).append(p)
    out: dict[str, MetricAgreement] = {}
    for metric, rows in sorted(by_metric.items()):
        models: dict[str, list[ScoredPair]] = {}
        for p in rows:
            models.setdefault(p.judge_model, []).append(p)
        out[metric] = MetricAgreement(_figure(rows), {m: _figure(r) for m, r in sorted(models.items())})
    return AgreementSnapshot(out, time.time() if at is None else at)


def snapshot_document(snapshot: AgreementSnapshot) -> dict[str, object]:
    """``GET /api/agreement``: ``{"metrics": {METRIC: {n, agree, rate, lower, upper, judge_models:
    {MODEL: {...}}}}, "at": unix s}``."""
    return {"metrics": {m: {**a.overall.document(),
                            "judge_models": {j: f.document() for j, f in a.judge_models.items()}}
                        for m, a in snapshot.metrics.items()},
            "at": snapshot.at}


class AgreementBoard:
    """The last snapshot, published whole by the join and read by scrapes and the API (a reference
    swap: readers on other threads never see half of one)."""

    def __init__(self) -> None:
        self._snapshot = AgreementSnapshot()

    def publish(self, snapshot: AgreementSnapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> AgreementSnapshot:
        return self._snapshot


class AgreementCollector(Collector):
    """The ``AGREEMENT`` gauges at scrape time, one series per (metric, judge model) with verdicts.
    Every family is yielded even when empty, so the OTLP bridge lists them from the start."""

    def __init__(self, board: AgreementBoard) -> None:
        self._board = board

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fams = {i.name: GaugeMetricFamily(i.name, i.help, labels=list(i.labels)) for i in AGREEMENT}
        for metric, entry in self._board.snapshot().metrics.items():
            for model, f in entry.judge_models.items():
                labels = [metric, model]
                fams["rag_monitor_judge_agreement_reviews"].add_metric(labels, float(f.n))
                if f.n:
                    fams["rag_monitor_judge_agreement_rate"].add_metric(labels, f.rate)
                    fams["rag_monitor_judge_agreement_rate_lower"].add_metric(labels, f.lower)
                    fams["rag_monitor_judge_agreement_rate_upper"].add_metric(labels, f.upper)
        return list(fams.values())
