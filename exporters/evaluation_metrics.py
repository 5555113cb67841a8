"""Prometheus instruments fed by the evaluation pipeline: results, judge calls, sampling.

Each class adapts one of the pipeline's telemetry protocols (``ResultConsumer``,
``JudgeTelemetry``, ``SamplingTelemetry``) to the instruments declared in ``exporters.spec``.
"""

from __future__ import annotations

from typing import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from exporters.labels import LabelledResult, LabelPolicy
from exporters.spec import EVALUATION, JUDGE, SAMPLING, Instrument
from monitor.model import EvaluationResult, ScoreStatus
from monitor.telemetry import NullTelemetry, Telemetry

__all__ = ["PrometheusResults", "PrometheusJudgeTelemetry", "PrometheusSamplingTelemetry", "OUTCOMES"]

OUTCOMES = ("pass", "defect", "error", "skipped", "unscored_refused")
# Outcomes whose inverse-probability weight is summed: the verdicts, and the refusals, so the share
# of traffic that is "possibly harmful, not scored" is estimated like the defect rate beside it.
_WEIGHED = ("pass", "defect", "unscored_refused")


def _labelled(base: tuple[str, ...], policy_names: Sequence[str]) -> tuple[str, ...]:
    # metric, service, <allow-listed…>, then the rest of the base labels (outcome).
    assert base[:2] == ("metric", "service")
    return ("metric", *policy_names, *base[2:])


def _make(inst: Instrument, registry: CollectorRegistry,
          labels: tuple[str, ...] | None = None) -> Counter | Gauge | Histogram:
    labels = inst.labels if labels is None else labels
    if inst.kind == "counter":
        return Counter(inst.name.removesuffix("_total"), inst.help, labels, registry=registry)
    if inst.kind == "gauge":
        return Gauge(inst.name, inst.help, labels, registry=registry)
    return Histogram(inst.name, inst.help, labels, registry=registry, buckets=inst.buckets)


def _instruments(table: tuple[Instrument, ...], registry: CollectorRegistry) -> dict[str, object]:
    return {inst.name: _make(inst, registry) for inst in table}


class PrometheusResults:
    """``ResultConsumer``: counts outcomes and weights, observes scores with a trace exemplar.

    Labels are ``metric``, then the label policy's (``service`` and the allow-list, capped),
    then the judge's identity (``judge_model``, ``prompt_version``: empty for local metrics),
    then ``outcome`` on the counters.

    The first time a (metric, labels) combination is seen, every outcome's series is created at
    zero: ``increase()`` and ``rate()`` only count from a series' first scraped sample, so a
    series born at 1 would hide the first defect of a new route or metric from alerts.
    """

    def __init__(self, registry: CollectorRegistry, labels: LabelPolicy | None = None) -> None:
        self._policy = labels or LabelPolicy((), max_values=1000)
        names = self._policy.names
        m = {inst.name: _make(inst, registry, _labelled(inst.labels, names)) for inst in EVALUATION}
        self._count: Counter = m["rag_monitor_evaluations_total"]  # type: ignore[assignment]
        self._weight: Counter = m["rag_monitor_evaluation_weight_total"]  # type: ignore[assignment]
        self._score: Histogram = m["rag_monitor_score"]  # type: ignore[assignment]
        # Bounded by the label caps: metrics × capped label combinations, like the series themselves.
        self._known: set[tuple[str, ...]] = set()

    def _initialise(self, key: tuple[str, ...]) -> None:
        self._known.add(key)
        for outcome in OUTCOMES:
            self._count.labels(*key, outcome)
        for outcome in _WEIGHED:
            self._weight.labels(*key, outcome)
        self._score.labels(*key)

    def consume_result(self, result: EvaluationResult) -> None:
        self.consume_labelled(self._policy.label(result))

    def consume_labelled(self, item: LabelledResult) -> None:
        result, values = item.result, tuple(item.labels.values())
        exemplar = {"trace_id": result.turn.trace_id}
        for score in result.scores:
            key = (score.metric, *values, *self._policy.judge_values(score))
            if key not in self._known:
                self._initialise(key)
            outcome = score.outcome
            self._count.labels(*key, outcome).inc()
            if outcome in _WEIGHED:
                self._weight.labels(*key, outcome).inc(result.weight)
            if score.status == ScoreStatus.OK and score.value is not None:
                self._score.labels(*key).observe(score.value, exemplar=exemplar)


class PrometheusJudgeTelemetry:
    """``monitor.judge.telemetry.JudgeTelemetry`` on Prometheus instruments; ``add`` goes to the
    registry's self-telemetry counters (``counters``)."""

    def __init__(self, registry: CollectorRegistry, counters: Telemetry | None = None) -> None:
        self._counters = counters or NullTelemetry()
        m = _instruments(JUDGE, registry)
        self._calls: Counter = m["rag_monitor_judge_requests_total"]  # type: ignore[assignment]
        self._rejected: Counter = m["rag_monitor_judge_replies_rejected_total"]  # type: ignore[assignment]
        self._attempts: Counter = m["rag_monitor_judge_attempts_failed_total"]  # type: ignore[assignment]
        self._tokens: Counter = m["rag_monitor_judge_tokens_total"]  # type: ignore[assignment]
        self._duration: Histogram = m["rag_monitor_judge_request_duration_seconds"]  # type: ignore[assignment]
        self._circuit: Gauge = m["rag_monitor_judge_circuit_open"]  # type: ignore[assignment]
        self._shed: Counter = m["rag_monitor_judge_budget_shed_total"]  # type: ignore[assignment]
        self._waited: Counter = m["rag_monitor_judge_budget_wait_seconds_total"]  # type: ignore[assignment]

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        self._counters.add(counter, amount, **labels)

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        self._calls.labels(outcome).inc()
        self._duration.observe(duration_seconds)

    def reply_rejected(self, metric: str, outcome: str) -> None:
        # The call was counted 'ok' by the client; the parser's verdict is its own series so an
        # alert can add it to the error rate.
        self._rejected.labels(outcome).inc()

    def attempt_failed(self, metric: str, outcome: str) -> None:
        self._attempts.labels(outcome).inc()

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        self._tokens.labels(kind, metric, call).inc(count)

    def circuit_state(self, state: str) -> None:
        self._circuit.set({"open": 1.0, "half_open": 0.5}.get(state, 0.0))

    def budget_waited(self, limiter: str, seconds: float) -> None:
        self._waited.labels(limiter).inc(seconds)

    def budget_shed(self, limiter: str) -> None:
        self._shed.labels(limiter).inc()


class PrometheusSamplingTelemetry:
    """``samplers.telemetry.SamplingTelemetry`` on Prometheus instruments; ``add`` goes to the
    registry's self-telemetry counters (``counters``)."""

    def __init__(self, registry: CollectorRegistry, counters: Telemetry | None = None) -> None:
        self._counters = counters or NullTelemetry()
        m = _instruments(SAMPLING, registry)
        self._decisions: Counter = m["rag_monitor_sampling_decisions_total"]  # type: ignore[assignment]
        self._probability: Gauge = m["rag_monitor_sampling_probability"]  # type: ignore[assignment]
        self._evicted: Counter = m["rag_monitor_sampling_cache_evicted_total"]  # type: ignore[assignment]

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        self._counters.add(counter, amount, **labels)

    def decision(self, policy: str, outcome: str) -> None:
        self._decisions.labels(policy, outcome).inc()

    def probability(self, policy: str, value: float) -> None:
        self._probability.labels(policy).set(value)

    def cache_evicted(self, count: int) -> None:
        self._evicted.inc(count)
