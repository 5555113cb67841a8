"""What the judge client counts, as a protocol the exporter layer adapts.

The client reports through :class:`JudgeTelemetry`; the Prometheus/OTLP exporters implement it
later (this module imports neither). Counting rules:

* ``call_finished`` — once per :meth:`Judge.complete_json` call with its final outcome (one of
  ``JUDGE_OUTCOMES``; ``refused`` for a refusal or a content filter, which is not an error) and
  its wall time including retries and waits. This feeds
  ``rag_monitor_judge_requests_total{outcome}`` and ``…_request_duration_seconds``.
* ``reply_rejected`` — no longer reported: the client validates each reply against its
  declaration before it counts the call, so ``call_finished`` already carries ``parse_error`` /
  ``out_of_range`` and ``ok`` means the reply's values were used. Kept in the protocol (and
  ``rag_monitor_judge_replies_rejected_total`` stays at 0) for one release so dashboards that add
  it keep working.
* ``attempt_failed`` — one HTTP attempt failed and will be retried (or gave up); kept apart so
  retries are visible without inflating the per-call counter.
* ``tokens`` — prompt/completion tokens per metric and per kind of call, from the server's usage
  (estimated when the server sends none). ``call`` is one of :data:`TOKEN_CALLS`: ``single`` (a
  call for one metric), ``combined_rubrics`` (the quality rubrics of
  ``evaluation.combine_metrics``), ``safety`` (the four severities, judged together in their own
  call under ``combine_metrics``), ``tonic`` (the Tonic metric set of a turn) or
  ``rate_limit_probe`` (the storm probe, ``metric`` empty). A shared call reports its tokens split
  evenly across the metrics it answers for (remainders to the first), so ``metric`` is always a
  real metric id and the per-metric series sum to what the call cost.
* ``circuit_state`` — on every breaker transition (``closed`` | ``open`` | ``half_open``).
* ``budget_waited`` / ``budget_shed`` — per limiter (``requests`` | ``tokens`` | ``concurrency`` |
  ``rate_limit``: the client-wide 429 pause, or a congestion window it shrank).
* ``add`` — any other counter, declared beside the code that counts it
  (``monitor.telemetry.counter``): a new judge counter needs no change here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from monitor.telemetry import CountingTelemetry, Instrument, NullTelemetry, Telemetry

__all__ = ["TOKEN_CALLS", "JudgeTelemetry", "NullJudgeTelemetry", "RecordingJudgeTelemetry", "TeeJudgeTelemetry"]

TOKEN_CALLS = ("single", "combined_rubrics", "safety", "tonic", "rate_limit_probe")
"""Values of the ``call`` label of ``rag_monitor_judge_tokens_total``."""


class JudgeTelemetry(Telemetry, Protocol):
    """Sink for the judge client's self-telemetry. Calls are synchronous and must not block."""

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        """One ``complete_json`` call ended with ``outcome``."""
        ...

    def reply_rejected(self, metric: str, outcome: str) -> None:
        """The metric parser rejected an ``ok`` reply as ``parse_error``/``out_of_range``."""
        ...

    def attempt_failed(self, metric: str, outcome: str) -> None:
        """One HTTP attempt failed with ``outcome``."""
        ...

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        """``count`` tokens of ``kind`` (``prompt`` | ``completion``) were spent for ``metric`` in
        a call of kind ``call`` (one of :data:`TOKEN_CALLS`)."""
        ...

    def circuit_state(self, state: str) -> None:
        """The circuit breaker moved to ``state``."""
        ...

    def budget_waited(self, limiter: str, seconds: float) -> None:
        """A call waited ``seconds`` for ``limiter`` before it could go."""
        ...

    def budget_shed(self, limiter: str) -> None:
        """A call was refused because ``limiter`` had no room within the allowed wait."""
        ...


class NullJudgeTelemetry(NullTelemetry):
    """Discards everything (the default when nothing is wired)."""

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        """Discard."""

    def reply_rejected(self, metric: str, outcome: str) -> None:
        """Discard."""

    def attempt_failed(self, metric: str, outcome: str) -> None:
        """Discard."""

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        """Discard."""

    def circuit_state(self, state: str) -> None:
        """Discard."""

    def budget_waited(self, limiter: str, seconds: float) -> None:
        """Discard."""

    def budget_shed(self, limiter: str) -> None:
        """Discard."""


@dataclass
class RecordingJudgeTelemetry:
    """Keeps every report in memory, for tests and the offline ``eval`` summary."""

    outcomes: Counter[str] = field(default_factory=Counter)
    outcomes_by_metric: Counter[tuple[str, str]] = field(default_factory=Counter)
    rejected: Counter[tuple[str, str]] = field(default_factory=Counter)
    attempt_failures: Counter[str] = field(default_factory=Counter)
    token_counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    call_tokens: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(call, metric, kind) → tokens."""
    durations: list[float] = field(default_factory=list)
    circuit_states: list[str] = field(default_factory=list)
    waits: list[tuple[str, float]] = field(default_factory=list)
    sheds: Counter[str] = field(default_factory=Counter)
    counters: CountingTelemetry = field(default_factory=CountingTelemetry)
    """What was counted through ``add``."""

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        """Count it (label names checked against the counter's)."""
        self.counters.add(counter, amount, **labels)

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        """Record the outcome and duration."""
        self.outcomes[outcome] += 1
        self.outcomes_by_metric[(metric, outcome)] += 1
        self.durations.append(duration_seconds)

    def reply_rejected(self, metric: str, outcome: str) -> None:
        """Record the rejection."""
        self.rejected[(metric, outcome)] += 1

    def attempt_failed(self, metric: str, outcome: str) -> None:
        """Record the failed attempt."""
        self.attempt_failures[outcome] += 1

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        """Add the tokens."""
        self.token_counts[(metric, kind)] += count
        self.call_tokens[(call, metric, kind)] += count

    def circuit_state(self, state: str) -> None:
        """Record the transition."""
        self.circuit_states.append(state)

    def budget_waited(self, limiter: str, seconds: float) -> None:
        """Record the wait."""
        self.waits.append((limiter, seconds))

    def budget_shed(self, limiter: str) -> None:
        """Record the shed."""
        self.sheds[limiter] += 1

    def effective_outcomes(self) -> Counter[str]:
        """One outcome per call: ``ok`` replies the parser rejected count under their outcome."""
        result = Counter(self.outcomes)
        for (_, outcome), n in self.rejected.items():
            result["ok"] -= n
            result[outcome] += n
        return +result


class TeeJudgeTelemetry:
    """Reports to several sinks (Prometheus and OTLP): the judge client takes one."""

    def __init__(self, *sinks: JudgeTelemetry) -> None:
        self._sinks = sinks

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        for s in self._sinks:
            s.add(counter, amount, **labels)

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        for s in self._sinks:
            s.call_finished(metric, outcome, duration_seconds)

    def reply_rejected(self, metric: str, outcome: str) -> None:
        for s in self._sinks:
            s.reply_rejected(metric, outcome)

    def attempt_failed(self, metric: str, outcome: str) -> None:
        for s in self._sinks:
            s.attempt_failed(metric, outcome)

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        for s in self._sinks:
            s.tokens(metric, kind, count, call)

    def circuit_state(self, state: str) -> None:
        for s in self._sinks:
            s.circuit_state(state)

    def budget_waited(self, limiter: str, seconds: float) -> None:
        for s in self._sinks:
            s.budget_waited(limiter, seconds)

    def budget_shed(self, limiter: str) -> None:
        for s in self._sinks:
            s.budget_shed(limiter)
